"""The append conditions (lakeledger/services/conditions.py): checked inside the append transaction, each refuses the
append when it does not hold at that moment, and then nothing is appended. First on the ledger itself (the same
append goes in while the condition holds, and is refused once it does not), then through the services with the
state changed by another writer between the command's own checks and its append."""

import tempfile
from collections.abc import Callable
from uuid import UUID, uuid4

import pytest

from lakeledger.domain.errors import (
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchProject,
    NoSuchWarehouse,
    ProjectNotEmpty,
    UnfinishedDeletions,
    WarehouseNotEmpty,
)
from lakeledger.domain.name_claim import TABULAR, NameClaim
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import Tabular
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.services import conditions

SOFT = {"type": "soft", "expiration-seconds": 3600}
RIVAL = Provenance("rival", "move")


def _soft(catalog) -> None:
    catalog.services.management.set_delete_profile(catalog.warehouse_id, SOFT, catalog.by)


def _dropped_softly(catalog, on) -> None:
    """A table dropped into the recycle bin and its namespace dropped: the warehouse has no namespaces left but a
    deletion still pending."""
    catalog.namespace("gone", on=on)
    catalog.table("gone", "t", on=on)
    on.tables.drop(catalog.warehouse_id, ["gone"], "t", None, False, RIVAL)
    on.namespaces.drop(catalog.warehouse_id, ["gone"], RIVAL)


def _empty_project(catalog) -> UUID:
    catalog.project_id = catalog.services.management.create_project("empty", None, catalog.by)
    return catalog.project_id


def _warehouse_in_project(catalog) -> None:
    catalog.rival.management.create_warehouse(catalog.project_id, "w", {
        "type": "file", "location": f"file://{tempfile.mkdtemp(prefix='conditions-')}"}, None, None, RIVAL)


# Each case: the condition (made in a state where it holds), what makes it stop holding, and the refusal.
CASES: dict[str, tuple[Callable, Callable, type[Exception], str]] = {
    "namespace_is_empty": (
        lambda catalog: conditions.namespace_is_empty(catalog.namespace("ns"), "ns"),
        lambda catalog: catalog.table("ns", "t", on=catalog.rival),
        NamespaceNotEmpty, "Namespace is not empty: ns"),
    "namespace_exists": (
        lambda catalog: conditions.namespace_exists(catalog.namespace("ns"), ["ns"]),
        lambda catalog: catalog.rival.namespaces.drop(catalog.warehouse_id, ["ns"], RIVAL),
        NoSuchNamespace, "Namespace does not exist: ns"),
    "namespace_exists (moved)": (
        lambda catalog: conditions.namespace_exists(catalog.namespace("ns"), ["ns"]),
        lambda catalog: catalog.rival.namespace_moves.move(catalog.warehouse_id, catalog.namespace_id("ns"),
                                                           ["ns2"], False, RIVAL),
        ConcurrentChange, "Namespace ns moved to ns2 meanwhile"),
    "moved_tree_unchanged": (
        lambda catalog: conditions.moved_tree_unchanged(UUID(catalog.warehouse_id), [catalog.namespace("ns")], []),
        lambda catalog: catalog.view("ns", "v", on=catalog.rival),
        ConcurrentChange, "The namespace tree changed while it was being moved"),
    "warehouse_has_no_namespaces": (
        lambda catalog: conditions.warehouse_has_no_namespaces(UUID(catalog.warehouse_id), "wh"),
        lambda catalog: catalog.namespace("other", on=catalog.rival),
        WarehouseNotEmpty, "Warehouse wh is not empty: drop its namespaces first"),
    "warehouse_is_active": (
        lambda catalog: conditions.warehouse_is_active(UUID(catalog.warehouse_id), "wh"),
        lambda catalog: catalog.rival.management.set_active(catalog.warehouse_id, False, RIVAL),
        NoSuchWarehouse, "Warehouse wh does not exist or is deactivated"),
    "warehouse_has_no_pending_deletions": (
        lambda catalog: conditions.warehouse_has_no_pending_deletions(UUID(catalog.warehouse_id), "wh"),
        lambda catalog: _dropped_softly(catalog, catalog.rival),
        UnfinishedDeletions, "Warehouse wh still has soft-deleted tables or views waiting for their expiry, or "
                             "purges not done yet"),
    "project_has_no_warehouses": (
        lambda catalog: conditions.project_has_no_warehouses(_empty_project(catalog), "empty"),
        _warehouse_in_project,
        ProjectNotEmpty, "Project empty is not empty: delete its warehouses first"),
    "project_holds_only": (
        lambda catalog: conditions.project_holds_only(_empty_project(catalog), [], []),
        lambda catalog: catalog.rival.roles.create(catalog.project_id, "late", None, None, None, RIVAL),
        ConcurrentChange, "The project gained a role or tag definition while it was being deleted"),
    "project_holds_only (tag definition)": (
        lambda catalog: conditions.project_holds_only(_empty_project(catalog), [], []),
        lambda catalog: catalog.rival.tags.create(catalog.project_id, "late", None, ["table"], "marker", None,
                                                  RIVAL),
        ConcurrentChange, "The project gained a role or tag definition while it was being deleted"),
    "project_exists": (
        lambda catalog: conditions.project_exists(_empty_project(catalog)),
        lambda catalog: catalog.rival.management.delete_project(catalog.project_id, RIVAL),
        NoSuchProject, "Project does not exist: {project_id}"),
    "tree_unchanged": (
        lambda catalog: conditions.tree_unchanged([catalog.namespace("ns")], []),
        lambda catalog: catalog.table("ns", "t", on=catalog.rival),
        ConcurrentChange, "The namespace tree changed while it was being dropped"),
}


def _claim(catalog, name: str) -> NameClaim:
    """Something harmless to append: a name claim in a container of its own."""
    return NameClaim.first(TABULAR, uuid4(), name, uuid4(), catalog.by)


@pytest.mark.parametrize("case", CASES)
def test_a_condition_refuses_the_append_once_it_no_longer_holds(catalog, case):
    condition, unhold, error, message = CASES[case]
    _soft(catalog)
    check = condition(catalog)

    while_it_holds = _claim(catalog, "first")
    catalog.services.ledger.append(while_it_holds, conditions=[check])
    assert catalog.services.log.get(NameClaim, while_it_holds.id) is not None

    unhold(catalog)
    start = catalog.head()
    refused = _claim(catalog, "second")
    with pytest.raises(error) as raised:
        catalog.services.ledger.append(refused, conditions=[check])
    assert str(raised.value) == message.format(project_id=getattr(catalog, "project_id", None))
    assert catalog.head() == start
    assert catalog.services.log.get(NameClaim, refused.id) is None


def test_every_condition_is_covered():
    """A condition added to conditions.py without a case above fails here."""
    public = {name for name in dir(conditions) if not name.startswith("_") and callable(getattr(conditions, name))
              and getattr(getattr(conditions, name), "__module__", None) == conditions.__name__}
    assert public == {case.partition(" ")[0] for case in CASES}


# -- through the services, the state changing between a command's checks and its append -----------------------------


def test_a_namespace_is_not_created_under_a_parent_dropped_meanwhile(catalog, interleave):
    catalog.namespace("p")
    seen = interleave(catalog.services.ledger,
                      lambda: catalog.rival.namespaces.drop(catalog.warehouse_id, ["p"], RIVAL))
    start = catalog.head()

    with pytest.raises(NoSuchNamespace, match="^Namespace does not exist: p$"):
        catalog.services.namespaces.create(catalog.warehouse_id, ["p", "c"], {}, catalog.by)

    assert seen.appends == 1
    assert catalog.kinds_after(start) == ["NameClaim.Released", "Namespace.Dropped"]  # the rival's drop, alone
    assert not catalog.namespace_listed("p", "c")


def test_a_table_is_not_created_in_a_namespace_dropped_meanwhile(catalog, interleave):
    catalog.namespace("ns")
    interleave(catalog.services.ledger, lambda: catalog.rival.namespaces.drop(catalog.warehouse_id, ["ns"], RIVAL))
    start = catalog.head()

    with pytest.raises(NoSuchNamespace, match="^Namespace does not exist: ns$"):
        catalog.table("ns", "t")

    assert catalog.kinds_after(start) == ["NameClaim.Released", "Namespace.Dropped"]
    assert catalog.metadata_files() == []  # the metadata file written before the append is removed with it


def test_a_namespace_is_not_dropped_while_a_table_is_created_in_it(catalog, interleave):
    catalog.namespace("ns")
    interleave(catalog.services.ledger, lambda: catalog.table("ns", "t", on=catalog.rival))
    start = catalog.head()

    with pytest.raises(NamespaceNotEmpty, match="^Namespace is not empty: ns$"):
        catalog.services.namespaces.drop(catalog.warehouse_id, ["ns"], catalog.by)

    assert catalog.kinds_after(start) == ["NameClaim.Created", "Table.Created"]
    assert catalog.namespace_listed("ns") and catalog.listed("ns", "table") == ["t"]


def test_a_namespace_is_not_created_in_a_warehouse_deactivated_meanwhile(catalog, interleave):
    interleave(catalog.services.ledger,
               lambda: catalog.rival.management.set_active(catalog.warehouse_id, False, RIVAL))
    start = catalog.head()

    with pytest.raises(NoSuchWarehouse, match=f"^Warehouse {catalog.warehouse_name} does not exist or is deactivated$"):
        catalog.namespace("ns")

    assert catalog.kinds_after(start) == ["Warehouse.Deactivated"]


def test_a_warehouse_is_not_deleted_while_a_namespace_is_created_in_it(catalog, interleave):
    interleave(catalog.services.ledger, lambda: catalog.namespace("ns", on=catalog.rival))
    start = catalog.head()

    with pytest.raises(WarehouseNotEmpty,
                       match=f"^Warehouse {catalog.warehouse_name} is not empty: drop its namespaces first$"):
        catalog.services.management.delete_warehouse(catalog.warehouse_id, False, catalog.by)

    assert catalog.kinds_after(start) == ["NameClaim.Created", "Namespace.Created"]
    assert catalog.namespace_listed("ns")


def test_a_warehouse_is_not_deleted_while_a_deletion_is_left_pending_in_it(catalog, interleave):
    _soft(catalog)
    interleave(catalog.services.ledger, lambda: _dropped_softly(catalog, catalog.rival))
    start = catalog.head()

    with pytest.raises(UnfinishedDeletions, match=f"^Warehouse {catalog.warehouse_name} still has soft-deleted"):
        catalog.services.management.delete_warehouse(catalog.warehouse_id, False, catalog.by)

    assert "Warehouse.Deleted" not in catalog.kinds_after(start)
    assert catalog.warehouse_listed()


def test_a_recursive_drop_takes_in_what_was_created_in_its_tree_meanwhile(catalog, interleave):
    """tree_unchanged refuses the drop of the tree it read; the retry reads the tree again and drops all of it."""
    catalog.namespace("ns")
    catalog.namespace("ns", "sub")
    first = catalog.table("ns", "t").table_id
    late = []
    seen = interleave(catalog.services.ledger,
                      lambda: late.append(catalog.table("ns", "late", on=catalog.rival)))
    start = catalog.head()

    catalog.services.namespaces.drop(catalog.warehouse_id, ["ns"], catalog.by, recursive=True)

    assert seen.appends == 2
    [late_table] = late
    dropped = {n.originator_id for n in catalog.events_after(start) if isinstance(n.event, Tabular.Dropped)}
    assert dropped == {first, late_table.table_id}
    ns_dropped = [n.event for n in catalog.events_after(start) if isinstance(n.event, Namespace.Dropped)]
    assert len(ns_dropped) == 2  # ns and sub, once each
    assert catalog.services.log.get(Table, late_table.table_id).dropped
    assert catalog.listed("ns", "table") == [] and not catalog.namespace_listed("ns")
