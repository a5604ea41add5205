"""The metadata file cache is bounded by the memory it holds as well as by count: the least recently used files
go first, a file read back after eviction is the same, and what it holds is accounted as files are parsed and
answers rendered."""

import sys
import threading
from uuid import uuid4

from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lakeledger.domain import table_metadata as tm
from lakeledger.domain.storage_profile import FileStorageProfile
from lakeledger.services.metadata_files import PARSED_WEIGHT, MetadataFiles, load_result_body
from lakeledger.storage.file import FileStorage

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True))


def _write(files: MetadataFiles, storage: FileStorage, root, n: int) -> tuple[str, bytes]:
    metadata = tm.new_metadata(SCHEMA, None, None, f"file://{root}/t{n}", {"pad": "x" * 20_000}, uuid4())
    location = f"file://{root}/t{n}/metadata/00000-{uuid4()}.metadata.json"
    return location, files.write(location, metadata, storage)


def test_evicts_least_recently_used_by_bytes(tmp_path):
    storage = FileStorage(FileStorageProfile(location=f"file://{tmp_path}"))
    size = len(_write(MetadataFiles(), storage, tmp_path, 0)[1])
    per_entry = size * (1 + PARSED_WEIGHT)  # written files are cached parsed
    files = MetadataFiles(capacity=1000, max_bytes=int(per_entry * 3.5))
    written = [_write(files, storage, tmp_path, n) for n in range(1, 6)]
    assert files.bytes_held <= per_entry * 3.5
    assert [files.response_body(loc) is not None for loc, _ in written] == [False, False, True, True, True]

    # touching the oldest cached one keeps it over the next newcomer; the next oldest goes instead
    assert files.response_body(written[2][0]) is not None
    _write(files, storage, tmp_path, 6)
    assert files.response_body(written[2][0]) is not None
    assert files.response_body(written[3][0]) is None

    # an evicted file is read again from storage, byte for byte
    assert files.data(written[0][0], storage) == written[0][1]
    assert files.bytes_held <= per_entry * 3.5


def test_parsing_and_rendering_count_towards_the_bound(tmp_path):
    storage = FileStorage(FileStorageProfile(location=f"file://{tmp_path}"))
    location, data = _write(MetadataFiles(), storage, tmp_path, 0)
    files = MetadataFiles()
    files.data(location, storage)
    assert files.bytes_held == len(data)
    files.parsed(location, storage)
    assert files.bytes_held == len(data) * (1 + PARSED_WEIGHT)
    body = files.response_body(location)
    assert files.bytes_held == len(data) * (1 + PARSED_WEIGHT) + len(body)
    files.forget(location)
    assert files.bytes_held == 0


def test_a_load_answers_the_file_it_read_even_when_another_load_evicts_it_meanwhile(tmp_path):
    """``load_response_body`` renders from the entry it read, not from a second look into the cache: with room for
    one file, two threads loading two files evict each other's between the read and the rendering. The interpreter
    is made to switch threads as often as it can, so that such a switch is all but certain to land there."""
    storage = FileStorage(FileStorageProfile(location=f"file://{tmp_path}"))
    written = dict(_write(MetadataFiles(), storage, tmp_path, n) for n in range(2))
    expected = {location: load_result_body(location, data) for location, data in written.items()}
    files = MetadataFiles(capacity=1)
    wrong: list[tuple[str, bytes | None]] = []

    def load(location: str) -> None:
        for _ in range(10_000):
            body = files.load_response_body(location, storage)
            if body != expected[location]:
                wrong.append((location, body))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=load, args=(location,)) for location in written]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert wrong == []
