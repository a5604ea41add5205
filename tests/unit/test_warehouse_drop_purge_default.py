"""The warehouse's drop-purge-default as the aggregate records it, and warehouses stored before it existed."""

import json
from uuid import uuid4

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_profile import FileStorageProfile, HardDelete
from lakeledger.domain.warehouse import KEEP, PURGE, Warehouse

BY = Provenance(actor="tester", request_id="r-1")


def _warehouse(drop_purge_default: str = PURGE) -> Warehouse:
    return Warehouse.create(uuid4(), uuid4(), "w", FileStorageProfile(location="file:///w"), HardDelete(), BY,
                            drop_purge_default)


def test_the_setting_is_recorded_at_creation_and_by_its_own_event():
    wh = _warehouse(KEEP)
    assert wh.drop_purge_default == KEEP
    wh.set_drop_purge_default(KEEP, BY)  # no change, no event
    assert len(wh.pending_events) == 1
    wh.set_drop_purge_default(PURGE, BY)
    assert wh.drop_purge_default == PURGE
    assert isinstance(wh.pending_events[-1], Warehouse.DropPurgeDefaultSet)
    for bad in ("maybe", True, None, ""):
        with pytest.raises(BadRequest):
            wh.set_drop_purge_default(bad, BY)
    with pytest.raises(BadRequest):
        _warehouse("never")


def test_a_warehouse_stored_before_the_setting_existed_purges():
    """Its Created event has no drop_purge_default and no class_version (v1); it is upcast to "purge", what every
    drop without purgeRequested did then."""
    app = Application(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    wh = _warehouse(KEEP)
    app.save(wh)
    [stored] = app.recorder.select_events(wh.id)
    state = json.loads(stored.state)
    assert state["class_version"] == 3
    v1 = {k: v for k, v in state.items() if k not in ("class_version", "drop_purge_default", "storage_secret")}
    older = Application(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    older.recorder.insert_events([StoredEvent(stored.originator_id, stored.originator_version, stored.topic,
                                              json.dumps(v1).encode())])
    assert older.repository.get(wh.id).drop_purge_default == PURGE
    assert older.repository.get(wh.id).storage_secret is None
