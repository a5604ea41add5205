"""Our events as the Events API's operations (lakeledger/domain/event_operations.py), and its continuation tokens
(lakeledger/domain/event_tokens.py): pure functions, no server."""

import json
from uuid import UUID, uuid4

import pytest

from lakeledger.api.responses import JSONResponse
from lakeledger.domain import event_tokens
from lakeledger.domain.event_operations import StoredEvent, history_types_of, matches_name, operation

T = UUID("6f1c2b7e-1d2a-4c3b-9e8f-0a1b2c3d4e5f")
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "x", "type": "long", "required": False}]}


def _event(typ: str, entity_type: str, name: list[str], change: dict) -> StoredEvent:
    return StoredEvent(typ, entity_type, T, name, change)


def test_a_create_request_becomes_the_updates_it_amounts_to():
    op = operation(_event("table.created", "table", ["a", "t"], {
        "origin": "create", "request": {"name": "t", "schema": SCHEMA, "location": "s3://b/t",
                                        "properties": {"format-version": "3", "k": "v"}}}))
    assert op["operation-type"] == "create-table"
    assert op["identifier"] == {"namespace": ["a"], "name": "t"} and op["table-uuid"] == str(T)
    actions = [u["action"] for u in op["updates"]]
    assert actions == ["assign-uuid", "upgrade-format-version", "add-schema", "set-current-schema", "add-spec",
                       "set-default-spec", "add-sort-order", "set-default-sort-order", "set-location",
                       "set-properties"]
    assert op["updates"][1]["format-version"] == 3 and op["updates"][2]["schema"] == SCHEMA


def test_a_staged_create_carries_the_clients_updates_and_a_registration_is_register_table():
    sent = [{"action": "assign-uuid", "uuid": str(T)}]
    staged = operation(_event("table.created", "table", ["a", "t"], {"origin": "commit", "request": {"updates": sent}}))
    assert staged["updates"] == sent
    registered = operation(_event("table.created", "table", ["a", "t"], {"origin": "register", "request": {}}))
    assert registered == {"operation-type": "register-table", "identifier": {"namespace": ["a"], "name": "t"},
                          "table-uuid": str(T)}


def test_commits_renames_and_drops_carry_the_prs_payloads():
    updates, requirements = [{"action": "set-properties", "updates": {"a": "1"}}], [{"type": "assert-create"}]
    commit = operation(_event("table.committed", "table", ["a", "t"], {"updates": updates,
                                                                      "requirements": requirements}))
    assert commit["operation-type"] == "update-table"
    assert (commit["updates"], commit["requirements"]) == (updates, requirements)
    assert operation(_event("table.committed", "table", ["a", "t"], {"updates": []}))["operation-type"] == \
        "register-table"
    rename = operation(_event("view.renamed", "view", ["b", "w"], {
        "typ": "view", "from_namespace": ["a"], "from_name": "v", "to_namespace": ["b"], "to_name": "w"}))
    assert rename == {"operation-type": "rename-view", "view-uuid": str(T),
                      "source": {"namespace": ["a"], "name": "v"}, "destination": {"namespace": ["b"], "name": "w"}}
    drop = operation(_event("table.dropped", "table", ["a", "t"], {"purge_requested": True, "expires_at": None}))
    assert drop == {"operation-type": "drop-table", "identifier": {"namespace": ["a"], "name": "t"},
                    "table-uuid": str(T), "purge": True}
    soft = operation(_event("table.dropped", "table", ["a", "t"], {"purge_requested": False,
                                                                  "expires_at": "2026-12-01 00:00:00+00:00"}))
    assert soft["purge"] is False and soft["x-lakeledger-expires-at"] == "2026-12-01 00:00:00+00:00"


def test_namespace_operations_and_our_own_types():
    assert operation(_event("namespace.created", "namespace", ["a", "b"], {"path": ["a", "b"],
                                                                          "properties": {"p": "1"}})) == \
        {"operation-type": "create-namespace", "namespace": ["a", "b"], "properties": {"p": "1"}}
    assert operation(_event("namespace.properties-updated", "namespace", ["a"], {
        "updated": {"y": "1", "x": "2"}, "removed": ["z"]})) == {
        "operation-type": "update-namespace-properties", "namespace": ["a"], "updated": ["x", "y"],
        "removed": ["z"], "missing": []}
    assert operation(_event("namespace.dropped", "namespace", ["a"], {}))["operation-type"] == "drop-namespace"
    undrop = operation(_event("table.undropped", "table", ["a", "t"], {"typ": "table"}))
    assert undrop["operation-type"] == "x-lakeledger.table.undropped"
    assert undrop["object-uuid"] == str(T) and undrop["change"] == {"typ": "table"}


def test_an_unregister_is_a_drop_that_keeps_the_files():
    change = {"typ": "table", "purge_requested": False, "expires_at": None, "metadata_location": "s3://b/t/m.json"}
    op = operation(_event("table.unregistered", "table", ["a", "t"], change))
    assert op == {"operation-type": "drop-table", "identifier": {"namespace": ["a"], "name": "t"},
                  "table-uuid": str(T), "purge": False, "x-lakeledger-unregistered": True}
    assert "table.unregistered" in history_types_of(["drop-table"])


def test_operation_types_name_the_events_to_read():
    assert history_types_of(["update-table"]) == ["table.committed"]
    assert history_types_of(["register-table"]) == ["table.committed", "table.created", "table.registered"]
    assert history_types_of(["x-lakeledger.table.undropped", "drop-view"]) == ["table.undropped", "view.dropped"]
    assert history_types_of(["x-other.thing"]) == []


def test_names_match_level_wise_and_renames_on_both_sides():
    table = _event("table.committed", "table", ["acc", "tax", "t1"], {})
    assert matches_name(table, [["acc"]]) and matches_name(table, [["acc", "tax", "t1"]])
    assert not matches_name(table, [["accounting"]]) and not matches_name(table, [["acc", "t1"]])
    assert not matches_name(table, [["acc", "tax", "t1", "x"]])
    renamed = _event("table.renamed", "table", ["b", "t"], {"from_namespace": ["a"], "from_name": "t",
                                                            "to_namespace": ["b"], "to_name": "t"})
    assert matches_name(renamed, [["a"]]) and matches_name(renamed, [["b"]]) and not matches_name(renamed, [["c"]])
    moved = _event("namespace.moved", "namespace", ["x", "a"], {"from_path": ["a"], "to_path": ["x", "a"]})
    assert matches_name(moved, [["a"]]) and matches_name(moved, [["x"]])
    # as the warehouse compares names: case-insensitive by default, exact when it says so
    assert matches_name(table, [["ACC", "Tax"]], "case-insensitive") and not matches_name(table, [["ACC"]], "exact")


def test_tokens_resume_only_for_their_warehouse_and_filters():
    warehouse, other = uuid4(), uuid4()
    digest = event_tokens.filter_digest({"operation-types": ["drop-table", "create-table"]})
    assert digest == event_tokens.filter_digest({"operation-types": ["create-table", "drop-table"]})
    assert digest != event_tokens.filter_digest({})
    token = event_tokens.encode(warehouse, 42, digest)
    assert event_tokens.decode(token, warehouse, digest) == 42
    with pytest.raises(event_tokens.BadToken, match="another warehouse"):
        event_tokens.decode(token, other, digest)
    with pytest.raises(event_tokens.BadToken, match="other filters"):
        event_tokens.decode(token, warehouse, event_tokens.filter_digest({}))
    for junk in ("", "not a token", "eyJ2IjoxfQ", token[:-3]):
        with pytest.raises(event_tokens.BadToken):
            event_tokens.decode(junk, warehouse, digest)


def test_an_answer_holding_a_number_beyond_64_bits_still_renders():
    """An old event may hold one (they are refused at the edge now); the Events API passes the event's data on."""
    body = JSONResponse({"operation": {"change": {"extra": 2**70}}, "id": T}).body
    assert json.loads(body) == {"operation": {"change": {"extra": 2**70}}, "id": str(T)}
