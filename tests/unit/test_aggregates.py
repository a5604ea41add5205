from uuid import uuid4

import pytest

from lakeledger.domain.errors import (
    NoSuchNamespace,
    NoSuchTable,
    NoSuchView,
    UnprocessableEntity,
    WarehouseInactive,
)
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_profile import FileStorageProfile, HardDelete
from lakeledger.domain.table import CREATED_BY_REQUEST, Table
from lakeledger.domain.view import View
from lakeledger.domain.warehouse import Warehouse

BY = Provenance("bob", "req-9")


def _table() -> Table:
    return Table.create(uuid4(), uuid4(), uuid4(), ("sales",), "orders", "file:///w/a", "file:///w/a/m0.json",
                        CREATED_BY_REQUEST, {"name": "orders"}, BY)


def test_table_events_carry_the_full_change_and_who_made_it():
    table = _table()
    table.commit([{"type": "assert-create"}], [{"action": "set-properties", "updates": {"a": "b"}}],
                 "file:///w/a/m1.json", "file:///w/a", BY)
    created, committed = table.collect_events()
    assert committed.previous_metadata_location == "file:///w/a/m0.json"
    assert committed.metadata_location == "file:///w/a/m1.json"
    assert committed.updates == [{"action": "set-properties", "updates": {"a": "b"}}]
    assert (committed.actor, committed.request_id) == ("bob", "req-9")
    assert table.metadata_location == "file:///w/a/m1.json"


def test_a_dropped_table_takes_no_more_changes():
    table = _table()
    table.drop(purge_requested=True, expires_at=None, force=False, by=BY)
    dropped = table.collect_events()[-1]
    assert dropped.purge_requested and dropped.location == "file:///w/a"
    with pytest.raises(NoSuchTable):
        table.commit([], [], "file:///w/a/m2.json", "file:///w/a", BY)
    with pytest.raises(NoSuchTable):
        table.drop(purge_requested=False, expires_at=None, force=False, by=BY)


def test_rename_records_both_names():
    table = _table()
    target = uuid4()
    table.rename(target, ("archive",), "orders_2024", BY)
    renamed = table.collect_events()[-1]
    assert (renamed.from_namespace, renamed.from_name) == (["sales"], "orders")
    assert (renamed.to_namespace_id, renamed.to_namespace, renamed.to_name) == (target, ["archive"], "orders_2024")


def test_namespace_properties_report_updated_removed_and_missing():
    ns = Namespace.create(uuid4(), uuid4(), None, ("sales",), {"owner": "x", "tier": "gold"}, BY)
    updated, removed, missing = ns.update_properties({"owner": "y"}, ["tier", "nope"], BY)
    assert (updated, removed, missing) == (["owner"], ["tier"], ["nope"])
    assert ns.properties == {"owner": "y"}
    with pytest.raises(UnprocessableEntity):  # the REST spec's 422
        ns.update_properties({"k": "v"}, ["k"], BY)
    ns.drop(None, False, BY)
    with pytest.raises(NoSuchNamespace):
        ns.update_properties({}, [], BY)


def test_warehouse_lifecycle():
    wh = Warehouse.create(uuid4(), uuid4(), "demo", FileStorageProfile(location="file:///data/wh"), HardDelete(), BY)
    wh.deactivate(BY)
    with pytest.raises(WarehouseInactive):
        wh.ensure_active()
    wh.activate(BY)
    wh.ensure_active()
    wh.rename("prod", BY)
    assert [type(e).__name__ for e in wh.collect_events()] == ["Created", "Deactivated", "Activated", "Renamed"]


def test_views_share_rename_and_drop_with_tables():
    view = View.create(uuid4(), uuid4(), uuid4(), ("sales",), "v", "file:///w/v", "file:///w/v/m0.json",
                       {"name": "v"}, BY)
    view.replace([], [{"action": "set-properties", "updates": {"a": "b"}}], "file:///w/v/m1.json", BY)
    view.rename(uuid4(), ("sales",), "v2", BY)
    view.drop(purge_requested=False, expires_at=None, force=False, by=BY)
    assert [type(e).__qualname__ for e in view.collect_events()] == [
        "View.Created", "View.Replaced", "Tabular.Renamed", "Tabular.Dropped"]
    with pytest.raises(NoSuchView):
        view.replace([], [], "file:///w/v/m2.json", BY)
