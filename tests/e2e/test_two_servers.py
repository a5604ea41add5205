"""Past one machine: two `lakeledger serve` processes on different ports against one Postgres, their workers off, and
one `lakeledger workers` process publishing to a real NATS JetStream — what a load balancer in front of several
API machines sees. A write answered by one server is read at once from the other (the catalog projection commits
with the append, so nothing is sticky), and every event appended through either server is published exactly once.
The database is the test's own, so the log holds only what these processes wrote."""

import threading
import uuid

import httpx
import pytest
from jetstream_log import assert_exactly_once, head, positions, published_at_head
from support import SCHEMA, Server, WorkersProcess, wait_until


@pytest.fixture
def cluster(database, nats_server, tmp_path):
    """(server A, server B, the workers process, a hard-delete file warehouse's prefix)."""
    a = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="4")
    b = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="4")
    workers = WorkersProcess(database, tmp_path, LAKELEDGER__NATS_ADDRESS=nats_server.url)
    try:
        with httpx.Client(base_url=a.url, timeout=60) as c:
            r = c.post("/management/v1/warehouse", json={
                "warehouse-name": "shared", "delete-profile": {"type": "hard"},
                "storage-profile": {"type": "file", "location": f"file://{tmp_path / 'wh'}"}})
            assert r.status_code == 201, r.text
        yield a, b, workers, f"/catalog/v1/{r.json()['warehouse-id']}", r.json()["warehouse-id"]
    finally:
        workers.stop()
        b.stop()
        a.stop()


def _tables(client: httpx.Client, prefix: str, ns: str) -> list[str]:
    r = client.get(f"{prefix}/namespaces/{ns}/tables")
    assert r.status_code == 200, r.text
    return [i["name"] for i in r.json()["identifiers"]]


def _lifecycle(writer: httpx.Client, reader: httpx.Client, prefix: str, ns: str, commits: int) -> None:
    """One namespace and one table through their whole life, written on ``writer``; after each answer the
    ``reader`` (the other server) must already see it."""
    t = f"{prefix}/namespaces/{ns}/tables"
    assert writer.post(f"{prefix}/namespaces", json={"namespace": [ns]}).status_code == 200
    assert reader.get(f"{prefix}/namespaces/{ns}").status_code == 200

    created = writer.post(t, json={"name": "t", "schema": SCHEMA})
    assert created.status_code == 200, created.text
    loaded = reader.get(f"{t}/t")
    assert loaded.status_code == 200, loaded.text
    assert loaded.json()["metadata-location"] == created.json()["metadata-location"]
    etag = loaded.headers["etag"]

    for i in range(commits):
        committed = writer.post(f"{t}/t", json={"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"n": str(i)}}]})
        assert committed.status_code == 200, committed.text
        # the reader's cached ETag names the previous metadata file: a 304 here would be a stale read
        loaded = reader.get(f"{t}/t", headers={"If-None-Match": etag})
        assert loaded.status_code == 200, (loaded.status_code, loaded.text)
        assert loaded.json()["metadata-location"] == committed.json()["metadata-location"]
        assert loaded.json()["metadata"]["properties"]["n"] == str(i)
        assert reader.get(f"{t}/t", headers={"If-None-Match": loaded.headers["etag"]}).status_code == 304
        etag = loaded.headers["etag"]

    renamed = writer.post(f"{prefix}/tables/rename", json={"source": {"namespace": [ns], "name": "t"},
                                                            "destination": {"namespace": [ns], "name": "u"}})
    assert renamed.status_code == 204, renamed.text
    assert reader.get(f"{t}/t").status_code == 404
    moved = reader.get(f"{t}/u")
    assert moved.status_code == 200 and moved.json()["metadata-location"] == committed.json()["metadata-location"]
    assert _tables(reader, prefix, ns) == ["u"]

    assert writer.delete(f"{t}/u", params={"purgeRequested": "false"}).status_code == 204
    assert reader.get(f"{t}/u").status_code == 404
    assert _tables(reader, prefix, ns) == []
    assert writer.delete(f"{prefix}/namespaces/{ns}").status_code == 204
    assert reader.get(f"{prefix}/namespaces/{ns}").status_code == 404


def test_a_write_on_one_server_is_read_at_once_on_the_other(cluster):
    a, b, _, prefix, warehouse_id = cluster
    with httpx.Client(base_url=a.url, timeout=60) as ca, httpx.Client(base_url=b.url, timeout=60) as cb:
        for round_ in range(12):
            writer, reader = (ca, cb) if round_ % 2 == 0 else (cb, ca)
            _lifecycle(writer, reader, prefix, f"ryw{round_}", commits=3)
        # the history read model is caught up by the reader before it answers, whoever appended
        last = cb.get(f"/management/v1/warehouse/{warehouse_id}/history",
                      params={"type": "namespace.dropped", "pageSize": 100})
        assert last.status_code == 200, last.text
        assert [e["entity"]["name"] for e in last.json()["events"]] == [[f"ryw{i}"] for i in range(12)]


def test_concurrent_writers_on_both_servers_read_their_writes_and_publish_each_event_once(cluster, database,
                                                                                          nats_server):
    a, b, _, prefix, _ = cluster
    errors: list[BaseException] = []

    def writer(own: Server, other: Server, name: str) -> None:
        try:
            with httpx.Client(base_url=own.url, timeout=60) as w, httpx.Client(base_url=other.url, timeout=60) as r:
                for i in range(8):
                    _lifecycle(w, r, prefix, f"{name}_{i}", commits=4)
        except BaseException as e:  # surfaced below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(own, other, f"w{k}_{uuid.uuid4().hex[:6]}"))
               for k, (own, other) in enumerate([(a, b), (b, a), (a, b), (b, a)])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads), "a writer did not finish in 300 s"
    assert not errors, errors[0]

    messages, expected = published_at_head(nats_server.url, database)
    # 32 lifecycles of 2 namespace events, a creation, 4 commits, a rename and a drop; plus the warehouse's
    assert len(expected) >= 32 * 9
    assert_exactly_once(messages, expected)
    # the projections the workers run are at the head as well: nothing the two servers wrote was skipped
    names = ("catalog", "history", "expiry-schedule", "users-roles", "access-history", "tags", "purger", "cloudevents")
    wait_until(lambda: all(positions(database).get(n) == head(database) for n in names), 30,
               "every position reaching the head")
