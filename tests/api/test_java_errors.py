"""Errors of the table and namespace endpoints carry the `type` and message Iceberg's reference server gives
(RESTCatalogAdapter / CatalogHandlers), so the Java client raises the same exception with the same text:
its ErrorHandlers map 400 + IllegalArgumentException to IllegalArgumentException, 409 on a create transaction
to AlreadyExistsException, and Iceberg's catalog tests read the messages."""

import uuid

import pytest
from support import SCHEMA, VIEW_VERSION


def _error(r, code: int, type_: str, message: str | None = None, starts: str | None = None) -> str:
    assert r.status_code == code, r.text
    error = r.json()["error"]
    assert (error["code"], error["type"]) == (code, type_), error
    if message is not None:
        assert error["message"] == message, error
    if starts is not None:
        assert error["message"].startswith(starts), error
    return error["message"]


@pytest.fixture
def ns(client, warehouse):
    p = warehouse["prefix"]
    assert client.post(f"{p}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    for name in ("t", "t2"):
        assert client.post(f"{p}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA}).status_code == 200
    r = client.post(f"{p}/namespaces/ns/views", json={"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION,
                                                      "properties": {}})
    assert r.status_code == 200, r.text
    return f"{p}/namespaces/ns"


def _commit(client, path, *requirements):
    return client.post(path, json={"requirements": list(requirements),
                                   "updates": [{"action": "set-properties", "updates": {"a": "b"}}]})


def test_failed_requirements_say_so_as_iceberg_does(client, ns, log_length):
    table = f"{ns}/tables/t"
    current = client.get(table).json()["metadata"]
    before = log_length()
    cases = [
        ({"type": "assert-create"}, "Requirement failed: table already exists"),
        ({"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000001"},
         f"Requirement failed: UUID does not match: expected {current['table-uuid']} != "
         "00000000-0000-0000-0000-000000000001"),
        ({"type": "assert-current-schema-id", "current-schema-id": 5},
         "Requirement failed: current schema changed: expected id 5 != 0"),
        ({"type": "assert-last-assigned-field-id", "last-assigned-field-id": 9},
         f"Requirement failed: last assigned field id changed: expected id 9 != {current['last-column-id']}"),
        ({"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 9},
         f"Requirement failed: last assigned partition id changed: expected id 9 != "
         f"{current['last-partition-id']}"),
        ({"type": "assert-default-spec-id", "default-spec-id": 3},
         "Requirement failed: default partition spec changed: expected id 3 != 0"),
        ({"type": "assert-default-sort-order-id", "default-sort-order-id": 4},
         "Requirement failed: default sort order changed: expected id 4 != 0"),
        ({"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1},
         "Requirement failed: branch or tag main is missing, expected 1"),
    ]
    for requirement, message in cases:
        _error(_commit(client, table, requirement), 409, "CommitFailedException", message)
    assert log_length() == before


def test_a_create_transaction_that_lost_its_race(client, ns, log_length):
    """Java's create transaction commits with assert-create; Iceberg's tests expect the message below, and the
    table-vs-view clash message when a view took the name."""
    def create(name):
        return client.post(f"{ns}/tables/{name}", json={"requirements": [{"type": "assert-create"}], "updates": [
            {"action": "assign-uuid", "uuid": str(uuid.uuid4())},
            {"action": "upgrade-format-version", "format-version": 2},
            {"action": "add-schema", "schema": SCHEMA}, {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}}, {"action": "set-default-spec", "spec-id": -1},
            {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
            {"action": "set-default-sort-order", "sort-order-id": -1}]})
    before = log_length()
    _error(create("t"), 409, "CommitFailedException", "Requirement failed: table already exists")
    _error(create("v"), 409, "AlreadyExistsException", "View with same name already exists: ns.v")
    assert log_length() == before


def test_name_clashes_and_renames(client, ns, log_length):
    before = log_length()
    _error(client.post(f"{ns}/tables", json={"name": "t", "schema": SCHEMA}), 409, "AlreadyExistsException",
           "Table already exists: ns.t")
    _error(client.post(f"{ns}/tables", json={"name": "v", "schema": SCHEMA}), 409, "AlreadyExistsException",
           "View with same name already exists: ns.v")
    rename = f"{ns.rsplit('/namespaces', 1)[0]}/tables/rename"

    def move(src, dst):
        return client.post(rename, json={"source": {"namespace": ["ns"], "name": src},
                                         "destination": {"namespace": ["ns"], "name": dst}})
    _error(move("t", "t2"), 409, "AlreadyExistsException", "Cannot rename ns.t to ns.t2. Table already exists")
    _error(move("t", "v"), 409, "AlreadyExistsException", "Cannot rename ns.t to ns.v. View already exists")
    _error(move("t", "t"), 409, "AlreadyExistsException", "Cannot rename ns.t to ns.t. Table already exists")
    _error(move("nope", "x"), 404, "NoSuchTableException", "Table does not exist: ns.nope")
    metadata_location = client.get(f"{ns}/tables/t").json()["metadata-location"]
    _error(client.post(f"{ns}/register", json={"name": "t2", "metadata-location": metadata_location}),
           409, "AlreadyExistsException", "Table already exists: ns.t2")
    _error(client.post(f"{ns}/register", json={"name": "v", "metadata-location": metadata_location}),
           409, "AlreadyExistsException", "View with same name already exists: ns.v")
    assert log_length() == before


def test_namespace_errors(client, warehouse, ns, log_length):
    p = warehouse["prefix"]
    before = log_length()
    _error(client.post(f"{p}/namespaces", json={"namespace": ["ns"]}), 409, "AlreadyExistsException",
           "Namespace already exists: ns")
    _error(client.get(f"{p}/namespaces/non-existing"), 404, "NoSuchNamespaceException",
           "Namespace does not exist: non-existing")
    _error(client.get(f"{p}/namespaces", params={"parent": "non-existing"}), 404, "NoSuchNamespaceException",
           "Namespace does not exist: non-existing")
    _error(client.post(f"{p}/namespaces/non-existing/properties", json={"updates": {"a": "b"}}), 404,
           "NoSuchNamespaceException", "Namespace does not exist: non-existing")
    _error(client.delete(f"{p}/namespaces/a%1Fb"), 404, "NoSuchNamespaceException", "Namespace does not exist: a.b")
    _error(client.post(f"{p}/namespaces/non-existing/tables", json={"name": "t", "schema": SCHEMA}), 404,
           "NoSuchNamespaceException", "Namespace does not exist: non-existing")
    _error(client.post(f"{p}/tables/rename", json={"source": {"namespace": ["ns"], "name": "t"},
                                                   "destination": {"namespace": ["non_existing"], "name": "t"}}),
           404, "NoSuchNamespaceException", "Namespace does not exist: non_existing")
    # the REST spec's 422 for a key both set and removed (Iceberg: UnprocessableEntityException)
    _error(client.post(f"{ns}/properties", json={"updates": {"a": "1"}, "removals": ["a"]}), 422,
           "UnprocessableEntityException", starts="Invalid namespace update, cannot simultaneously set and remove")
    _error(client.delete(ns), 409, "NamespaceNotEmptyException", "Namespace is not empty: ns")
    # loading a table of a missing namespace stays NoSuchTable (Java falls back to metadata tables only on it)
    _error(client.get(f"{p}/namespaces/non-existing/tables/t"), 404, "NoSuchTableException",
           "Table does not exist: non-existing.t")
    assert log_length() == before


def test_invalid_arguments_are_illegal_argument_exceptions(client, warehouse, ns, log_length):
    p = warehouse["prefix"]
    not_metadata = warehouse["path"] / "elsewhere" / "00000-x.metadata.json"
    not_metadata.parent.mkdir(parents=True)
    not_metadata.write_text('{"format-version": 2}')
    before = log_length()
    invalid = [
        client.post(f"{p}/namespaces", json={"namespace": [""]}),
        client.post(f"{p}/namespaces", json={"namespace": ["a\u0001b"]}),
        client.post(f"{ns}/tables", json={"name": "", "schema": SCHEMA}),
        client.post(f"{ns}/tables", json={"name": "d", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "a", "type": "long", "required": False},
            {"id": 1, "name": "b", "type": "long", "required": False}]}}),
        client.get(f"{ns}/tables/t", params={"snapshots": "some"}),
        client.post(f"{ns}/tables/t", json={"requirements": [], "updates": [
            {"action": "set-current-schema", "schema-id": 42}]}),
        client.post(f"{p}/transactions/commit", json={"table-changes": []}),
        client.post(f"{p}/transactions/commit", json={"table-changes": [{"requirements": [], "updates": []}]}),
        client.post(f"{p}/transactions/commit", json={"table-changes": [
            {"identifier": {"namespace": ["ns"], "name": "t"}, "requirements": [], "updates": []},
            {"identifier": {"namespace": ["ns"], "name": "t"}, "requirements": [], "updates": []}]}),
        client.post(f"{ns}/register", json={"name": "r", "metadata-location": f"file://{not_metadata}"}),
    ]
    for r in invalid:
        _error(r, 400, "IllegalArgumentException")
    assert log_length() == before
