"""A PySpark 4 session that runs SQL sent over its stdin, for tests/e2e/conftest.py's ``spark4`` fixture.

The tests' own interpreter has PySpark 3.5, and one process holds one PySpark: this runs in the interpreter of `make
spark4-deps` (.cache/spark4, PyPI's pyspark 4.0.1) for the whole pytest session. Stdlib and PySpark only.

argv[1]: a JSON object of Spark settings. Then one JSON line in per statement, ``{"sql": "..."}``, and one JSON line
out: ``{"rows": [[...], ...]}`` (each value as Spark's Python API gives it, anything that is not JSON as its text)
or ``{"error": "<the exception's class and message>"}``. The first line out, ``{"ready": "<Spark version>"}``, says
the session is up. A script that needs more than SQL (tests/e2e/spark4_planning.py) runs ``main`` with handlers of
its own: a line ``{"<name>": argument}`` is answered ``{"rows": handler(session, argument)}``."""

import json
import sys
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession


def _value(value: object) -> object:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    return str(value)


Handler = Callable[[SparkSession, Any], list[list[Any]]]


def main(handlers: dict[str, Handler] | None = None) -> None:
    commands: dict[str, Handler] = {"sql": lambda session, sql: [list(row) for row in session.sql(sql).collect()],
                                    **(handlers or {})}
    builder = SparkSession.builder.master("local[2]").appName("lakeledger-e2e-spark4")
    for key, setting in json.loads(sys.argv[1]).items():
        builder = builder.config(key, setting)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    print(json.dumps({"ready": session.version}), flush=True)
    for line in sys.stdin:
        try:
            [(name, argument)] = json.loads(line).items()
            rows = commands[name](session, argument)
            answer: dict[str, object] = {"rows": [[_value(v) for v in row] for row in rows]}
        except Exception as e:  # noqa: BLE001 (every failure is the test's to judge)
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)
    session.stop()


if __name__ == "__main__":
    main()
