"""Identifiers as clients send them: separators, dots, spaces, non-ASCII; flags in any case; the
endpoints list in /config matches what is served."""

from urllib.parse import quote

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from support import SCHEMA, Server

ODD_NAMES = ["with.dot", "with space", "ünïcødé-名前", "semi;colon", "pct%25sign"]


def _path(levels) -> str:
    return quote("\x1f".join(levels), safe="")


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_names_round_trip_over_http(client, warehouse, name):
    p = warehouse["prefix"]
    namespace = ["outer.level", name]
    assert client.post(f"{p}/namespaces", json={"namespace": namespace[:1]}).status_code == 200
    assert client.post(f"{p}/namespaces", json={"namespace": namespace}).status_code == 200
    created = client.post(f"{p}/namespaces/{_path(namespace)}/tables", json={"name": name, "schema": SCHEMA})
    assert created.status_code == 200, created.text
    assert client.get(f"{p}/namespaces/{_path(namespace)}").json()["namespace"] == namespace
    assert client.get(f"{p}/namespaces/{_path(namespace)}/tables/{quote(name, safe='')}").status_code == 200
    assert client.head(f"{p}/namespaces/{_path(namespace)}/tables/{quote(name, safe='')}").status_code == 204
    listed = client.get(f"{p}/namespaces/{_path(namespace)}/tables").json()["identifiers"]
    assert listed == [{"namespace": namespace, "name": name}]
    children = client.get(f"{p}/namespaces", params={"parent": "outer.level"}).json()["namespaces"]
    assert children == [namespace]


def test_odd_names_round_trip_through_pyiceberg(server, warehouse):
    catalog = RestCatalog("odd", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    namespace = ("dotted.outer", "ünï cødé")
    catalog.create_namespace(namespace[:1])
    catalog.create_namespace(namespace)
    for name in ("t.with.dots", "t with spaces", "tåble"):
        catalog.create_table((*namespace, name), schema=catalog_schema())
        assert catalog.load_table((*namespace, name)).name() == (*namespace, name)
    assert sorted(catalog.list_tables(namespace)) == sorted(
        [(*namespace, "t.with.dots"), (*namespace, "t with spaces"), (*namespace, "tåble")])
    assert catalog.list_namespaces(namespace[:1]) == [namespace]


def catalog_schema():
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField
    return Schema(NestedField(1, "id", LongType(), required=True))


def test_config_advertises_the_separator(client, warehouse):
    config = client.get("/catalog/v1/config", params={"warehouse": warehouse["name"]}).json()
    assert config["overrides"]["namespace-separator"] == "%1F"


@pytest.mark.parametrize("flag,purged", [("True", True), ("true", True), ("TRUE", True), ("False", False),
                                         ("false", False)])
def test_purge_requested_is_read_in_any_case(client, warehouse, table_factory, db, flag, purged):
    path = table_factory()
    assert client.delete(path, params={"purgeRequested": flag}).status_code == 204
    row = db.execute("SELECT purge_requested FROM ll_tabulars WHERE warehouse_id = %s",
                     (warehouse["id"],)).fetchone()
    assert row[0] is purged


def test_purge_requested_that_is_no_boolean_is_400(client, table_factory, log_length):
    path = table_factory()
    before = log_length()
    r = client.delete(path, params={"purgeRequested": "yes please"})
    assert r.status_code == 400 and log_length() == before


def test_the_endpoints_list_names_exactly_what_is_served(client, warehouse):
    advertised = client.get("/catalog/v1/config", params={"warehouse": warehouse["name"]}).json()["endpoints"]
    served = set()
    for path, operations in client.get("/openapi.json").json()["paths"].items():
        if path.startswith("/catalog/v1/") and path != "/catalog/v1/config":
            # the spec's {plan-id} cannot be a route parameter's name (a hyphen); Java compares endpoints as strings
            route = path.removeprefix('/catalog/v1/').replace("{plan_id}", "{plan-id}")
            served |= {f"{method.upper()} /v1/{route}" for method in operations}
    assert set(advertised) == served
    assert len(advertised) == len(set(advertised))


@pytest.fixture(scope="module")
def dot_server(pg_url, data_dir, server):
    s = Server(pg_url, data_dir, LAKELEDGER__WORKERS="off", LAKELEDGER__NAMESPACE_SEPARATOR=".")
    yield s
    s.stop()


def test_an_advertised_separator_is_used_by_clients_and_the_unit_separator_still_works(dot_server, warehouse):
    catalog = RestCatalog("dots", uri=f"{dot_server.url}/catalog", warehouse=warehouse["name"])
    assert catalog._namespace_separator == "."  # taken from /config
    catalog.create_namespace(("parent",))
    catalog.create_namespace(("parent", "child"))
    assert catalog.list_namespaces(("parent",)) == [("parent", "child")]
    catalog.create_table(("parent", "child", "t"), schema=catalog_schema())
    assert catalog.load_table(("parent", "child", "t")).name() == ("parent", "child", "t")
    # a client that ignores the setting and joins with 0x1F reaches the same table
    r = httpx.get(f"{dot_server.url}{warehouse['prefix']}/namespaces/parent%1Fchild/tables/t")
    assert r.status_code == 200, r.text


def test_slashes_in_names_work_with_an_advertised_separator(dot_server, warehouse):
    catalog = RestCatalog("dots-and-slashes", uri=f"{dot_server.url}/catalog", warehouse=warehouse["name"])
    catalog.create_namespace(("top/level",))
    catalog.create_namespace(("top/level", "a/b"))
    catalog.create_table(("top/level", "a/b", "t/1"), schema=catalog_schema())
    assert catalog.load_table(("top/level", "a/b", "t/1")).name() == ("top/level", "a/b", "t/1")
    assert catalog.list_tables(("top/level", "a/b")) == [("top/level", "a/b", "t/1")]
    # the same table through the unit separator, and through the advertised one percent-encoded
    for namespace in ("top%2Flevel%1Fa%2Fb", "top%2Flevel%2Ea%2Fb"):
        r = httpx.get(f"{dot_server.url}{warehouse['prefix']}/namespaces/{namespace}/tables/t%2F1")
        assert r.status_code == 200, (namespace, r.text)
    catalog.drop_table(("top/level", "a/b", "t/1"))
    catalog.drop_namespace(("top/level", "a/b"))
    catalog.drop_namespace(("top/level",))
