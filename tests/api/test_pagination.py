"""Paged lists: keyset pages that stay stable while other clients add rows."""

import threading

import pytest
from support import SCHEMA


def _create_tables(client, prefix: str, namespace: str, names) -> None:
    for name in names:
        r = client.post(f"{prefix}/namespaces/{namespace}/tables", json={"name": name, "schema": SCHEMA})
        assert r.status_code == 200, r.text


def _pages(client, url: str, key: str, size: int | None, **extra) -> tuple[list, int]:
    served, token, pages = [], "", 0
    while token is not None:
        params = {"pageToken": token, **extra} | ({"pageSize": size} if size else {})
        body = client.get(url, params=params).json()
        served += body[key]
        token = body["next-page-token"]
        pages += 1
    return served, pages


def test_without_page_token_the_whole_list_comes_back(client, warehouse):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    _create_tables(client, warehouse["prefix"], "ns", [f"t{i:02d}" for i in range(12)])
    body = client.get(f"{warehouse['prefix']}/namespaces/ns/tables", params={"pageSize": 5}).json()
    assert len(body["identifiers"]) == 12
    assert body["next-page-token"] is None


def test_tables_are_served_in_pages_of_the_asked_size(client, warehouse):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    names = [f"t{i:02d}" for i in range(12)]
    _create_tables(client, warehouse["prefix"], "ns", names)
    served, pages = _pages(client, f"{warehouse['prefix']}/namespaces/ns/tables", "identifiers", 5)
    assert [i["name"] for i in served] == names
    assert pages == 3  # 5 + 5 + 2: the last page carries no token


def test_namespaces_and_children_are_paged(client, warehouse):
    for i in range(7):
        client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [f"n{i}"]})
        client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["n0", f"c{i}"]})
    top, pages = _pages(client, f"{warehouse['prefix']}/namespaces", "namespaces", 3)
    assert top == [[f"n{i}"] for i in range(7)] and pages == 3
    children, _ = _pages(client, f"{warehouse['prefix']}/namespaces", "namespaces", 2, parent="n0")
    assert children == [["n0", f"c{i}"] for i in range(7)]


def test_empty_token_uses_the_default_page_size(client, warehouse):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    _create_tables(client, warehouse["prefix"], "ns", ["a", "b"])
    body = client.get(f"{warehouse['prefix']}/namespaces/ns/tables", params={"pageToken": ""}).json()
    assert [i["name"] for i in body["identifiers"]] == ["a", "b"]
    assert body["next-page-token"] is None


def test_pages_are_stable_while_tables_are_created_concurrently(client, warehouse, server):
    import httpx

    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    before = [f"t{i:03d}" for i in range(0, 60, 2)]
    _create_tables(client, warehouse["prefix"], "ns", before)
    stop = threading.Event()

    def creator():
        with httpx.Client(base_url=server.url, timeout=60) as other:
            # odd names land between the pages being read
            _create_tables(other, warehouse["prefix"], "ns", [f"t{i:03d}" for i in range(1, 60, 2)])
        stop.set()

    thread = threading.Thread(target=creator)
    thread.start()
    served, _ = _pages(client, f"{warehouse['prefix']}/namespaces/ns/tables", "identifiers", 4)
    thread.join()
    names = [i["name"] for i in served]
    assert len(names) == len(set(names)), "a table was served twice"
    assert names == sorted(names)
    assert set(before) <= set(names), "a table that existed throughout was skipped"


@pytest.mark.parametrize("params", [
    {"pageToken": "not-a-token!"},
    {"pageToken": "eyJ2IjoxfQ"},  # a well-formed JSON without "after"
    {"pageToken": "", "pageSize": "0"},
    {"pageToken": "", "pageSize": "-3"},
    {"pageToken": "", "pageSize": "many"},
])
def test_bad_paging_parameters_are_400(client, warehouse, params):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    for url in (f"{warehouse['prefix']}/namespaces", f"{warehouse['prefix']}/namespaces/ns/tables"):
        r = client.get(url, params=params)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["type"] == "BadRequestException"


def test_a_token_of_another_list_is_refused(client, warehouse):
    for name in ("a", "b"):
        client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [name]})
    token = client.get(f"{warehouse['prefix']}/namespaces", params={"pageToken": "", "pageSize": 1}).json()[
        "next-page-token"]
    assert token
    r = client.get(f"{warehouse['prefix']}/namespaces/a/tables", params={"pageToken": token})
    assert r.status_code == 400, r.text


def test_page_size_is_capped_by_the_maximum(client, warehouse):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    r = client.get(f"{warehouse['prefix']}/namespaces/ns/tables", params={"pageToken": "", "pageSize": 10**9})
    assert r.status_code == 200 and r.json() == {"identifiers": [], "next-page-token": None}


def test_search_tables_and_views_by_name_prefix(client, warehouse):
    """GET /management/v1/warehouse/{id}/search-tabulars: live tables and views whose name starts with the prefix,
    any case, across namespaces, in name order, paged; dropped ones are not found; bad prefixes are 400."""
    p = warehouse["prefix"]
    for ns in ("a", "b"):
        assert client.post(f"{p}/namespaces", json={"namespace": [ns]}).status_code == 200
    names = [("a", "Orders_2024"), ("b", "orders_2025"), ("a", "ordinal"), ("b", "customers"), ("a", "orders_x")]
    for ns, name in names:
        assert client.post(f"{p}/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA}).status_code == 200
    assert client.delete(f"{p}/namespaces/a/tables/orders_x").status_code == 204
    url = f"/management/v1/warehouse/{warehouse['id']}/search-tabulars"
    found, token = [], None
    while True:
        r = client.get(url, params={"prefix": "ORDER", "pageSize": 1, **({"pageToken": token} if token else {})})
        assert r.status_code == 200, r.text
        found += [(t["namespace"], t["name"], t["type"]) for t in r.json()["tabulars"]]
        token = r.json()["next-page-token"]
        if not token:
            break
    assert found == [(["a"], "Orders_2024", "table"), (["b"], "orders_2025", "table")]
    assert [t["name"] for t in client.get(url, params={"prefix": "ord"}).json()["tabulars"]] == \
        ["Orders_2024", "orders_2025", "ordinal"]
    for bad in ({}, {"prefix": ""}, {"prefix": "a\x00"}, {"prefix": "x" * 300}):
        r = client.get(url, params=bad)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["type"] == "BadRequestException"
    other = client.get("/management/v1/warehouse/00000000-0000-0000-0000-00000000abcd/search-tabulars",
                       params={"prefix": "o"})
    assert other.status_code == 404
