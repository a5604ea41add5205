"""Catalog time travel to a table whose snapshots were expired since (lakeledger/domain/expired_past.py): the past
is served less what the table has removed, and a past whose current snapshot was removed is not served."""

from uuid import uuid4

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lakeledger.domain import table_metadata as tm
from lakeledger.domain.errors import NoSuchTable
from lakeledger.domain.expired_past import as_it_still_exists, removed_since

LOCATION = "file:///w/t/metadata/00001.metadata.json"


def _commit(base, *updates):
    return tm.apply_commit(base, LOCATION, [], tm.parse_updates(list(updates)))


def _append(base, snapshot_id: int, parent: int | None):
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": snapshot_id, "timestamp-ms": 1700000000000 + snapshot_id,
                "manifest-list": f"file:///w/t/metadata/snap-{snapshot_id}.avro", "summary": {"operation": "append"},
                "schema-id": 0, **({"parent-snapshot-id": parent} if parent else {})}
    return _commit(base, {"action": "add-snapshot", "snapshot": snapshot},
                   {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id})


def _history():
    metadata = tm.new_metadata(Schema(NestedField(1, "id", LongType(), required=True)), None, None, "file:///w/t", {},
                               uuid4())
    parent = None
    for snapshot_id in (1, 2, 3):
        metadata = _append(metadata, snapshot_id, parent)
        parent = snapshot_id
    return _commit(metadata, {"action": "set-snapshot-ref", "ref-name": "first", "type": "tag", "snapshot-id": 1})


def test_the_past_is_served_less_the_snapshots_removed_since():
    past = _history()
    now = _commit(past, {"action": "remove-snapshots", "snapshot-ids": [1, 2]})
    removed = removed_since(past, now)
    assert removed == {1, 2}
    served = tm.parse(tm.serialize(as_it_still_exists(past, removed, "ns.t")))
    assert [s.snapshot_id for s in served.snapshots] == [3] and served.current_snapshot_id == 3
    assert set(served.refs) == {"main"} and [e.snapshot_id for e in served.snapshot_log] == [3]
    assert as_it_still_exists(past, set(), "ns.t") is past and removed_since(past, past) == set()


def test_a_past_whose_current_snapshot_was_removed_is_not_served():
    past = _history()
    later = _append(past, 4, 3)
    now = _commit(later, {"action": "remove-snapshots", "snapshot-ids": [1, 2, 3]})
    with pytest.raises(NoSuchTable, match="current snapshot 3 has been expired since"):
        as_it_still_exists(past, removed_since(past, now), "ns.t")
