"""ETags and conditional loads (If-None-Match → 304), and loadTable's snapshots=refs."""

import time

import pytest
from support import SCHEMA


def _snapshot(snapshot_id: int, parent: int | None, sequence: int) -> dict:
    return {"snapshot-id": snapshot_id, "parent-snapshot-id": parent, "sequence-number": sequence,
            "timestamp-ms": int(time.time() * 1000), "manifest-list": f"file:///nowhere/snap-{snapshot_id}.avro",
            "summary": {"operation": "append"}, "schema-id": 0}


def _append(client, path: str, snapshot_id: int, parent: int | None, sequence: int, ref: str = "main"):
    r = client.post(path, json={"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": _snapshot(snapshot_id, parent, sequence)},
        {"action": "set-snapshot-ref", "ref-name": ref, "type": "branch", "snapshot-id": snapshot_id}]})
    assert r.status_code == 200, r.text
    return r


def test_create_load_and_commit_carry_the_etag_of_what_they_return(client, warehouse):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["e"]})
    created = client.post(f"{p}/namespaces/e/tables", json={"name": "t", "schema": SCHEMA})
    loaded = client.get(f"{p}/namespaces/e/tables/t")
    assert created.headers["etag"] == loaded.headers["etag"]
    assert client.get(f"{p}/namespaces/e/tables/t").headers["etag"] == loaded.headers["etag"]
    committed = _append(client, f"{p}/namespaces/e/tables/t", 1, None, 1)
    assert committed.headers["etag"] != loaded.headers["etag"]
    assert client.get(f"{p}/namespaces/e/tables/t").headers["etag"] == committed.headers["etag"]


@pytest.mark.parametrize("query", ["", "?snapshots=all"], ids=["fast-path", "routed"])
def test_if_none_match_answers_304_until_the_table_changes(client, table_factory, query):
    path = table_factory()
    first = client.get(path + query)
    tag = first.headers["etag"]
    again = client.get(path + query, headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    # weak form and lists of tags match too; other tags do not (httpx asks for compression: the tag came weak)
    assert tag.startswith("W/")
    assert client.get(path + query, headers={"If-None-Match": f'"other", {tag.removeprefix("W/")}'}).status_code == 304
    assert client.get(path + query, headers={"If-None-Match": f'"other", {tag}'}).status_code == 304
    assert client.get(path + query, headers={"If-None-Match": '"other"'}).status_code == 200
    _append(client, path, 7, None, 1)
    changed = client.get(path + query, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    assert changed.json()["metadata"]["current-snapshot-id"] == 7


def test_snapshots_refs_returns_only_snapshots_of_branches_and_tags(client, table_factory):
    path = table_factory()
    _append(client, path, 1, None, 1)
    _append(client, path, 2, 1, 2)
    _append(client, path, 3, 2, 3)
    r = client.post(path, json={"requirements": [], "updates": [
        {"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 1}]})
    assert r.status_code == 200, r.text
    everything = client.get(path, params={"snapshots": "all"})
    refs = client.get(path, params={"snapshots": "refs"})
    assert sorted(s["snapshot-id"] for s in everything.json()["metadata"]["snapshots"]) == [1, 2, 3]
    assert sorted(s["snapshot-id"] for s in refs.json()["metadata"]["snapshots"]) == [1, 3]
    assert refs.json()["metadata"]["refs"].keys() == {"main", "v1"}
    assert refs.json()["metadata-location"] == everything.json()["metadata-location"]
    assert refs.headers["etag"] != everything.headers["etag"]
    assert client.get(path, params={"snapshots": "refs"},
                      headers={"If-None-Match": refs.headers["etag"]}).status_code == 304
    assert client.get(path, headers={"If-None-Match": refs.headers["etag"]}).status_code == 200


def test_unknown_snapshots_mode_is_400(client, table_factory):
    r = client.get(table_factory(), params={"snapshots": "some"})
    # Iceberg's reference server answers IllegalArgumentException ("Invalid snapshot mode")
    assert r.status_code == 400 and r.json()["error"]["type"] == "IllegalArgumentException"
