"""Name claims (lakeledger/domain/name_claim.py) as the services use them: one holder per name in a namespace, tables
and views alike, decided by the append (two claimants of one name append at one claim version, one wins); a name is
released by a drop or a rename and can then be claimed again."""

import re
import threading
from uuid import UUID

import pytest

from lakeledger.domain.errors import AlreadyExists
from lakeledger.domain.name_claim import NAMESPACE, TABULAR, NameClaim
from lakeledger.domain.names import claim_id
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table import Table
from lakeledger.services.recycle_bin import UndropTarget

RIVAL = Provenance("rival", "move")


def _claim_events(catalog, container_id: UUID, name: str, scope: str = TABULAR) -> list[tuple[str, UUID]]:
    """The claim's history: (event class, holder) in log order."""
    return [(type(e).__qualname__, e.holder_id)
            for e in catalog.services.log.events_of(claim_id(scope, container_id, name))]


def _holder(catalog, container_id: UUID, name: str) -> UUID | None:
    claim = catalog.services.log.get(NameClaim, claim_id(TABULAR, container_id, name))
    return claim.holder_id if claim else None


def test_two_creates_of_one_name_one_wins(catalog, interleave):
    ns = catalog.namespace("ns")
    winner = []
    seen = interleave(catalog.services.ledger, lambda: winner.append(catalog.table("ns", "t", on=catalog.rival)))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match=r"^Table already exists: ns\.t$"):
        catalog.table("ns", "t")

    assert seen.appends == 1  # the lost append is retried, and the retry's own check refuses before appending
    [won] = winner
    assert catalog.kinds_after(start) == ["NameClaim.Created", "Table.Created"]
    assert _holder(catalog, ns, "t") == won.table_id
    assert catalog.loaded_table("ns", "t")[0] == won.table_id
    assert [str(p) for p in catalog.metadata_files()] == [won.metadata_location.removeprefix("file://")]


def test_a_create_reads_its_name_claim_once(catalog, monkeypatch):
    # it checks the name is free and then takes it: both are one read of the claim within one attempt (the test
    # above shows a rival that takes the name between them still loses nothing: the append conflicts and the
    # next attempt reads afresh)
    catalog.namespace("ns")
    log = catalog.services.log
    get, reads = log.get, []

    def counted(cls, aggregate_id, *args, **kwargs):
        if cls is NameClaim:
            reads.append(aggregate_id)
        return get(cls, aggregate_id, *args, **kwargs)

    monkeypatch.setattr(log, "get", counted)
    made = catalog.table("ns", "t")
    assert made.table_id is not None
    assert reads.count(claim_id(TABULAR, catalog.namespace_id("ns"), "t")) == 1


def test_a_command_run_inside_another_leaves_it_reading_afresh(catalog):
    # the outer attempt read the name as free; the inner command took it: the outer one must see the holder
    ns = catalog.namespace("ns")
    ledger = catalog.services.ledger

    def outer():
        assert ledger.holder(TABULAR, ns, "t") is None
        made = catalog.table("ns", "t")  # a command with an attempt of its own
        return made, ledger.holder(TABULAR, ns, "t")

    made, holder = ledger.retrying(outer)
    assert holder == made.table_id


def test_concurrent_creates_of_one_name_in_two_processes(catalog):
    """Eight threads over two composition roots create ns.t at once: exactly one table, the others refused."""
    catalog.namespace("ns")
    barrier = threading.Barrier(8)
    outcomes: list[object] = []

    def create(container) -> None:
        barrier.wait()
        try:
            outcomes.append(catalog.table("ns", "t", on=container))
        except AlreadyExists as refused:
            outcomes.append(str(refused))

    threads = [threading.Thread(target=create, args=(c,)) for c in [catalog.services, catalog.rival] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    created = [o for o in outcomes if not isinstance(o, str)]
    assert len(created) == 1 and len(outcomes) == 8
    assert [o for o in outcomes if isinstance(o, str)] == ["Table already exists: ns.t"] * 7
    assert catalog.loaded_table("ns", "t")[0] == created[0].table_id


def test_a_create_loses_to_a_rename_onto_its_name(catalog, interleave):
    catalog.namespace("ns")
    renamed = catalog.table("ns", "a").table_id
    interleave(catalog.services.ledger,
               lambda: catalog.rival.tables.rename(catalog.warehouse_id, (["ns"], "a"), (["ns"], "t"), RIVAL))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match=r"^Table already exists: ns\.t$"):
        catalog.table("ns", "t")

    assert catalog.kinds_after(start) == ["NameClaim.Released", "NameClaim.Created", "Tabular.Renamed"]
    assert catalog.loaded_table("ns", "t")[0] == renamed and catalog.listed("ns", "table") == ["t"]


def test_a_rename_loses_to_a_create_of_its_new_name(catalog, interleave):
    ns = catalog.namespace("ns")
    moving = catalog.table("ns", "a").table_id
    created = []
    interleave(catalog.services.ledger, lambda: created.append(catalog.table("ns", "t", on=catalog.rival)))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match=r"^Cannot rename ns\.a to ns\.t\. Table already exists$"):
        catalog.services.tables.rename(catalog.warehouse_id, (["ns"], "a"), (["ns"], "t"), catalog.by)

    assert catalog.kinds_after(start) == ["NameClaim.Created", "Table.Created"]
    assert _holder(catalog, ns, "a") == moving and _holder(catalog, ns, "t") == created[0].table_id
    assert catalog.listed("ns", "table") == ["a", "t"]


def test_a_view_create_loses_to_a_table_create_of_its_name(catalog, interleave):
    catalog.namespace("ns")
    interleave(catalog.services.ledger, lambda: catalog.table("ns", "x", on=catalog.rival))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match=r"^Table with same name already exists: ns\.x$"):
        catalog.view("ns", "x")

    assert catalog.kinds_after(start) == ["NameClaim.Created", "Table.Created"]
    assert catalog.listed("ns", "view") == [] and catalog.listed("ns", "table") == ["x"]
    assert len(catalog.metadata_files()) == 1  # the table's: the view's file went with its refused append


def _register_view_as(catalog, name: str) -> None:
    """Registers, under ``name``, the metadata file of view ns.v (made here)."""
    location = catalog.view("ns", "v").metadata_location
    catalog.services.views.register(catalog.warehouse_id, ["ns"], name, location, {}, catalog.by)


# (what holds the name, the command that wants it, its refusal)
COLLISIONS = {
    "view created on a table's name": (
        lambda c: c.table("ns", "t"), lambda c: c.view("ns", "t"), "Table with same name already exists: ns.t"),
    "table created on a view's name": (
        lambda c: c.view("ns", "v"), lambda c: c.table("ns", "v"), "View with same name already exists: ns.v"),
    "table renamed onto a view": (
        lambda c: (c.table("ns", "a"), c.view("ns", "v")),
        lambda c: c.services.tables.rename(c.warehouse_id, (["ns"], "a"), (["ns"], "v"), c.by),
        "Cannot rename ns.a to ns.v. View already exists"),
    "view renamed onto a table": (
        lambda c: (c.view("ns", "v"), c.table("ns", "t")),
        lambda c: c.services.views.rename(c.warehouse_id, (["ns"], "v"), (["ns"], "t"), c.by),
        "Cannot rename ns.v to ns.t. Table already exists"),
    "view registered on a table's name": (
        lambda c: c.table("ns", "t"), lambda c: _register_view_as(c, "t"),
        "Table with same name already exists: ns.t"),
}


@pytest.mark.parametrize("collision", COLLISIONS)
def test_tables_and_views_share_one_name_space(catalog, collision):
    hold, want, message = COLLISIONS[collision]
    ns = catalog.namespace("ns")
    hold(catalog)
    holders = {name: _holder(catalog, ns, name) for name in ("a", "t", "v")}
    start = catalog.head()

    with pytest.raises(AlreadyExists) as refused:
        want(catalog)

    assert str(refused.value) == message
    if collision == "view registered on a table's name":  # its setup made view ns.v first
        holders["v"] = _holder(catalog, ns, "v")
        assert catalog.kinds_after(start) == ["NameClaim.Created", "View.Created"]
    else:
        assert catalog.head() == start
    assert {name: _holder(catalog, ns, name) for name in ("a", "t", "v")} == holders


def test_a_dropped_name_can_be_claimed_again_by_either_kind(catalog):
    ns = catalog.namespace("ns")
    first = catalog.table("ns", "t").table_id
    catalog.services.tables.drop(catalog.warehouse_id, ["ns"], "t", None, False, catalog.by)
    assert catalog.loaded_table("ns", "t") is None and _holder(catalog, ns, "t") is None

    view = catalog.view("ns", "t")
    view_id = catalog.loaded_view("ns", "t")[0]
    catalog.services.views.drop(catalog.warehouse_id, ["ns"], "t", False, catalog.by)
    again = catalog.table("ns", "t").table_id

    assert len({first, view_id, again}) == 3 and view.metadata_location
    assert _claim_events(catalog, ns, "t") == [("NameClaim.Created", first), ("NameClaim.Released", first),
                                               ("NameClaim.Claimed", view_id), ("NameClaim.Released", view_id),
                                               ("NameClaim.Claimed", again)]
    assert catalog.loaded_table("ns", "t")[0] == again and catalog.listed("ns", "view") == []


def test_a_rename_releases_the_old_name_and_holds_the_new(catalog):
    ns = catalog.namespace("ns")
    other = catalog.namespace("other")
    moved = catalog.table("ns", "a").table_id

    catalog.services.tables.rename(catalog.warehouse_id, (["ns"], "a"), (["other"], "b"), catalog.by)

    assert _claim_events(catalog, ns, "a") == [("NameClaim.Created", moved), ("NameClaim.Released", moved)]
    assert _claim_events(catalog, other, "b") == [("NameClaim.Created", moved)]
    with pytest.raises(AlreadyExists, match=r"^Table already exists: other\.b$"):
        catalog.table("other", "b")
    reused = catalog.view("ns", "a")  # the old name is free, for a view too
    assert reused.metadata_location and catalog.listed("ns", "view") == ["a"]
    assert catalog.loaded_table("other", "b")[0] == moved and catalog.loaded_table("ns", "a") is None


def test_a_view_rename_releases_its_name_for_a_table(catalog):
    ns = catalog.namespace("ns")
    catalog.view("ns", "v")
    catalog.services.views.rename(catalog.warehouse_id, (["ns"], "v"), (["ns"], "w"), catalog.by)
    table = catalog.table("ns", "v").table_id
    assert _holder(catalog, ns, "v") == table
    assert catalog.listed("ns", "view") == ["w"] and catalog.listed("ns", "table") == ["v"]


def test_two_creates_of_one_namespace_one_wins(catalog, interleave):
    winner = []
    interleave(catalog.services.ledger, lambda: winner.append(catalog.namespace("ns", on=catalog.rival)))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match="^Namespace already exists: ns$"):
        catalog.namespace("ns")

    assert catalog.kinds_after(start) == ["NameClaim.Created", "Namespace.Created"]
    claim = catalog.services.log.get(NameClaim, claim_id(NAMESPACE, UUID(catalog.warehouse_id), "ns"))
    assert claim.holder_id == winner[0]


def test_a_dropped_namespace_name_can_be_claimed_again(catalog):
    first = catalog.namespace("ns")
    catalog.services.namespaces.drop(catalog.warehouse_id, ["ns"], catalog.by)
    again = catalog.namespace("ns")
    assert first != again and catalog.services.log.get(Namespace, first).dropped
    assert _claim_events(catalog, UUID(catalog.warehouse_id), "ns", NAMESPACE) == [
        ("NameClaim.Created", first), ("NameClaim.Released", first), ("NameClaim.Claimed", again)]


SOFT = {"type": "soft", "expiration-seconds": 3600}
TAKEN = "Cannot undrop table ns.t: the name is now taken by another table or view; rename or drop that one first"


def _soft_dropped_table(catalog) -> UUID:
    catalog.services.management.set_delete_profile(catalog.warehouse_id, SOFT, catalog.by)
    catalog.namespace("ns")
    dropped = catalog.table("ns", "t").table_id
    catalog.services.tables.drop(catalog.warehouse_id, ["ns"], "t", None, False, catalog.by)
    return dropped


def test_an_undrop_takes_its_name_back(catalog):
    dropped = _soft_dropped_table(catalog)
    ns = catalog.services.log.get(Table, dropped).namespace_id
    assert _holder(catalog, ns, "t") is None and catalog.loaded_table("ns", "t") is None

    catalog.services.recycle_bin.undrop(catalog.warehouse_id, [UndropTarget("table", dropped)], catalog.by)

    assert _claim_events(catalog, ns, "t") == [("NameClaim.Created", dropped), ("NameClaim.Released", dropped),
                                               ("NameClaim.Claimed", dropped)]
    assert catalog.loaded_table("ns", "t")[0] == dropped


def test_an_undrop_is_refused_when_its_name_was_taken_since(catalog):
    dropped = _soft_dropped_table(catalog)
    catalog.view("ns", "t")
    start = catalog.head()

    with pytest.raises(AlreadyExists, match=f"^{re.escape(TAKEN)}$"):
        catalog.services.recycle_bin.undrop(catalog.warehouse_id, [UndropTarget("table", dropped)], catalog.by)

    assert catalog.head() == start and catalog.services.log.get(Table, dropped).dropped


def test_an_undrop_loses_to_a_create_of_its_name(catalog, interleave):
    dropped = _soft_dropped_table(catalog)
    created = []
    seen = interleave(catalog.services.ledger, lambda: created.append(catalog.table("ns", "t", on=catalog.rival)))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match=f"^{re.escape(TAKEN)}$"):
        catalog.services.recycle_bin.undrop(catalog.warehouse_id, [UndropTarget("table", dropped)], catalog.by)

    assert seen.appends == 1  # the lost append is retried; the retry finds the name taken before appending
    assert catalog.kinds_after(start) == ["NameClaim.Claimed", "Table.Created"]
    assert catalog.loaded_table("ns", "t")[0] == created[0].table_id
    assert catalog.services.log.get(Table, dropped).dropped
