"""The history's row values that a rebuild writes its own way (lakeledger/projections/history.py, copy_rows.py) mean
what the standard library and psycopg would have written: jsonb documents with NaN, infinities, NUL characters (escaped
as every event read models see is: lakeledger/projections/storable.py), nulls and integers beyond 64 bits; text arrays
with quotes, backslashes, braces, commas, tabs and newlines, read back by Postgres, also through COPY; event ids as
uuid5
makes them."""

import json
import math
from datetime import UTC, datetime
from uuid import UUID, uuid4, uuid5

import psycopg
import pytest

from lakeledger.eventstore.identity import event_id
from lakeledger.projections.copy_rows import text_array
from lakeledger.projections.history import _change_json
from lakeledger.projections.storable import storable_value

WHEN = datetime(2026, 11, 25, 4, 10, 17, 538026, tzinfo=UTC)
ID = UUID("5a645e00-391f-4675-a659-3e61b6d096c4")


def _written(change: dict) -> object:
    """The document Postgres would be handed for ``change``, read back as JSON."""
    return json.loads(_change_json(storable_value(change)))


def _reference(change: dict) -> object:
    """What the history wrote before orjson: the standard library, on the change as read models see it."""
    return json.loads(json.dumps(storable_value(change), default=str, allow_nan=False, separators=(",", ":")))


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


TRICKY = ['quo"te', "back\\slash", "{brace}", "com,ma", "tab\tnew\nline\rreturn", "\\N", "NULL", "", "naïve ☃"]


def test_array_literals_and_json_text_copied_read_back_as_the_values(pg_url):
    """As the history's rebuild writes them: names as literals, the change as JSON text, through psycopg's COPY."""
    rows = [(1, TRICKY, None, '{"a": "b\\n\\t", "c": "\\\\"}'), (2, [], ["x", "\\N"], "{}")]
    with psycopg.connect(pg_url) as conn:
        conn.execute("CREATE TEMP TABLE copied (n bigint, names text[], more text[], change jsonb)")
        with conn.cursor() as cur, cur.copy("COPY copied FROM STDIN") as copy:
            for n, names, more, change in rows:
                copy.write_row((n, text_array(names), text_array(more), change))
        back = conn.execute("SELECT * FROM copied ORDER BY n").fetchall()
    assert back == [(n, names, more, json.loads(change)) for n, names, more, change in rows]


def test_event_ids_are_uuid5_of_the_aggregate_and_version():
    namespace = UUID("0b6c7f3e-8a41-5d2c-9e17-4c1f2a9d6b30")
    for version in range(1, 200):
        aggregate = uuid4()
        assert event_id(aggregate, version) == uuid5(namespace, f"{aggregate}:{version}")
