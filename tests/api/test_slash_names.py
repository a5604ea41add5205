"""Names holding `/` (sent as `%2F`) are reachable by every endpoint that takes a name, so whatever can be created
can be loaded, changed and dropped again; `%` in names is decoded exactly once."""

from urllib.parse import quote

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from support import SCHEMA, VIEW_VERSION


def _ns(*levels: str) -> str:
    return quote("\x1f".join(levels), safe="")


def _name(name: str) -> str:
    return quote(name, safe="")


def _ok(r, status: int = 200):
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text)
    return r


def test_a_slash_in_names_is_reachable_by_every_table_and_namespace_endpoint(client, warehouse):
    p = warehouse["prefix"]
    outer, inner = ["a/b"], ["a/b", "c/d"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": outer}))
    _ok(client.post(f"{p}/namespaces", json={"namespace": inner}))
    assert _ok(client.get(f"{p}/namespaces/{_ns(*inner)}")).json()["namespace"] == inner
    _ok(client.head(f"{p}/namespaces/{_ns(*inner)}"), 204)
    assert _ok(client.get(f"{p}/namespaces", params={"parent": "a/b"})).json()["namespaces"] == [inner]
    _ok(client.post(f"{p}/namespaces/{_ns(*inner)}/properties", json={"updates": {"k": "v"}}))

    tables = f"{p}/namespaces/{_ns(*inner)}/tables"
    created = _ok(client.post(tables, json={"name": "t/1", "schema": SCHEMA}))
    table = f"{tables}/{_name('t/1')}"
    loaded = _ok(client.get(table))
    assert loaded.json()["metadata"]["table-uuid"] == created.json()["metadata"]["table-uuid"]
    _ok(client.get(table, headers={"If-None-Match": loaded.headers["etag"]}), 304)  # the fast path's revalidation
    _ok(client.get(table, params={"snapshots": "refs"}))  # the routed load
    _ok(client.head(table), 204)
    assert _ok(client.get(tables)).json()["identifiers"] == [{"namespace": inner, "name": "t/1"}]
    _ok(client.post(table, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"p": "1"}}]}))
    _ok(client.post(f"{table}/metrics", json={
        "report-type": "scan-report", "table-name": "t/1", "snapshot-id": -1, "filter": True, "schema-id": 0,
        "projected-field-ids": [1], "projected-field-names": ["id"], "metrics": {}}), 204)
    _ok(client.post(f"{p}/transactions/commit", json={"table-changes": [{
        "identifier": {"namespace": inner, "name": "t/1"}, "requirements": [],
        "updates": [{"action": "set-properties", "updates": {"p": "2"}}]}]}), 204)
    assert _ok(client.get(table)).json()["metadata"]["properties"]["p"] == "2"
    _ok(client.post(f"{p}/tables/rename", json={"source": {"namespace": inner, "name": "t/1"},
                                                 "destination": {"namespace": outer, "name": "t/2"}}), 204)
    moved = f"{p}/namespaces/{_ns(*outer)}/tables/{_name('t/2')}"
    _ok(client.get(moved))
    _ok(client.get(table), 404)

    views = f"{p}/namespaces/{_ns(*inner)}/views"
    _ok(client.post(views, json={"name": "v/1", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}))
    view = f"{views}/{_name('v/1')}"
    _ok(client.get(view))
    _ok(client.head(view), 204)
    _ok(client.post(view, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"q": "1"}}]}))

    # everything can be dropped again, and so can the namespaces that held it
    _ok(client.delete(view), 204)
    _ok(client.delete(moved, params={"purgeRequested": "false"}), 204)
    _ok(client.delete(f"{p}/namespaces/{_ns(*inner)}"), 204)
    _ok(client.delete(f"{p}/namespaces/{_ns(*outer)}"), 204)
    assert _ok(client.get(f"{p}/namespaces")).json()["namespaces"] == []


@pytest.fixture
def pct_parent(client, warehouse):
    _ok(client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["pct"]}))


@pytest.mark.parametrize("name", ["%", "%2F", "%252F", "50%", "a%1Fb", "%zz", "/", "a/", "/b//c"])
def test_percent_signs_and_slashes_are_decoded_exactly_once(client, warehouse, pct_parent, name):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["pct", name]}))
    ns = f"{p}/namespaces/{_ns('pct', name)}"
    assert _ok(client.get(ns)).json()["namespace"] == ["pct", name]
    _ok(client.post(f"{ns}/tables", json={"name": name, "schema": SCHEMA}))
    assert _ok(client.get(f"{ns}/tables")).json()["identifiers"] == [{"namespace": ["pct", name], "name": name}]
    _ok(client.get(f"{ns}/tables/{_name(name)}"))
    _ok(client.delete(f"{ns}/tables/{_name(name)}", params={"purgeRequested": "false"}), 204)
    _ok(client.delete(ns), 204)


def test_pyiceberg_reaches_names_with_slashes(server, warehouse):
    catalog = RestCatalog("slashes", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    catalog.create_namespace(("x/y",))
    catalog.create_namespace(("x/y", "1/2"))
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    catalog.create_table(("x/y", "1/2", "t/a"), schema=schema)
    table = catalog.load_table(("x/y", "1/2", "t/a"))
    assert table.name() == ("x/y", "1/2", "t/a")
    with table.transaction() as tx:
        tx.set_properties(owner="ana")
    assert catalog.load_table(("x/y", "1/2", "t/a")).properties["owner"] == "ana"
    assert catalog.list_tables(("x/y", "1/2")) == [("x/y", "1/2", "t/a")]
    # not list_namespaces(("x/y",)): pyiceberg 0.12 percent-encodes the levels of the `parent` query parameter
    # before requests encodes the parameter again, so the server (like Iceberg's own) reads "x%2Fy"
    assert catalog.list_namespaces() == [("x/y",)]
    assert catalog.table_exists(("x/y", "1/2", "t/a"))
    catalog.drop_table(("x/y", "1/2", "t/a"))
    catalog.drop_namespace(("x/y", "1/2"))
    catalog.drop_namespace(("x/y",))
    assert catalog.list_namespaces() == []


def test_management_endpoints_reach_names_with_slashes(client, warehouse):
    p, management = warehouse["prefix"], f"/management/v1/warehouse/{warehouse['id']}"
    _ok(client.post(f"{management}/delete-profile",
                    json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}}))
    namespace_id = _ok(client.post(f"{p}/namespaces", json={"namespace": ["s/t"]})).json()["namespace-uuid"]
    table_id = _ok(client.post(f"{p}/namespaces/{_ns('s/t')}/tables", json={"name": "u/v", "schema": SCHEMA})) \
        .json()["metadata"]["table-uuid"]
    table = f"{p}/namespaces/{_ns('s/t')}/tables/{_name('u/v')}"

    events = _ok(client.get(f"{management}/history", params={"namespace": "s/t"})).json()["events"]
    assert {e["type"] for e in events} >= {"namespace.created", "table.created"}
    _ok(client.post(f"{management}/table/{table_id}/protection", json={"protected": True}))
    assert client.delete(table).status_code == 409
    _ok(client.post(f"{management}/table/{table_id}/protection", json={"protected": False}))
    _ok(client.delete(table), 204)
    deleted = _ok(client.get(f"{management}/deleted-tabulars")).json()["tabulars"]
    assert [(t["name"], t["namespace"], t["namespace-id"]) for t in deleted] == [("u/v", ["s/t"], namespace_id)]
    _ok(client.post(f"{management}/deleted-tabulars/undrop", json={"targets": [{"type": "table", "id": table_id}]}),
        204)
    _ok(client.get(table))


def test_a_path_that_is_not_utf8_is_400_and_appends_nothing(client, warehouse, log_length):
    before = log_length()
    for path in ("/namespaces/%FF", "/namespaces/%ED%A0%80", "/namespaces/ok/tables/%C3"):
        r = client.post(f"{warehouse['prefix']}{path}", json={"namespace": ["x"]})
        assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException", r.text
        head = client.head(f"{warehouse['prefix']}{path}")
        assert head.status_code == 400 and head.content == b""
    assert log_length() == before
