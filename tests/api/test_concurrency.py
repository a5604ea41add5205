"""Invariants under concurrent clients: unique names, one winner per base version, no lost update,
read-your-writes from any API process."""

import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
from support import SCHEMA

RACERS = 16


def _race(url: str, calls):
    """Runs each call (client -> response) at once on its own connection; returns the responses."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        with httpx.Client(base_url=url, timeout=60) as c:
            barrier.wait()
            return call(c)

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def test_one_table_per_name_under_concurrent_creates(server, client, warehouse, db):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["race"]})
    responses = _race(server.url, [
        lambda c: c.post(f"{p}/namespaces/race/tables", json={"name": "same", "schema": SCHEMA})] * RACERS)
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [409] * (RACERS - 1), codes
    rows = db.execute("SELECT count(*) FROM ll_tabulars WHERE warehouse_id = %s AND name = 'same'"
                      " AND dropped_at IS NULL", (warehouse["id"],)).fetchone()[0]
    assert rows == 1
    created = db.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE '%%Table.Created'"
                         " AND convert_from(state, 'UTF8') LIKE %s",
                         (f'%{uuid.UUID(warehouse["id"]).hex}%"name":"same"%',)).fetchone()[0]
    assert created == 1


def test_one_namespace_per_name_under_concurrent_creates(server, warehouse, db):
    p = warehouse["prefix"]
    responses = _race(server.url, [lambda c: c.post(f"{p}/namespaces", json={"namespace": ["dup"]})] * RACERS)
    assert sorted(r.status_code for r in responses) == [200] + [409] * (RACERS - 1)
    assert db.execute("SELECT count(*) FROM ll_namespaces WHERE warehouse_id = %s AND path = ARRAY['dup']",
                      (warehouse["id"],)).fetchone()[0] == 1


def test_one_warehouse_per_name_under_concurrent_creates(server, tmp_path, db):
    name = f"race-{uuid.uuid4().hex[:8]}"
    calls = [lambda c, i=i: c.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{tmp_path}/{i}"}})
        for i in range(RACERS)]
    responses = _race(server.url, calls)
    assert sorted(r.status_code for r in responses) == [201] + [409] * (RACERS - 1)
    assert db.execute("SELECT count(*) FROM ll_warehouses WHERE name = %s", (name,)).fetchone()[0] == 1


def test_different_names_never_contend(server, client, warehouse):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["many"]})
    responses = _race(server.url, [
        lambda c, i=i: c.post(f"{p}/namespaces/many/tables", json={"name": f"t{i}", "schema": SCHEMA})
        for i in range(RACERS)])
    assert [r.status_code for r in responses] == [200] * RACERS
    names = {i["name"] for i in client.get(f"{p}/namespaces/many/tables").json()["identifiers"]}
    assert names == {f"t{i}" for i in range(RACERS)}


def _snapshot_commit(base_snapshot, snapshot_id, sequence, location):
    return {
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": base_snapshot}],
        "updates": [
            {
                "action": "add-snapshot",
                "snapshot": {
                    "snapshot-id": snapshot_id,
                    "parent-snapshot-id": base_snapshot,
                    "sequence-number": sequence,
                    "timestamp-ms": 1_700_000_000_000 + sequence,
                    "manifest-list": f"{location}/metadata/snap-{snapshot_id}.avro",
                    "summary": {"operation": "append"},
                    "schema-id": 0,
                },
            },
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id},
        ],
    }


def test_exactly_one_commit_wins_per_base_version(server, client, table_factory, log_length):
    path = table_factory("commits", "t")
    location = client.get(path).json()["metadata"]["location"]
    before = log_length()
    responses = _race(server.url, [
        lambda c, i=i: c.post(path, json=_snapshot_commit(None, 1000 + i, 1, location)) for i in range(RACERS)])
    codes = sorted(r.status_code for r in responses)
    assert codes == [200] + [409] * (RACERS - 1), codes
    assert all(r.json()["error"]["type"] == "CommitFailedException" for r in responses if r.status_code == 409)
    winner = next(r for r in responses if r.status_code == 200).json()["metadata"]["current-snapshot-id"]
    assert client.get(path).json()["metadata"]["current-snapshot-id"] == winner
    assert log_length() == before + 1
    # the losers' metadata files were removed: only the created and the winning versions remain
    metadata_dir = location[len("file://"):] + "/metadata"
    assert len([f for f in os.listdir(metadata_dir) if f.endswith(".metadata.json")]) == 2


def test_no_update_is_lost_when_clients_retry(server, client, table_factory):
    path = table_factory("commits", "lost")
    location = client.get(path).json()["metadata"]["location"]
    per_client, clients = 5, 8

    def worker(c, k):
        for n in range(per_client):
            snapshot_id = 10_000 * (k + 1) + n
            for _ in range(200):
                meta = c.get(path).json()["metadata"]
                base = meta.get("current-snapshot-id")
                seq = meta.get("last-sequence-number", 0) + 1
                r = c.post(path, json=_snapshot_commit(base, snapshot_id, seq, location))
                if r.status_code == 200:
                    break
                assert r.status_code == 409, r.text
            else:
                raise AssertionError("a client never got its commit in")
        return True

    assert all(_race(server.url, [lambda c, k=k: worker(c, k) for k in range(clients)]))
    meta = client.get(path).json()["metadata"]
    assert len(meta["snapshots"]) == per_client * clients
    # the main branch's ancestry contains every snapshot: each commit built on the one before
    by_id = {s["snapshot-id"]: s for s in meta["snapshots"]}
    chain, current = [], meta["current-snapshot-id"]
    while current is not None:
        chain.append(current)
        current = by_id[current].get("parent-snapshot-id")
    assert len(chain) == per_client * clients


def test_non_conflicting_concurrent_property_commits_all_apply(server, client, table_factory):
    path = table_factory("commits", "props")
    table_uuid = client.get(path).json()["metadata"]["table-uuid"]
    responses = _race(server.url, [
        lambda c, i=i: c.post(path, json={"requirements": [{"type": "assert-table-uuid", "uuid": table_uuid}],
                                          "updates": [{"action": "set-properties", "updates": {f"k{i}": "v"}}]})
        for i in range(8)])
    assert [r.status_code for r in responses] == [200] * 8
    properties = client.get(path).json()["metadata"]["properties"]
    assert {f"k{i}" for i in range(8)} <= set(properties)


def test_read_your_writes_from_any_api_process(server, second_server, warehouse):
    p = warehouse["prefix"]
    with httpx.Client(base_url=server.url) as a, httpx.Client(base_url=second_server.url) as b:
        for i in range(30):
            writer, reader = (a, b) if i % 2 == 0 else (b, a)
            assert writer.post(f"{p}/namespaces", json={"namespace": [f"ryw{i}"]}).status_code == 200
            assert reader.get(f"{p}/namespaces/ryw{i}").status_code == 200
            created = writer.post(f"{p}/namespaces/ryw{i}/tables", json={"name": "t", "schema": SCHEMA})
            assert created.status_code == 200
            committed = writer.post(f"{p}/namespaces/ryw{i}/tables/t", json={
                "requirements": [], "updates": [{"action": "set-properties", "updates": {"n": str(i)}}]})
            assert committed.status_code == 200
            loaded = reader.get(f"{p}/namespaces/ryw{i}/tables/t").json()
            assert loaded["metadata-location"] == committed.json()["metadata-location"]
            assert loaded["metadata"]["properties"]["n"] == str(i)


def test_no_table_outlives_its_namespace_when_drop_and_create_race(server, client, warehouse, db):
    p = warehouse["prefix"]
    for round_ in range(8):
        ns = f"victim{round_}"
        assert client.post(f"{p}/namespaces", json={"namespace": [ns]}).status_code == 200
        calls = [lambda c: c.delete(f"{p}/namespaces/{ns}")] + [
            lambda c, i=i: c.post(f"{p}/namespaces/{ns}/tables", json={"name": f"t{i}", "schema": SCHEMA})
            for i in range(7)]
        drop, *creates = _race(server.url, calls)
        created = [r for r in creates if r.status_code == 200]
        assert all(r.status_code in (200, 404) for r in creates), [r.text for r in creates]
        assert (drop.status_code == 204 and not created) or (drop.status_code == 409 and created), \
            (drop.status_code, len(created))
    orphans = db.execute("SELECT count(*) FROM ll_tabulars t WHERE t.dropped_at IS NULL AND NOT EXISTS"
                         " (SELECT 1 FROM ll_namespaces n WHERE n.id = t.namespace_id)").fetchone()[0]
    assert orphans == 0
