"""The warehouse's drop-purge-default as the aggregate records it, and warehouses stored before it existed."""

import json
from uuid import uuid4

import pytest
from eventsourcing.application import Application
from eventsourcing.persistence import StoredEvent

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.names import CASE_INSENSITIVE, EXACT
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_profile import FileStorageProfile, HardDelete
from lakeledger.domain.warehouse import KEEP, PURGE, Warehouse, parse_name_matching

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
    assert state["class_version"] == 4
    v1 = {k: v for k, v in state.items()
          if k not in ("class_version", "drop_purge_default", "storage_secret", "name_matching")}
    older = Application(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    older.recorder.insert_events([StoredEvent(stored.originator_id, stored.originator_version, stored.topic,
                                              json.dumps(v1).encode())])
    assert older.repository.get(wh.id).drop_purge_default == PURGE
    assert older.repository.get(wh.id).storage_secret is None
    assert older.repository.get(wh.id).name_matching == EXACT  # its names match as they always did


def test_a_new_warehouse_matches_names_case_insensitively_unless_asked_otherwise():
    assert _warehouse(KEEP).name_matching == CASE_INSENSITIVE
    assert parse_name_matching("exact") == EXACT
    for bad in ("EXACT", "insensitive", True, ""):
        with pytest.raises(BadRequest):
            parse_name_matching(bad)


def test_a_v3_warehouse_event_is_upcast_to_exact_name_matching():
    """Version 3 (before the setting): names matched exactly; the upcast keeps them so on every replay."""
    state = {"class_version": 3, "drop_purge_default": KEEP, "storage_secret": None}
    Warehouse.Created.upcast_v3_v4(state)
    assert state["name_matching"] == EXACT
