"""A purge that fails is tried again until it goes through: the storage of an S3 warehouse is down when its table is
dropped with a purge, the purger records each attempt in the log (started, failed: the tasks API's attempts and the
task gauges show them) and its retry (``ll_purge_retries``), moves on with the log, and once the storage is back a
retry deletes the table's objects — and nothing beside them — and records Purged once. Its own MinIO (stopped and
started again on the same port and data), its own database, an API without workers and a workers process retrying
every second."""

from collections import Counter

import httpx
import psycopg
from prometheus_client.parser import text_string_to_metric_families
from support import SCHEMA, MinioServer, Server, WorkersProcess, wait_until

KEY = "s3-purge-retries-test-key"


def _query(database: str, sql: str) -> list[tuple]:
    with psycopg.connect(database) as conn:
        return conn.execute(sql).fetchall()


def _purged(database: str) -> Counter:
    return Counter(str(r[0]) for r in _query(
        database, "SELECT originator_id FROM lakeledger_events WHERE topic LIKE '%%:Tab%%.Purged'"))


def _gauge(client, name: str, **labels) -> float:
    return sum(s.value for f in text_string_to_metric_families(client.get("/metrics").text) for s in f.samples
               if s.name == name and s.labels == labels)


def test_a_purge_that_failed_while_the_storage_was_down_is_retried_until_done(database, tmp_path):
    home = tmp_path / "minio"
    home.mkdir()
    minio = MinioServer(home)
    api = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_ENCRYPTION_KEY=KEY,
                 LAKELEDGER__PG_POOL_SIZE="3")
    workers = None
    try:
        bucket = minio.make_bucket("retries")
        with httpx.Client(base_url=api.url, timeout=60) as client:
            created = client.post("/management/v1/warehouse", json={
                "warehouse-name": "retries", "storage-profile": minio.profile(bucket, "lake"),
                "storage-credential": minio.credential(), "delete-profile": {"type": "hard"}})
            assert created.status_code == 201, created.text
            warehouse_id = created.json()["warehouse-id"]
            prefix = f"/catalog/v1/{warehouse_id}"
            assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
            keys = {}
            for table in ("t", "kept"):
                r = client.post(f"{prefix}/namespaces/ns/tables", json={"name": table, "schema": SCHEMA})
                assert r.status_code == 200, r.text
                keys[table] = r.json()["metadata"]["location"].split("/", 3)[3]
            table_id = client.get(f"{prefix}/namespaces/ns/tables/t").json()["metadata"]["table-uuid"]
            for i in range(5):
                minio.client().put_object(Bucket=bucket, Key=f"{keys['t']}/data/part-{i}.parquet", Body=b"x")
            kept = minio.keys(bucket, keys["kept"] + "/")

            minio.stop()
            dropped = client.delete(f"{prefix}/namespaces/ns/tables/t", params={"purgeRequested": "true"})
            assert dropped.status_code == 204, dropped.text
            workers = WorkersProcess(database, tmp_path, LAKELEDGER__PG_ENCRYPTION_KEY=KEY,
                                     LAKELEDGER__PURGE_RETRY_SECONDS="1")
            wait_until(lambda: _query(database, "SELECT attempts FROM ll_purge_retries WHERE attempts >= 2"), 90,
                       "two failed attempts at the purge while the storage is down")
            (error,) = _query(database, "SELECT last_error FROM ll_purge_retries")[0]
            assert "EndpointConnectionError" in error or "connect" in error.lower(), error
            assert _purged(database)[table_id] == 0
            # the tasks API shows the purge waiting for its retry, with the failures (docs/tasks.md)
            tasks = f"/management/v1/warehouse/{warehouse_id}/task"
            [task] = client.post(f"{tasks}/list", json={"queue-name": ["tabular_purge"]}).json()["tasks"]
            assert task["status"] == "SCHEDULED" and task["attempt"] >= 3, task
            details = client.get(f"{tasks}/by-id/{task['task-id']}").json()
            # every attempt is in the log (table.purge-started, table.purge-failed), newest first
            failed = [a for a in details["attempts"] if a["status"] == "FAILED"]
            assert len(failed) >= 2 and {a["status"] for a in details["attempts"]} <= {"FAILED", "RUNNING"}, details
            assert all(len(a["message"]) <= 500 and minio.password not in a["message"] for a in failed), failed
            # the gauge counts the purge waiting for its retry after a failed attempt
            wait_until(lambda: _gauge(client, "lakeledger_tasks", queue="tabular_purge", state="failed") == 1, 30,
                       "the failed purge in lakeledger_tasks")
            # run-now of a purge waiting for its retry is an event the purger honours (the retry is due at once)
            control = {"action": {"action-type": "run-now"}, "task-ids": [task["task-id"]]}
            assert client.post(f"{tasks}/control", json=control).status_code == 204
            history = client.get(f"/management/v1/warehouse/{warehouse_id}/history",
                                 params={"tabular-id": table_id}).json()["events"]
            assert "table.purge-retry-due" in [e["type"] for e in history], history
            assert {"table.purge-started", "table.purge-failed"} <= {e["type"] for e in history}, history
            assert {e["actor"] for e in history if e["type"].startswith("table.purge-")} >= {"system:purger"}
            # the warehouse cannot go while its purge is pending
            blocked = client.delete(f"/management/v1/warehouse/{warehouse_id}")
            assert blocked.status_code == 409, blocked.text

            minio = MinioServer(home, port=minio.port)
            wait_until(lambda: _purged(database)[table_id] == 1, 90, "the retried purge once the storage is back")
            wait_until(lambda: not _query(database, "SELECT 1 FROM ll_purge_retries"), 30, "the retry row's removal")
            assert minio.keys(bucket, keys["t"] + "/") == []
            assert minio.keys(bucket, keys["kept"] + "/") == kept and kept
            assert _purged(database) == Counter({table_id: 1})
            wait_until(lambda: client.get(f"{tasks}/by-id/{task['task-id']}").json()["status"] == "SUCCESS", 30,
                       "the purge task's success")
            done = client.get(f"{tasks}/by-id/{task['task-id']}", params={"numAttempts": 100}).json()
            assert done["attempts"][0]["status"] == "SUCCESS" and done["attempt"] == len(done["attempts"]), done
            assert _gauge(client, "lakeledger_tasks", queue="tabular_purge", state="failed") == 0
    finally:
        if workers is not None:
            workers.stop()
        api.stop()
        minio.stop()
