"""A read model that cannot advance is an alarm, not an outage (docs/read-models.md).

The history's table is made to refuse every insert (a trigger the test adds: the writer fails on every event, as
with a bug), under a running `lakeledger serve` with its workers: the alarm is raised (the metric, and one log line
naming the read model, the event's position and type and the error, however many retries), readiness stays 200
although the history is far behind its bound, the catalog API keeps serving writes and reads, the history's own
endpoint answers 503 (not 500), and once the trigger is gone the history catches up by itself and the alarm ends."""

import re
import time
import uuid
from datetime import UTC

import httpx
import psycopg
from support import SCHEMA, Server, create_database, wait_until

REFUSE = """
CREATE FUNCTION ll_test_refuse_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'refused by the test'; END $$;
CREATE TRIGGER ll_test_refuse_history BEFORE INSERT ON ll_history
    FOR EACH ROW EXECUTE FUNCTION ll_test_refuse_history();
"""


def _metric(server: Server, name: str, projection: str) -> float | None:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    found = re.search(rf'^{name}\{{projection="{projection}"\}} (\S+)$', text, re.MULTILINE)
    return float(found.group(1)) if found else None


def _positions(database: str) -> tuple[int, int]:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT (SELECT position FROM ll_projection_positions WHERE name = 'history'),"
                            " (SELECT max(notification_id) FROM lakeledger_events)").fetchone()


def test_a_stuck_history_is_an_alarm_and_the_catalog_keeps_serving(pg_url, tmp_path):
    database = create_database(pg_url, f"stuck_{uuid.uuid4().hex[:12]}")
    s = Server(database, tmp_path, LAKELEDGER__READY_MAX_LAG_SECONDS="1")
    try:
        client = httpx.Client(base_url=s.url, timeout=30)
        assert client.get("/health/ready").status_code == 200
        assert _metric(s, "lakeledger_projection_stuck", "history") == 0
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(REFUSE)

        r = client.post("/management/v1/warehouse", json={
            "warehouse-name": "stuck", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text
        prefix = f"/catalog/v1/{r.json()['warehouse-id']}"
        assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
        assert client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t1", "schema": SCHEMA}).status_code == 200

        wait_until(lambda: _metric(s, "lakeledger_projection_stuck", "history") == 1, 30, "the alarm")
        stuck_at = _metric(s, "lakeledger_projection_stuck_position", "history")
        applied, head = _positions(database)
        assert applied < stuck_at <= head
        # retried (with a growing pause), and said once
        wait_until(lambda: (_metric(s, "lakeledger_projection_failures_total", "history") or 0) >= 3, 30,
                   "a few retries")
        lines = [line for line in s.log_path.read_text().splitlines() if "cannot advance" in line]
        assert len(lines) == 1, lines
        assert (f"Projection history cannot advance: the event at position {int(stuck_at)} (" in lines[0]
                and "refused by the test" in lines[0]), lines[0]
        # the other read models are not held up
        assert _metric(s, "lakeledger_projection_stuck", "catalog-versions") == 0

        # far beyond the readiness bound of 1 s: still ready, and the catalog API serves reads and writes
        time.sleep(2)
        ready = client.get("/health/ready")
        assert ready.status_code == 200, ready.text
        assert client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t2", "schema": SCHEMA}).status_code == 200
        assert client.get(f"{prefix}/namespaces/ns/tables/t2").status_code == 200
        listed = client.get(f"{prefix}/namespaces/ns/tables").json()["identifiers"]
        assert {i["name"] for i in listed} == {"t1", "t2"}
        # the history's own endpoint says why it cannot answer: a 503, not a 500
        history = client.get("/management/v1/history")
        assert history.status_code == 503, history.text
        assert history.json()["error"]["type"] == "ServiceUnavailableException"
        assert "history read model cannot apply the event at position" in history.json()["error"]["message"]

        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute("DROP TRIGGER ll_test_refuse_history ON ll_history")
        wait_until(lambda: _metric(s, "lakeledger_projection_stuck", "history") == 0, 60, "the alarm to end")
        wait_until(lambda: _positions(database)[0] == _positions(database)[1], 30, "the history to catch up")
        assert "Projection history advances again" in s.log_path.read_text()
        assert client.get("/management/v1/history").status_code == 200
        client.close()
    finally:
        s.stop()


def test_issue_27_s_poison_event_in_an_upgraded_log_is_served_escaped_and_rebuilt(pg_url, tmp_path):
    """The issue's sequence on a running server, the event recorded as an older version recorded it (the API refuses
    it now): a table created with a schema field named "a\\u0000". The history answers 200 with the name escaped,
    readiness stays 200, and `lakeledger rebuild` succeeds."""
    import os
    import subprocess
    import sys
    from datetime import datetime

    from lakeledger.domain.table import Table
    from lakeledger.eventstore.log import EventLog
    from lakeledger.eventstore.settings import PostgresSettings

    database = create_database(pg_url, f"poison_{uuid.uuid4().hex[:12]}")
    s = Server(database, tmp_path, LAKELEDGER__READY_MAX_LAG_SECONDS="1")
    try:
        client = httpx.Client(base_url=s.url, timeout=30)
        r = client.post("/management/v1/warehouse", json={
            "warehouse-name": "old", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text
        warehouse_id = uuid.UUID(r.json()["warehouse-id"])
        r = client.post(f"/catalog/v1/{warehouse_id}/namespaces", json={"namespace": ["ns"]})
        assert r.status_code == 200, r.text
        with psycopg.connect(database) as conn:
            namespace_id, = conn.execute("SELECT id FROM ll_namespaces WHERE warehouse_id = %s",
                                         (warehouse_id,)).fetchone()
        table_id = uuid.uuid4()
        created = Table.Created(
            originator_id=table_id, originator_version=1, timestamp=datetime.now(UTC),
            originator_topic="lakeledger.domain.table:Table", actor="anonymous", request_id="old-version",
            warehouse_id=warehouse_id, namespace_id=namespace_id, namespace=["ns"], name="t",
            location=f"file://{tmp_path}/wh/ns/t", metadata_location=f"file://{tmp_path}/wh/ns/t/m.json",
            origin="create", request={"name": "t", "schema": {"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "a\x00", "type": "long", "required": False}]}})
        log = EventLog(PostgresSettings.from_url(database), pool_size=1)
        try:
            log._app.recorder.insert_events([log._app.mapper.to_stored_event(created)])
        finally:
            log.close()

        wait_until(lambda: client.get(f"/catalog/v1/{warehouse_id}/namespaces/ns/tables").json()["identifiers"],
                   30, "the workers to apply the table to the catalog")
        history = client.get(f"/management/v1/warehouse/{warehouse_id}/history")
        assert history.status_code == 200, history.text
        created_row = [e for e in history.json()["events"] if e["type"] == "table.created"]
        assert created_row and created_row[0]["change"]["request"]["schema"]["fields"][0]["name"] == "a\ufffd"
        assert client.get("/management/v1/history").status_code == 200
        time.sleep(1.5)
        assert client.get("/health/ready").status_code == 200
        assert _metric(s, "lakeledger_projection_stuck", "history") == 0

        env = {**os.environ, "LAKELEDGER__PG_URL": database, "LAKELEDGER__DATA_DIR": str(tmp_path)}
        rebuilt = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True,
                                 text=True, timeout=300)
        assert rebuilt.returncode == 0, rebuilt.stderr
        again = client.get(f"/management/v1/warehouse/{warehouse_id}/history")
        assert again.status_code == 200 and again.json()["events"] == history.json()["events"]
        client.close()
    finally:
        s.stop()
