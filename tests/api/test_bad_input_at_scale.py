"""Input sized to hurt (issue 14, point 10): a huge page size, a page token of another list, deep namespaces and
a table with 10,000 fields. Each is served or refused with a 4xx in the error model, never a 5xx, and a refusal
appends nothing."""

import base64
import json
import uuid

import httpx
import pytest
from support import SCHEMA, Server

from lakeledger.domain.names import DEFAULT_NAMESPACE_DEPTH

ENCRYPTION_KEY = "lakeledger-tests-encryption-key"


def _refused(r, status: int = 400) -> None:
    assert r.status_code == status, r.text
    assert r.json()["error"]["code"] == status


@pytest.fixture
def small_pages_server(pg_url, data_dir, server):
    """An API process on the session's database whose pages hold at most 3 rows: the cap at work without
    creating a thousand tables."""
    s = Server(pg_url, data_dir, LAKELEDGER__WORKERS="off", LAKELEDGER__MAX_PAGE_SIZE="3",
               LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY)
    yield s
    s.stop()


def test_a_page_size_of_ten_million_is_served_as_the_largest_page(client, warehouse, small_pages_server):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["big"]})
    for i in range(5):
        assert client.post(f"{p}/namespaces/big/tables", json={"name": f"t{i}", "schema": SCHEMA}).status_code == 200
    # under the default cap the whole list fits in one page
    for size in ("10000000", str(10**30)):
        r = client.get(f"{p}/namespaces/big/tables", params={"pageToken": "", "pageSize": size})
        assert r.status_code == 200, r.text
        assert len(r.json()["identifiers"]) == 5 and r.json()["next-page-token"] is None
    with httpx.Client(base_url=small_pages_server.url, timeout=60) as small:
        names, token = [], ""
        while token is not None:
            body = small.get(f"{p}/namespaces/big/tables", params={"pageToken": token, "pageSize": 10_000_000}).json()
            assert len(body["identifiers"]) <= 3
            names += [i["name"] for i in body["identifiers"]]
            token = body["next-page-token"]
        assert names == [f"t{i}" for i in range(5)]
        history = small.get(f"/management/v1/warehouse/{warehouse['id']}/history", params={"pageSize": 10_000_000})
        assert history.status_code == 200 and len(history.json()["events"]) == 3, history.text


def test_a_page_token_of_another_list_is_400(client, warehouse, tmp_path, log_length):
    p = warehouse["prefix"]
    for ns in ("a", "b"):
        client.post(f"{p}/namespaces", json={"namespace": [ns]})
    for name in ("t1", "t2", "t3"):
        client.post(f"{p}/namespaces/a/tables", json={"name": name, "schema": SCHEMA})
    client.post(f"{p}/namespaces/b/tables", json={"name": "z-only-b", "schema": SCHEMA})
    tables_token = client.get(f"{p}/namespaces/a/tables", params={"pageToken": "", "pageSize": 1}).json()[
        "next-page-token"]
    history = f"/management/v1/warehouse/{warehouse['id']}/history"
    history_token = client.get(history, params={"pageSize": 1}).json()["next-page-token"]
    assert tables_token and history_token
    other = _other_warehouse(client, tmp_path)
    before = log_length()
    for url, token, extra in [
            # another kind of list
            (f"{p}/namespaces", tables_token, {}), (f"{p}/namespaces/a/tables", history_token, {}),
            (f"{p}/namespaces/a/views", tables_token, {}),
            (history, tables_token, {}),
            (f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars", history_token, {}),
            # the same kind of list, of another namespace or warehouse, or with another filter: its key would read
            # as a position in this list, which is not what the client paging through the first one wants
            (f"{p}/namespaces/b/tables", tables_token, {}), (f"{other}/namespaces/a/tables", tables_token, {}),
            (history, history_token, {"actor": "someone-else"}),
            # a token of the version before tokens named their list
            (f"{p}/namespaces/a/tables", base64.urlsafe_b64encode(
                json.dumps({"v": 1, "after": "t1"}).encode()).decode(), {}),
            (f"{p}/namespaces/a/tables", base64.urlsafe_b64encode(
                json.dumps({"v": 1, "after": {"x": [1] * 1000}}).encode()).decode(), {})]:
        _refused(client.get(url, params={"pageToken": token, **extra}))
    # the list it came from goes on with it, whatever the page size
    r = client.get(f"{p}/namespaces/a/tables", params={"pageToken": tables_token, "pageSize": 5})
    assert r.status_code == 200 and [i["name"] for i in r.json()["identifiers"]] == ["t2", "t3"]
    assert client.get(history, params={"pageToken": history_token}).status_code == 200
    assert log_length() == before


def _other_warehouse(client, tmp_path) -> str:
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:12]}",
        "storage-profile": {"type": "file", "location": f"file://{tmp_path}/other"}})
    assert r.status_code == 201, r.text
    return f"/catalog/v1/{r.json()['warehouse-id']}"


def test_namespaces_deeper_than_the_limit_are_400_and_the_deepest_allowed_work(client, warehouse, log_length):
    p = warehouse["prefix"]
    before = log_length()
    hundred = [f"l{i}" for i in range(100)]
    _refused(client.post(f"{p}/namespaces", json={"namespace": hundred}))
    encoded = "%1F".join(hundred)
    for method, url in [("GET", f"{p}/namespaces/{encoded}"), ("HEAD", f"{p}/namespaces/{encoded}"),
                        ("GET", f"{p}/namespaces/{encoded}/tables"),
                        ("POST", f"{p}/namespaces/{encoded}/tables"),
                        ("GET", f"{p}/namespaces/{encoded}/tables/t"),
                        ("DELETE", f"{p}/namespaces/{encoded}")]:
        body = {"name": "t", "schema": SCHEMA} if method == "POST" else None
        r = client.request(method, url, json=body)
        assert r.status_code == 400, (method, url, r.status_code, r.text)
        if method != "HEAD":
            assert r.json()["error"]["code"] == 400 and "deeper than" in r.json()["error"]["message"], r.text
    r = client.get(f"{p}/namespaces", params={"parent": "\x1f".join(hundred)})
    _refused(r)
    assert log_length() == before
    # every level up to the limit of new namespaces (LAKELEDGER__MAX_NAMESPACE_DEPTH, 5 by default as in Lakekeeper;
    # tests/api/test_namespace_depth.py) can be created, listed and hold a table
    levels = [f"l{i}" for i in range(DEFAULT_NAMESPACE_DEPTH)]
    for depth in range(1, DEFAULT_NAMESPACE_DEPTH + 1):
        assert client.post(f"{p}/namespaces", json={"namespace": levels[:depth]}).status_code == 200
    deepest = "%1F".join(levels)
    assert client.post(f"{p}/namespaces/{deepest}/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    listed = client.get(f"{p}/namespaces", params={"parent": "\x1f".join(levels[:-1])}).json()["namespaces"]
    assert listed == [levels]
    assert client.get(f"{p}/namespaces/{deepest}/tables").json()["identifiers"] == [
        {"namespace": levels, "name": "t"}]
    _refused(client.post(f"{p}/namespaces", json={"namespace": [*levels, "one-too-many"]}))


def test_a_table_with_ten_thousand_fields_is_created_loaded_and_committed(client, warehouse, log_length):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["wide"]})
    fields = [{"id": i, "name": f"c{i}", "required": False, "type": "long"} for i in range(1, 10_001)]
    schema = {"type": "struct", "schema-id": 0, "fields": fields}
    r = client.post(f"{p}/namespaces/wide/tables", json={"name": "t", "schema": schema})
    assert r.status_code == 200, r.text[:500]
    loaded = client.get(f"{p}/namespaces/wide/tables/t")
    assert loaded.status_code == 200
    metadata = loaded.json()["metadata"]
    assert len(metadata["schemas"][0]["fields"]) == 10_000 and metadata["last-column-id"] == 10_000
    # an append this size leaves pipeline mode (lakeledger/eventstore/recorder.py); a conflict on it is still a 409
    before = log_length()
    again = client.post(f"{p}/namespaces/wide/tables", json={"name": "t", "schema": schema})
    assert again.status_code == 409, again.text[:500]
    assert log_length() == before
    wider = {"type": "struct", "schema-id": 1,
             "fields": [*fields, {"id": 10_001, "name": "extra", "required": False, "type": "string"}]}
    r = client.post(f"{p}/namespaces/wide/tables/t", json={"requirements": [], "updates": [
        {"action": "add-schema", "schema": wider, "last-column-id": 10_001},
        {"action": "set-current-schema", "schema-id": -1}]})
    assert r.status_code == 200, r.text[:500]
    assert r.json()["metadata"]["current-schema-id"] == 1
    # refused when wrong, whatever the width: a duplicate field id is a 400 and appends nothing
    before = log_length()
    clash = {"type": "struct", "schema-id": 2, "fields": [*fields, {"id": 1, "name": "dup", "required": False,
                                                                    "type": "long"}]}
    r = client.post(f"{p}/namespaces/wide/tables/t", json={"requirements": [], "updates": [
        {"action": "add-schema", "schema": clash}]})
    assert 400 <= r.status_code < 500, r.text[:500]
    assert log_length() == before
