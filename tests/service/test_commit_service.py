"""Table commits (``TableService.commit``): requirements refused with the messages of Iceberg's Java catalogs and
nothing appended; a commit that changes nothing appends nothing and writes no file; a commit that lost its race runs
again on the winner's metadata (and is refused if the winner broke its requirements); each commit moves the table to a
new metadata file, which the log, the read model and the next metadata's log agree on."""

import json
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from support import SCHEMA, VIEW_VERSION

from lakeledger.domain.errors import AlreadyExists, CommitFailed, InvalidArgument, NoSuchTable
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table import Table
from lakeledger.services.tables import TableChange

RIVAL = Provenance("rival", "commit")
SET_A = [{"action": "set-properties", "updates": {"a": "1"}}]
ADD_COLUMN = [
    {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True},
        {"id": 2, "name": "data", "type": "string", "required": False},
        {"id": 3, "name": "more", "type": "int", "required": False}]}, "last-column-id": 3},
    {"action": "set-current-schema", "schema-id": -1},
]


def _metadata(location: str) -> dict:
    return json.loads(Path(location.removeprefix("file://")).read_text())


@pytest.fixture
def table(catalog) -> UUID:
    catalog.namespace("ns")
    return catalog.table("ns", "t").table_id


def _requirements(table_id: UUID) -> list[tuple[dict, str]]:
    wrong = "00000000-0000-0000-0000-000000000001"
    return [
        ({"type": "assert-create"}, "Requirement failed: table already exists"),
        ({"type": "assert-table-uuid", "uuid": wrong},
         f"Requirement failed: UUID does not match: expected {table_id} != {wrong}"),
        ({"type": "assert-current-schema-id", "current-schema-id": 7},
         "Requirement failed: current schema changed: expected id 7 != 0"),
        ({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 9},
         "Requirement failed: last assigned field id changed: expected id 9 != 2"),
        ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42},
         "Requirement failed: branch or tag main is missing, expected 42"),
        ({"type": "assert-default-spec-id", "default-spec-id": 3},
         "Requirement failed: default partition spec changed: expected id 3 != 0"),
        ({"type": "assert-default-sort-order-id", "default-sort-order-id": 5},
         "Requirement failed: default sort order changed: expected id 5 != 0"),
        ({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 1001},
         "Requirement failed: last assigned partition id changed: expected id 1001 != 999"),
    ]


@pytest.mark.parametrize("case", range(8), ids=["create", "table-uuid", "current-schema-id",
                                                 "last-assigned-field-id", "ref-snapshot-id", "default-spec-id",
                                                 "default-sort-order-id", "last-assigned-partition-id"])
def test_a_requirement_that_does_not_hold_is_refused_with_javas_message(catalog, table, interleave, case):
    requirement, message = _requirements(table)[case]
    before = catalog.loaded_table("ns", "t")
    start = catalog.head()
    seen = interleave(catalog.services.ledger, lambda: None, times=0)

    with pytest.raises(CommitFailed) as refused:
        catalog.commit("ns", "t", SET_A, [requirement])

    assert str(refused.value) == message
    assert seen.appends == 0 and catalog.head() == start
    assert catalog.loaded_table("ns", "t") == before and len(catalog.metadata_files()) == 1


def test_requirements_that_hold_let_the_commit_through(catalog, table):
    """The other side of the refusals above: the same kinds of requirement, true of the table, pass."""
    holding = [{"type": "assert-table-uuid", "uuid": str(table)},
               {"type": "assert-current-schema-id", "current-schema-id": 0},
               {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
               {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None},
               {"type": "assert-default-spec-id", "default-spec-id": 0},
               {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
               {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999}]
    start = catalog.head()
    state = catalog.commit("ns", "t", SET_A, holding)
    assert catalog.kinds_after(start) == ["Table.Committed"]
    assert _metadata(state.metadata_location)["properties"] == {"a": "1"}


@pytest.mark.parametrize("updates", [[], [{"action": "remove-properties", "removals": ["never-set"]}]],
                         ids=["no-updates", "remove-missing"])
def test_a_commit_that_changes_nothing_appends_nothing(catalog, table, updates):
    catalog.commit("ns", "t", SET_A)
    before = catalog.loaded_table("ns", "t")
    files = catalog.metadata_files()
    start = catalog.head()

    state = catalog.commit("ns", "t", updates, [{"type": "assert-table-uuid", "uuid": str(table)}])

    assert state.metadata_location == before[1]
    assert json.loads(state.metadata) == _metadata(before[1])
    assert catalog.head() == start
    assert catalog.loaded_table("ns", "t") == before and catalog.metadata_files() == files


def test_a_commit_that_lost_its_race_runs_again_on_the_winners_metadata(catalog, table, interleave):
    created = catalog.loaded_table("ns", "t")[1]
    theirs = []
    seen = interleave(catalog.services.ledger, lambda: theirs.append(
        catalog.commit("ns", "t", [{"action": "set-properties", "updates": {"b": "2"}}], on=catalog.rival,
                       by=RIVAL)))
    start = catalog.head()

    mine = catalog.commit("ns", "t", SET_A, [{"type": "assert-current-schema-id", "current-schema-id": 0}])

    assert seen.appends == 2
    [their] = theirs
    events = catalog.events_after(start)
    assert [(type(n.event), n.event.actor) for n in events] == [(Table.Committed, "rival"),
                                                                (Table.Committed, "service-tests")]
    assert [n.originator_version for n in events] == [2, 3]
    metadata = _metadata(mine.metadata_location)
    assert metadata["properties"] == {"a": "1", "b": "2"}
    assert [e["metadata-file"] for e in metadata["metadata-log"]] == [created, their.metadata_location]
    assert catalog.loaded_table("ns", "t") == (table, mine.metadata_location)
    # the losing attempt's file was removed: one file per version of the table
    assert [str(p) for p in catalog.metadata_files()] == sorted(
        loc.removeprefix("file://") for loc in (created, their.metadata_location, mine.metadata_location))


def test_a_retried_commit_is_refused_when_the_winner_broke_its_requirement(catalog, table, interleave):
    """Iceberg's catalog tests expect exactly this message after a server-side retry."""
    interleave(catalog.services.ledger, lambda: catalog.commit("ns", "t", ADD_COLUMN, on=catalog.rival, by=RIVAL))
    start = catalog.head()

    with pytest.raises(CommitFailed, match="^Requirement failed: current schema changed: expected id 0 != 1$"):
        catalog.commit("ns", "t", ADD_COLUMN, [{"type": "assert-current-schema-id", "current-schema-id": 0}])

    assert [n.event.actor for n in catalog.events_after(start)] == ["rival"]
    assert len(catalog.metadata_files()) == 2  # the table's first file and the rival's


def test_each_commit_advances_the_metadata_location(catalog, table):
    created = catalog.loaded_table("ns", "t")[1]
    locations = [created]
    for i in range(3):
        state = catalog.commit("ns", "t", [{"action": "set-properties", "updates": {"round": str(i)}}])
        locations.append(state.metadata_location)
        assert catalog.loaded_table("ns", "t") == (table, state.metadata_location)
        assert catalog.services.log.get(Table, table).metadata_location == state.metadata_location
        assert [e["metadata-file"] for e in _metadata(state.metadata_location)["metadata-log"]] == locations[:-1]

    assert len(set(locations)) == 4
    assert [Path(loc).name.split("-")[0] for loc in locations] == ["00000", "00001", "00002", "00003"]
    committed = [e for e in catalog.services.log.events_of(table) if isinstance(e, Table.Committed)]
    assert [e.metadata_location for e in committed] == locations[1:]


def test_a_multi_table_commit_is_all_or_nothing(catalog, table):
    other = catalog.table("ns", "u").table_id
    before = (catalog.loaded_table("ns", "t"), catalog.loaded_table("ns", "u"))
    start = catalog.head()
    changes = [TableChange(("ns",), "t", [], SET_A),
               TableChange(("ns",), "u", [{"type": "assert-table-uuid", "uuid": str(table)}], SET_A)]

    with pytest.raises(CommitFailed, match=f"^Requirement failed: UUID does not match: expected {other} != {table}$"):
        catalog.services.tables.commit(catalog.warehouse_id, changes, Provenance("me", "both"))
    assert catalog.head() == start
    assert (catalog.loaded_table("ns", "t"), catalog.loaded_table("ns", "u")) == before

    changes[1] = TableChange(("ns",), "u", [{"type": "assert-table-uuid", "uuid": str(other)}], SET_A)
    states = catalog.services.tables.commit(catalog.warehouse_id, changes, Provenance("me", "both"))
    events = catalog.events_after(start)
    assert [(type(n.event), n.originator_id) for n in events] == [(Table.Committed, table), (Table.Committed, other)]
    assert len({n.position for n in events}) == 2
    assert [catalog.loaded_table("ns", n)[1] for n in ("t", "u")] == [s.metadata_location for s in states]


@pytest.mark.parametrize(("changes", "error", "message"), [
    ([], InvalidArgument, "Invalid table changes: empty"),
    ([TableChange(("ns",), "t", [], SET_A)] * 2, InvalidArgument, "Table ns.t appears twice in one commit"),
    ([TableChange(("ns",), "nope", [], SET_A)], NoSuchTable, "Table does not exist: ns.nope"),
])
def test_a_commit_the_service_cannot_apply_is_refused_and_appends_nothing(catalog, table, changes, error, message):
    start = catalog.head()
    with pytest.raises(error) as refused:
        catalog.services.tables.commit(catalog.warehouse_id, changes, catalog.by)
    assert str(refused.value) == message and catalog.head() == start


@pytest.mark.parametrize(("move", "missing"), [
    (lambda c: c.rival.tables.drop(c.warehouse_id, ["ns"], "t", None, False, RIVAL), "ns.t"),
    (lambda c: c.rival.tables.rename(c.warehouse_id, (["ns"], "t"), (["ns"], "u"), RIVAL), "ns.t"),
], ids=["dropped", "renamed"])
def test_a_commit_that_lost_to_a_drop_or_rename_finds_no_table(catalog, table, interleave, move, missing):
    """The retry looks the table up again by the name the client used: gone, the commit is refused, not applied to
    the table under its new name or to its dropped self."""
    seen = interleave(catalog.services.ledger, lambda: move(catalog))
    start = catalog.head()

    with pytest.raises(NoSuchTable, match=f"^Table does not exist: {missing}$"):
        catalog.commit("ns", "t", SET_A)

    assert seen.appends == 1
    assert [n.event.actor for n in catalog.events_after(start)] == ["rival"] * len(catalog.events_after(start))
    assert not any(isinstance(e, Table.Committed) for e in catalog.services.log.events_of(table))
    assert len(catalog.metadata_files()) == 1


def _create_transaction() -> list[dict]:
    """The updates of Java's create transaction (committed with assert-create)."""
    return [{"action": "assign-uuid", "uuid": str(uuid4())},
            {"action": "upgrade-format-version", "format-version": 2},
            {"action": "add-schema", "schema": SCHEMA}, {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}}, {"action": "set-default-spec", "spec-id": -1},
            {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
            {"action": "set-default-sort-order", "sort-order-id": -1}]


@pytest.mark.parametrize(("winner", "error", "message"), [
    (lambda c: c.table("ns", "x", on=c.rival), CommitFailed, "Requirement failed: table already exists"),
    (lambda c: c.view("ns", "x", on=c.rival), AlreadyExists, "View with same name already exists: ns.x"),
], ids=["table", "view"])
def test_a_create_transaction_that_lost_its_race(catalog, interleave, winner, error, message):
    """Iceberg's catalog tests expect these messages when another client created the name first."""
    catalog.namespace("ns")
    seen = interleave(catalog.services.ledger, lambda: winner(catalog))
    start = catalog.head()

    with pytest.raises(error) as refused:
        catalog.commit("ns", "x", _create_transaction(), [{"type": "assert-create"}])

    assert str(refused.value) == message and seen.appends == 1
    assert "Table.Committed" not in catalog.kinds_after(start) and len(catalog.kinds_after(start)) == 2
    assert len(catalog.metadata_files()) == 1  # the winner's; the loser's file went with its append


def test_a_create_transaction_creates_the_table(catalog):
    catalog.namespace("ns")
    updates = _create_transaction()
    start = catalog.head()
    state = catalog.commit("ns", "x", updates, [{"type": "assert-create"}])
    assert catalog.kinds_after(start) == ["NameClaim.Created", "Table.Created"]
    assert catalog.loaded_table("ns", "x") == (UUID(updates[0]["uuid"]), state.metadata_location)


def test_a_multi_table_commit_that_lost_on_one_table_runs_again_whole(catalog, table, interleave):
    other = catalog.table("ns", "u").table_id
    interleave(catalog.services.ledger, lambda: catalog.commit(
        "ns", "u", [{"action": "set-properties", "updates": {"b": "2"}}], on=catalog.rival, by=RIVAL))
    start = catalog.head()

    states = catalog.services.tables.commit(
        catalog.warehouse_id, [TableChange(("ns",), "t", [], SET_A), TableChange(("ns",), "u", [], SET_A)],
        Provenance("me", "both"))

    events = catalog.events_after(start)
    assert [(n.originator_id, n.event.actor) for n in events] == [(other, "rival"), (table, "me"), (other, "me")]
    assert [_metadata(s.metadata_location)["properties"] for s in states] == [{"a": "1"}, {"a": "1", "b": "2"}]
    assert len(catalog.metadata_files()) == 5  # two creates, the rival's commit, and this one's two files


def test_a_view_replace_that_lost_its_race_runs_again_on_the_winners_version(catalog, interleave):
    catalog.namespace("ns")
    catalog.view("ns", "v")
    view_id = catalog.loaded_view("ns", "v")[0]

    def replace(on, by: Provenance, sql: str):
        version = {**VIEW_VERSION, "version-id": 2, "representations": [{"type": "sql", "sql": sql,
                                                                           "dialect": "spark"}]}
        return on.views.replace(catalog.warehouse_id, ["ns"], "v",
                                [{"type": "assert-view-uuid", "uuid": str(view_id)}],
                                [{"action": "add-view-version", "view-version": version},
                                 {"action": "set-current-view-version", "view-version-id": -1}], by)

    seen = interleave(catalog.services.ledger, lambda: replace(catalog.rival, RIVAL, "SELECT 2"))
    start = catalog.head()

    mine = replace(catalog.services, Provenance("me", "replace"), "SELECT 3")

    assert seen.appends == 2
    assert [n.event.actor for n in catalog.events_after(start)] == ["rival", "me"]
    metadata = json.loads(mine.metadata)
    assert [v["representations"][0]["sql"] for v in metadata["versions"]] == ["SELECT 1", "SELECT 2", "SELECT 3"]
    assert catalog.loaded_view("ns", "v") == (view_id, mine.metadata_location)
    assert len(catalog.metadata_files()) == 3
