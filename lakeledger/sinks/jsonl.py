"""A JSON-lines file: one envelope per line, in log order."""

from pathlib import Path
from typing import IO, Any

from lakeledger.sinks.envelope import to_json


class JsonLinesSink:
    def __init__(self, path: Path):
        self.path = path
        self._file: IO[bytes] | None = None

    def __enter__(self) -> "JsonLinesSink":
        self._file = open(self.path, "ab")
        return self

    def write(self, batch: list[dict[str, Any]]) -> None:
        assert self._file is not None, "write inside the with block"
        self._file.write(b"".join(to_json(e) + b"\n" for e in batch))
        self._file.flush()

    def __exit__(self, *exc: object) -> None:
        assert self._file is not None
        self._file.close()
