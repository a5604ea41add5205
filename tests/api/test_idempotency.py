"""Idempotency-Key: retries get the first final answer, and a change is never applied twice."""

import signal
import threading
import time
import uuid

import httpx
import psycopg
import pytest
from support import SCHEMA, Server, wait_until

from lakeledger.domain.idempotency import key_aggregate_id

KEY_TOPIC = "lakeledger.domain.idempotency:IdempotencyKey.Used"


def _key() -> str:
    return str(uuid.uuid4())


def test_config_advertises_the_key_lifetime(client, warehouse):
    config = client.get("/catalog/v1/config", params={"warehouse": warehouse["name"]}).json()
    assert config["idempotency-key-lifetime"] == "PT30M"


def test_a_retried_create_is_answered_once_and_applied_once(client, warehouse, db, log_length):
    key = _key()
    url = f"{warehouse['prefix']}/namespaces"
    first = client.post(url, json={"namespace": ["once"]}, headers={"Idempotency-Key": key, "x-request-id": "r-1"})
    assert first.status_code == 200, first.text
    after_first = log_length()
    retry = client.post(url, json={"namespace": ["once"]}, headers={"Idempotency-Key": key, "x-request-id": "r-2"})
    assert retry.status_code == 200 and retry.content == first.content
    assert retry.headers["idempotent-replayed"] == "true"
    assert retry.headers["x-request-id"] == "r-2"
    assert log_length() == after_first
    # without the key the same request is a new one: the namespace exists
    assert client.post(url, json={"namespace": ["once"]}).status_code == 409
    recorded = db.execute("SELECT state FROM lakeledger_events WHERE topic = %s AND originator_id = %s",
                          (KEY_TOPIC, key_aggregate_id(uuid.UUID(key)))).fetchall()
    assert len(recorded) == 1
    assert b"r-1" in bytes(recorded[0][0])  # the key is recorded with the request that made the change


def test_a_retried_commit_is_not_applied_twice(client, table_factory, log_length):
    path = table_factory()
    key = _key()
    snapshot = {"snapshot-id": 42, "sequence-number": 1, "timestamp-ms": int(time.time() * 1000),
                "manifest-list": "file:///nowhere/snap-42.avro", "summary": {"operation": "append"}, "schema-id": 0}
    body = {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 42}]}
    first = client.post(path, json=body, headers={"Idempotency-Key": key})
    assert first.status_code == 200, first.text
    before = log_length()
    retry = client.post(path, json=body, headers={"Idempotency-Key": key})
    assert retry.status_code == 200 and retry.json() == first.json()
    assert retry.headers["etag"] == first.headers["etag"]
    assert log_length() == before
    # applied again without the key, the same snapshot is refused: the retry above really did not run
    assert client.post(path, json=body).status_code == 400
    assert len(client.get(path).json()["metadata"]["snapshots"]) == 1


def test_a_final_error_is_replayed_not_re_run(client, warehouse, table_factory):
    table_factory("ns", "t")
    key = _key()
    url = f"{warehouse['prefix']}/namespaces/ns/tables"
    first = client.post(url, json={"name": "t", "schema": SCHEMA}, headers={"Idempotency-Key": key})
    assert first.status_code == 409
    assert client.delete(f"{url}/t").status_code == 204
    retry = client.post(url, json={"name": "t", "schema": SCHEMA}, headers={"Idempotency-Key": key})
    assert retry.status_code == 409 and retry.content == first.content
    assert client.get(f"{url}/t").status_code == 404  # the retry created nothing


def test_a_retried_drop_answers_204_again(client, warehouse, table_factory):
    path = table_factory()
    key = _key()
    assert client.delete(path, headers={"Idempotency-Key": key}).status_code == 204
    assert client.delete(path, headers={"Idempotency-Key": key}).status_code == 204
    assert client.delete(path).status_code == 404


def test_a_key_reused_for_another_request_is_refused(client, warehouse, log_length):
    key = _key()
    url = f"{warehouse['prefix']}/namespaces"
    assert client.post(url, json={"namespace": ["a"]}, headers={"Idempotency-Key": key}).status_code == 200
    before = log_length()
    other = client.delete(f"{url}/a", headers={"Idempotency-Key": key})
    assert other.status_code == 422 and other.json()["error"]["type"] == "UnprocessableEntityException"
    assert log_length() == before
    assert client.get(f"{url}/a").status_code == 200


def test_a_malformed_key_is_400(client, warehouse, log_length):
    before = log_length()
    r = client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["k"]},
                    headers={"Idempotency-Key": "not-a-uuid"})
    assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException"
    assert log_length() == before


def test_concurrent_copies_of_one_request_apply_once_in_two_processes(server, second_server, warehouse, db):
    key = _key()
    url = f"{warehouse['prefix']}/namespaces"
    with httpx.Client(base_url=server.url, timeout=60) as c:
        c.post(url, json={"namespace": ["race"]})
    results, barrier = [], threading.Barrier(8)

    def send(i):
        base = (server, second_server)[i % 2].url
        with httpx.Client(base_url=base, timeout=60) as c:
            barrier.wait()
            r = c.post(f"{url}/race/tables", json={"name": "t", "schema": SCHEMA}, headers={"Idempotency-Key": key})
            results.append((r.status_code, r.json().get("metadata-location")))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {status for status, _ in results} == {200}, results
    assert len({location for _, location in results}) == 1
    created = db.execute("SELECT count(*) FROM ll_tabulars WHERE warehouse_id = %s", (uuid.UUID(warehouse["id"]),))
    assert created.fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM lakeledger_events WHERE originator_id = %s",
                      (key_aggregate_id(uuid.UUID(key)),)).fetchone()[0] == 1


def test_a_key_reused_with_another_body_is_422_and_appends_nothing(client, warehouse, log_length):
    """The issue 27 report: create namespace A, then B with the same key, was answered with A's answer."""
    key = _key()
    url = f"{warehouse['prefix']}/namespaces"
    first = client.post(url, json={"namespace": ["a"]}, headers={"Idempotency-Key": key})
    assert first.status_code == 200, first.text
    before = log_length()
    other = client.post(url, json={"namespace": ["b"]}, headers={"Idempotency-Key": key})
    assert other.status_code == 422, other.text
    assert other.json()["error"]["type"] == "UnprocessableEntityException"
    assert "idempotent-replayed" not in other.headers
    assert log_length() == before
    assert client.get(f"{url}/b").status_code == 404
    # the request it was used with is still answered
    again = client.post(url, json={"namespace": ["a"]}, headers={"Idempotency-Key": key})
    assert again.status_code == 200 and again.content == first.content


def test_a_key_reused_with_another_query_is_422(client, table_factory, log_length):
    path = table_factory()
    key = _key()
    assert client.delete(path, params={"purgeRequested": "false"}, headers={"Idempotency-Key": key}).status_code == 204
    assert table_factory() == path  # a new table at the same name
    before = log_length()
    other = client.delete(path, params={"purgeRequested": "true"}, headers={"Idempotency-Key": key})
    assert other.status_code == 422, other.text
    assert log_length() == before
    assert client.get(path).status_code == 200  # the new table was not dropped


def test_a_key_raced_by_two_different_requests_applies_one_and_refuses_the_other(server, second_server, warehouse,
                                                                                db):
    """Two different requests with one key, at once, on two processes: one is applied, the other is 422 whichever
    moment it reaches the key (before the first's answer is kept, or after)."""
    url = f"{warehouse['prefix']}/namespaces"
    for _ in range(10):
        key = _key()
        names = [f"k{uuid.uuid4().hex[:8]}", f"k{uuid.uuid4().hex[:8]}"]
        results, barrier = {}, threading.Barrier(2)

        def send(i):
            with httpx.Client(base_url=(server, second_server)[i].url, timeout=60) as c:
                barrier.wait()
                results[i] = c.post(url, json={"namespace": [names[i]]}, headers={"Idempotency-Key": key})

        threads = [threading.Thread(target=send, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(r.status_code for r in results.values()) == [200, 422], [r.text for r in results.values()]
        won = next(i for i, r in results.items() if r.status_code == 200)
        with httpx.Client(base_url=server.url, timeout=60) as c:
            assert [c.get(f"{url}/{n}").status_code for n in names] == [200 if i == won else 404 for i in range(2)]


LOST = {  # what is created, where, and what the answer from the log says of it
    "namespace": ("namespaces", {"namespace": ["lost"]}, {"namespace": ["other"]},
                  lambda answer: answer["namespace"] == ["lost"], "namespaces/other", "Namespace.Created"),
    "table": ("namespaces/ns/tables", {"name": "lost", "schema": SCHEMA}, {"name": "other", "schema": SCHEMA},
              lambda answer: answer["metadata-location"].endswith(".metadata.json")
              and answer["metadata"]["schemas"][0]["fields"][0]["name"] == "id", "namespaces/ns/tables/other",
              "Table.Created"),
}


@pytest.mark.parametrize("created", sorted(LOST))
def test_a_key_whose_answer_was_lost_in_a_crash_is_answered_from_the_log(created, database, tmp_path):
    """kill -9 of `serve` between the append and the kept answer. The kept answers' table is locked from here, so
    the server appends the change with its key and then waits to keep the answer; it is killed there. After the
    restart, the retry is answered from the log (200, the object as a load gives it), once, and kept."""
    where, body, other_body, as_created, other_path, created_topic = LOST[created]
    server = Server(database, tmp_path, LAKELEDGER__WORKERS="off")
    key = _key()
    with httpx.Client(base_url=server.url, timeout=60) as c:
        r = c.post("/management/v1/warehouse", json={
            "warehouse-name": "crash", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text
        prefix = f"/catalog/v1/{r.json()['warehouse-id']}"
        assert c.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
        url = f"{prefix}/{where}"
    answered: list = []
    with psycopg.connect(database, autocommit=True) as db, psycopg.connect(database) as lock:
        lock.execute("LOCK TABLE ll_idempotent_responses IN SHARE MODE")  # reads go on; the answer's insert waits

        def send():
            with httpx.Client(base_url=server.url, timeout=60) as c:
                try:
                    answered.append(c.post(url, json=body, headers={"Idempotency-Key": key}))
                except httpx.HTTPError as exc:
                    answered.append(exc)

        sender = threading.Thread(target=send)
        sender.start()
        waiting = ("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
                   " AND query LIKE 'INSERT INTO ll_idempotent_responses%%'")
        wait_until(lambda: db.execute("SELECT 1 FROM lakeledger_events WHERE originator_id = %s",
                                      (key_aggregate_id(uuid.UUID(key)),)).fetchone() is not None
                   and db.execute(waiting).fetchone() is not None, 30, "the append, then the answer's insert waiting")
        server.stop(signal.SIGKILL)
        # the killed server's session, still waiting for the lock, goes with it, as it would on a real crash
        for (pid,) in db.execute(waiting).fetchall():
            db.execute("SELECT pg_terminate_backend(%s)", (pid,))
        lock.rollback()
        sender.join(30)
        assert answered and not isinstance(answered[0], httpx.Response), answered  # the client never got it
        assert db.execute("SELECT count(*) FROM ll_idempotent_responses WHERE key = %s",
                          (uuid.UUID(key),)).fetchone()[0] == 0
        events = db.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]

        restarted = Server(database, tmp_path, LAKELEDGER__WORKERS="off")
        try:
            with httpx.Client(base_url=restarted.url, timeout=60) as c:
                retry = c.post(url, json=body, headers={"Idempotency-Key": key})
                assert retry.status_code == 200, retry.text
                assert retry.headers["idempotent-replayed"] == "true"
                assert as_created(retry.json()), retry.text
                again = c.post(url, json=body, headers={"Idempotency-Key": key})
                assert again.status_code == 200 and again.content == retry.content
                other = c.post(url, json=other_body, headers={"Idempotency-Key": key})
                assert other.status_code == 422, other.text
                assert c.get(f"{prefix}/{other_path}").status_code == 404
            assert db.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0] == events
            assert db.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE %s"
                              " AND convert_from(state, 'UTF8') LIKE '%%\"lost\"%%'",
                              (f"%{created_topic}",)).fetchone()[0] == 1
        finally:
            restarted.stop()
