"""The escaping rule between the log and the read models (lakeledger/projections/storable.py), value by value, as
docs/read-models.md states it."""

import json
import math
from datetime import UTC, datetime
from uuid import uuid4

from lakeledger.domain.names import MAX_NAME_LENGTH
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.table import Table
from lakeledger.projections.storable import LOCATION_CHARS, bounded_fields, storable, storable_value

NOW = datetime(2026, 11, 26, tzinfo=UTC)


def _created(**fields) -> Table.Created:
    values = {"actor": "alice", "request_id": "r", "warehouse_id": uuid4(), "namespace_id": uuid4(),
              "namespace": ["ns"], "name": "t", "location": "s3://b/t", "metadata_location": "s3://b/t/m.json",
              "origin": "create", "request": {"name": "t"}, **fields}
    return Table.Created(originator_id=uuid4(), originator_version=1, timestamp=NOW,
                         originator_topic="lakeledger.domain.table:Table", **values)


def test_what_postgres_cannot_hold_reads_back_as_documented():
    value = {"a\x00": ["\ud800x", "y\udfff", math.nan, math.inf, -math.inf, 10**30], "ok": "naïve ☃ 😀"}
    assert storable_value(value) == {"a\ufffd": ["\ufffdx", "y\ufffd", "nan", "inf", "-inf", 10**30],
                                     "ok": "naïve ☃ 😀"}


def test_what_needs_nothing_is_the_very_object():
    value = {"updates": [{"action": "set-properties", "updates": {"k": "v"}}], "n": 10**30}
    assert storable_value(value) is value
    event = _created()
    assert storable(event) is event and bounded_fields(event) is event
    assert storable(event, json.dumps({"name": "t"}).encode()) is event


def test_nesting_deeper_than_the_recursion_limit_is_walked():
    deep: object = "\x00"
    for _ in range(20_000):
        deep = {"k": [deep]}
    walked = storable_value(deep)
    for _ in range(20_000):
        walked = walked["k"][0]
    assert walked == "\ufffd"


def test_long_indexed_fields_are_cut_with_a_digest_other_text_is_kept():
    long_name, other_name = "n" * 5000, "n" * 4999 + "m"
    event = storable(_created(name=long_name, namespace=["é" * 1000, "short"], location="s" * 5000,
                              metadata_location="m" * 5000, request={"doc": "d" * 100_000}))
    assert len(event.name) == MAX_NAME_LENGTH and event.name.startswith("nnn") and "\u2026" in event.name
    assert storable(_created(name=other_name)).name != event.name  # two long values still differ
    assert len(event.namespace[0]) == MAX_NAME_LENGTH and event.namespace[1] == "short"
    assert len(event.location) == LOCATION_CHARS
    assert event.metadata_location == "m" * 5000 and event.request == {"doc": "d" * 100_000}  # not indexed
    # the same rule whichever path applies it: in the append (bounded_fields) and from the log (storable)
    again = _created(name=long_name)
    assert bounded_fields(again).name == storable(again).name == event.name


def test_every_name_the_api_accepts_is_kept_as_it_is():
    widest = _created(name="€" * MAX_NAME_LENGTH, namespace=["😀" * MAX_NAME_LENGTH])
    assert storable(widest) is widest and bounded_fields(widest) is widest


def test_an_escaped_event_is_a_copy_and_the_event_itself_is_untouched():
    event = Namespace.PropertiesUpdated(originator_id=uuid4(), originator_version=2, timestamp=NOW, actor="a",
                                        request_id="r", updated={"k\x00": "v"}, removed=[])
    escaped = storable(event)
    assert escaped is not event and escaped.updated == {"k\ufffd": "v"} and event.updated == {"k\x00": "v"}
    assert escaped.originator_id == event.originator_id and escaped.timestamp == event.timestamp
