"""LAKELEDGER__LOG_FORMAT=json (lakeledger/operations/logs.py): one JSON object per record, a request's fields at the
top."""

import json
import logging

from lakeledger.operations.logs import JsonLines


def _record(**extra) -> logging.LogRecord:
    record = logging.LogRecord("lakeledger.requests", logging.INFO, __file__, 1, "request %s", ("x",), None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_a_plain_record():
    line = json.loads(JsonLines().format(_record()))
    assert line["level"] == "info" and line["logger"] == "lakeledger.requests" and line["message"] == "request x"
    assert line["time"].endswith("+00:00")


def test_a_request_line_carries_its_fields():
    fields = {"method": "GET", "route": "/catalog/v1/config", "status": 200, "duration_ms": 1.5,
              "request_id": "r-1", "actor": "oidc~bob"}
    line = json.loads(JsonLines().format(_record(request=fields)))
    assert {k: line[k] for k in fields} == fields


def test_an_exception_is_one_line():
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = _record()
        record.exc_info = sys.exc_info()
    text = JsonLines().format(record)
    assert "\n" not in text and "ValueError: boom" in json.loads(text)["exception"]
