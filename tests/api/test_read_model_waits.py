"""A request that needs a read model at the log's head while another process is applying it (the history, the
catalog's past for time travel) waits for that process, up to LAKELEDGER__READ_MODEL_WAIT_SECONDS, then answers 503
ServiceUnavailableException, which clients retry, and appends nothing; once the other process is done, it answers.
Another process applying is played by this test holding the read model's position row."""

import uuid

import httpx
import psycopg
import pytest
from support import SCHEMA, Server


@pytest.fixture
def server(database, tmp_path):
    s = Server(database, tmp_path, LAKELEDGER__READ_MODEL_WAIT_SECONDS="1")
    try:
        yield s
    finally:
        s.stop()


def _holding(database: str, name: str) -> psycopg.Connection:
    conn = psycopg.connect(database)
    row = conn.execute("SELECT position FROM ll_projection_positions WHERE name = %s FOR UPDATE", (name,)).fetchone()
    assert row is not None
    return conn  # in its transaction until closed


def _log_length(database: str) -> int:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


@pytest.mark.parametrize("read_model", ["history", "catalog-versions"])
def test_a_read_model_another_process_holds_is_a_503_then_an_answer(server, database, tmp_path, read_model):
    with httpx.Client(base_url=server.url, timeout=30) as c:
        name = f"wait-{uuid.uuid4().hex[:8]}"
        r = c.post("/management/v1/warehouse", json={"warehouse-name": name, "storage-profile": {
            "type": "file", "location": f"file://{tmp_path / name}"}})
        assert r.status_code == 201, r.text
        warehouse_id = r.json()["warehouse-id"]
        prefix = f"/catalog/v1/{warehouse_id}"
        assert c.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200

        held = _holding(database, read_model)
        try:
            # an append the held read model has not taken in, so the request below must wait for it
            assert c.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
            head = _log_length(database)
            if read_model == "history":
                ask = lambda: c.get(f"/management/v1/warehouse/{warehouse_id}/history")  # noqa: E731
            else:
                ask = lambda: c.get("/catalog/v1/config", params={"warehouse": f"{name}@seq:{head}"})  # noqa: E731
            refused = ask()
            assert refused.status_code == 503, refused.text
            error = refused.json()["error"]
            assert error["type"] == "ServiceUnavailableException" and "retry" in error["message"]
            assert _log_length(database) == head
        finally:
            held.close()
        answered = ask()
        assert answered.status_code == 200, answered.text
        if read_model == "history":
            assert answered.json()["events"][-1]["type"] == "table.created"
        else:
            past = answered.json()["overrides"]["prefix"]
            assert c.get(f"/catalog/v1/{past}/namespaces/ns/tables").json()["identifiers"] == [
                {"namespace": ["ns"], "name": "t"}]
