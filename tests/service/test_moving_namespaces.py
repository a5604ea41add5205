"""The namespace move command (lakeledger/services/namespace_moves.py) on the service tier: what one move appends, what
the aggregates and the read model say afterwards, and the races between its reads and its append, made with
``interleave`` (another writer's command runs in that window, on another composition root)."""

from uuid import UUID

import pytest
from support import SCHEMA

from lakeledger.api.models import CreateTableRequest
from lakeledger.domain.errors import (
    AlreadyExists,
    BadRequest,
    InvalidArgument,
    NamespaceDepthExceeded,
    NoSuchNamespace,
    Protected,
)
from lakeledger.domain.name_claim import NAMESPACE
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import Tabular

MOVER = Provenance("mover", "move-1")
RIVAL = Provenance("rival", "rival-1")
SOFT = {"type": "soft", "expiration-seconds": 3600}


def _table(catalog, path: list[str], name: str, on=None):
    request = CreateTableRequest.model_validate({"name": name, "schema": SCHEMA})
    return (on or catalog.services).tables.create(catalog.warehouse_id, path, request,
                                                  {"name": name, "schema": SCHEMA}, catalog.by)


def _move(catalog, path: tuple[str, ...], to: list[str], force: bool = False, on=None):
    return (on or catalog.services).namespace_moves.move(catalog.warehouse_id, catalog.namespace_id(*path), to,
                                                         force, MOVER)


def test_a_move_appends_one_event_per_object_of_the_tree_in_one_append(catalog):
    """a.b (with a.b.c and a table in each, one of them soft-dropped) moves under x as y: one append holds the claims,
    a Namespace.Moved for a.b and a.b.c and a Tabular.Moved for each table; ids, locations and versions of the
    aggregates follow; the read model answers under the new paths only."""
    catalog.services.management.set_delete_profile(catalog.warehouse_id, SOFT, catalog.by)
    for path in (("a",), ("a", "b"), ("a", "b", "c"), ("x",)):
        catalog.namespace(*path)
    t1 = _table(catalog, ["a", "b"], "t1")
    t2 = _table(catalog, ["a", "b", "c"], "t2")
    gone = _table(catalog, ["a", "b", "c"], "gone")
    catalog.services.tables.drop(catalog.warehouse_id, ["a", "b", "c"], "gone", False, False, catalog.by)
    b, c = catalog.namespace_id("a", "b"), catalog.namespace_id("a", "b", "c")
    start = catalog.head()

    moved = _move(catalog, ("a", "b"), ["x", "y"])

    assert (moved.id, moved.path, moved.parent_id) == (b, ("x", "y"), catalog.namespace_id("x"))
    events = catalog.events_after(start)
    assert len({n.position for n in events}) == len(events) == 2 + 2 + 3  # claims, namespaces, tables
    assert all((e.event.actor, e.event.request_id) == ("mover", "move-1") for e in events)
    kinds = sorted(type(n.event).__qualname__.replace("Table.", "Tabular.") for n in events)
    assert kinds == ["NameClaim.Created", "NameClaim.Released", "Namespace.Moved", "Namespace.Moved",
                     "Tabular.Moved", "Tabular.Moved", "Tabular.Moved"]
    root = next(n.event for n in events if n.originator_id == b)
    assert (root.from_path, root.to_path, root.with_namespace) == (["a", "b"], ["x", "y"], None)
    assert root.to_parent_id == catalog.namespace_id("x") and root.from_parent_id == catalog.namespace_id("a")
    below = next(n.event for n in events if n.originator_id == c)
    assert (below.from_path, below.to_path, below.with_namespace, below.to_parent_id) == (
        ["a", "b", "c"], ["x", "y", "c"], b, b)

    log = catalog.services.log
    assert log.get(Namespace, c).path == ["x", "y", "c"]
    for state, namespace in ((t1, ["x", "y"]), (t2, ["x", "y", "c"]), (gone, ["x", "y", "c"])):
        tabular = log.get(Tabular, state.table_id)
        assert tabular.namespace == namespace and tabular.location == state.location
    assert catalog.services.ledger.holder(NAMESPACE, catalog.namespace_id("x"), "y") == b
    assert catalog.services.ledger.holder(NAMESPACE, catalog.namespace_id("a"), "b") is None
    assert not catalog.namespace_listed("a", "b") and catalog.namespace_listed("x", "y", "c")
    wh = UUID(catalog.warehouse_id)
    found = catalog.read_model.run(catalog.read_model.queries.active_table(wh, ["x", "y", "c"], "t2"))
    assert found is not None and found.id == t2.table_id
    assert catalog.read_model.run(catalog.read_model.queries.active_table(wh, ["a", "b", "c"], "t2")) is None
    [binned] = catalog.read_model.run(catalog.read_model.queries.deleted_tabulars(wh, None, None, 10))
    assert (binned.name, binned.namespace) == ("gone", ["x", "y", "c"])


def test_refusals_append_nothing(catalog):
    for path in (("a",), ("a", "b"), ("x",), ("x", "b")):
        catalog.namespace(*path)
    catalog.services.protection.set(catalog.warehouse_id, "namespace", catalog.namespace_id("a"), True, catalog.by)
    start = catalog.head()

    with pytest.raises(InvalidArgument, match="non-empty"):
        _move(catalog, ("x",), [])
    with pytest.raises(BadRequest, match="^Cannot move namespace a to a.b.z: that is inside it$"):
        _move(catalog, ("a",), ["a", "b", "z"], force=True)
    with pytest.raises(AlreadyExists, match="^Namespace already exists: x.b$"):
        _move(catalog, ("a", "b"), ["x", "b"])
    with pytest.raises(NoSuchNamespace, match="^Namespace does not exist: nowhere$"):
        _move(catalog, ("a", "b"), ["nowhere", "b"])
    with pytest.raises(Protected, match="^Namespace a is protected; move it with force=true"):
        _move(catalog, ("a",), ["a2"])
    assert _move(catalog, ("x",), ["x"]).path == ("x",)  # where it is already: nothing to do

    assert catalog.head() == start
    assert _move(catalog, ("a",), ["a2"], force=True).path == ("a2",)
    assert catalog.namespace_listed("a2", "b")


def test_a_deep_tree_is_not_moved_below_the_depth_limit(catalog):
    deep = [f"l{i}" for i in range(5)]  # the default limit of new namespaces, Lakekeeper's
    for depth in range(1, 6):
        catalog.namespace(*deep[:depth])
    catalog.namespace("top")
    start = catalog.head()
    with pytest.raises(NamespaceDepthExceeded, match="exceeds maximum depth of 5"):
        _move(catalog, ("l0",), ["top", "l0"])
    assert catalog.head() == start


def test_a_move_loses_to_a_create_of_its_destination_name(catalog, interleave):
    catalog.namespace("a")
    seen = interleave(catalog.services.ledger, lambda: catalog.namespace("b", on=catalog.rival))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match="^Namespace already exists: b$"):
        _move(catalog, ("a",), ["b"])

    assert seen.appends == 1  # the second run refused before its append
    assert catalog.kinds_after(start) == ["NameClaim.Created", "Namespace.Created"]  # the rival's create, alone
    assert catalog.namespace_listed("a")


def test_a_table_created_in_the_tree_meanwhile_moves_with_it(catalog, interleave):
    catalog.namespace("a")
    catalog.namespace("a", "b")
    made = []
    seen = interleave(catalog.services.ledger, lambda: made.append(_table(catalog, ["a", "b"], "late",
                                                                          on=catalog.rival)))

    _move(catalog, ("a",), ["z"])

    assert seen.appends == 2  # the first append found the tree grown, and the move ran again on it
    late = catalog.services.log.get(Tabular, made[0].table_id)
    assert late.namespace == ["z", "b"]
    wh = UUID(catalog.warehouse_id)
    assert catalog.read_model.run(catalog.read_model.queries.active_table(wh, ["z", "b"], "late")) is not None


def test_a_table_is_not_created_under_a_path_moved_away_meanwhile(catalog, interleave):
    """The create read the namespace at a.b, the move landed before its append: the create runs again and finds no
    a.b (the table never enters the log with a path its namespace no longer has)."""
    catalog.namespace("a")
    catalog.namespace("a", "b")
    interleave(catalog.services.ledger, lambda: _move(catalog, ("a",), ["z"], on=catalog.rival))
    start = catalog.head()

    with pytest.raises(NoSuchNamespace, match="^Namespace does not exist: a.b$"):
        _table(catalog, ["a", "b"], "t")

    assert "Table.Created" not in catalog.kinds_after(start)
    assert catalog.metadata_files() == []  # the metadata file written before the refused append is removed


def test_a_move_and_a_drop_of_its_namespace_do_not_both_apply(catalog, interleave):
    catalog.namespace("a")
    interleave(catalog.services.ledger,
               lambda: catalog.rival.namespaces.drop(catalog.warehouse_id, ["a"], RIVAL))
    ns_id = catalog.namespace_id("a")
    start = catalog.head()

    with pytest.raises(NoSuchNamespace):
        catalog.services.namespace_moves.move(catalog.warehouse_id, ns_id, ["b"], False, MOVER)

    assert catalog.kinds_after(start) == ["NameClaim.Released", "Namespace.Dropped"]
    assert not catalog.namespace_listed("b")


def test_a_drop_does_not_act_on_a_namespace_moved_between_its_reads(catalog, monkeypatch):
    """The drop of ``s`` reads the claim on ``s``, then the namespace it names; the move to ``d`` lands between the
    two reads (the rival runs it just before the namespace is read). The namespace read is then at ``d``: a lost
    race, and the drop, run again, finds no ``s`` (before resolve checked the path, it dropped ``d``)."""
    catalog.namespace("s")
    ns_id = catalog.namespace_id("s")
    log = catalog.services.log
    get = log.get
    moved = []

    def get_after_a_move(cls, aggregate_id, *rest):
        if cls is Namespace and aggregate_id == ns_id and not moved:
            moved.append(catalog.rival.namespace_moves.move(catalog.warehouse_id, ns_id, ["d"], False, RIVAL))
        return get(cls, aggregate_id, *rest)

    monkeypatch.setattr(log, "get", get_after_a_move)
    start = catalog.head()

    with pytest.raises(NoSuchNamespace, match="^Namespace does not exist: s$"):
        catalog.services.namespaces.drop(catalog.warehouse_id, ["s"], catalog.by)

    assert moved and catalog.namespace_listed("d")
    assert catalog.kinds_after(start) == ["NameClaim.Released", "NameClaim.Created", "Namespace.Moved"]  # the move
