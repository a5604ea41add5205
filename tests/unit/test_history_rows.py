"""The history's row values that a rebuild writes its own way (projections/history.py, copy_rows.py) mean what the
standard library and psycopg would have written: jsonb documents with NaN, infinities, NUL characters, nulls and
integers beyond 64 bits; text arrays with quotes, backslashes, braces and commas, read back by Postgres."""

import json
import math
from datetime import datetime, timezone
from uuid import UUID

import psycopg
import pytest

from lakeledger.projections.copy_rows import text_array
from lakeledger.projections.history import _change_json, _storable

WHEN = datetime(2026, 11, 25, 4, 10, 17, 538026, tzinfo=timezone.utc)
ID = UUID("5a645e00-391f-4675-a659-3e61b6d096c4")


def _written(change: dict) -> object:
    """The document Postgres would be handed for ``change``, read back as JSON."""
    document = _change_json(change)
    return json.loads(document.dumps(document.obj))


def _reference(change: dict) -> object:
    """What the history wrote before orjson: the standard library, or _storable's walk where it refused."""
    try:
        text = json.dumps(change, default=str, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError):
        text = None
    if text is None or "\\u0000" in text:
        text = json.dumps(_storable(change), default=str, allow_nan=False)
    return json.loads(text)


@pytest.mark.parametrize("change", [
    {"updates": [{"action": "set-properties", "updates": {"k": "v"}}], "location": "s3://b/t"},
    {"expires_at": WHEN, "table_id": ID, "nested": {"at": [WHEN, ID]}},
    {"value": float("nan")},
    {"value": [1.5, float("inf"), -float("inf")]},
    {"doc": None, "values": [None, 1]},
    {"extra": 2 ** 70, "small": -(2 ** 63)},
    {"a\x00b": "v\x00", "list": ["\x00"]},
    {"é": "naïve ☃", "emoji": "😀"},
    {"number": 1e16, "tiny": 5e-324, "float": 0.1},
    {1: "a key that is not a string"},
])
def test_the_change_document_means_what_the_standard_library_wrote(change):
    assert _written(change) == _reference(change)


def test_nan_is_kept_as_a_string_not_turned_into_null():
    assert _written({"value": float("nan"), "inf": math.inf}) == {"value": "nan", "inf": "inf"}


def test_times_are_written_as_str_gives_them():
    assert _written({"at": WHEN}) == {"at": str(WHEN)}


@pytest.mark.parametrize("items", [[], ["sales"], ["a", "b.c"], ['quo"te', "back\\slash", "{brace}", "com,ma",
                                                                   "sp ace", "NULL", "", "tab\tnew\nline"]])
def test_text_array_literals_read_back_as_the_names(pg_url, items):
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT %s::text[]", (text_array(items),)).fetchone()[0] == items


def test_no_array_is_null():
    assert text_array(None) is None
