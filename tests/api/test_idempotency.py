"""Idempotency-Key: retries get the first final answer, and a change is never applied twice."""

import threading
import time
import uuid

import httpx
from lakeledger.domain.idempotency import key_aggregate_id
from support import SCHEMA

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
