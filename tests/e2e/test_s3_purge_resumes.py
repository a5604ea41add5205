"""The purge worker on S3 (issue 12, point 4): a paced purge of a table with many objects, its worker killed -9 in
the middle, is finished by the next worker; every object under the table's location goes, the Purged event is
recorded once, and objects beside it — a sibling prefix `<table-location>-x/` that shares the table's prefix as a
string, another table — stay. One database of its own, an API process without workers, worker processes the test
starts and kills, on the session's MinIO."""

import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
from support import SCHEMA, Server, WorkersProcess, wait_until

KEY = "s3-purge-resumes-test-key"
OBJECTS = 300
RATE = 40  # files per second: 300 objects take ~8 s, time enough to kill the worker in the middle


def _purged(database: str) -> Counter:
    with psycopg.connect(database) as conn:
        rows = conn.execute("SELECT originator_id FROM lakeledger_events WHERE topic LIKE '%%:Tab%%.Purged'").fetchall()
    return Counter(str(r[0]) for r in rows)


def _purger_caught_up(database: str) -> bool:
    with psycopg.connect(database) as conn:
        head = conn.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]
        row = conn.execute("SELECT position FROM ll_projection_positions WHERE name = 'purger'").fetchone()
    return row is not None and row[0] == head


def test_a_purge_killed_mid_way_on_s3_is_finished_once_and_touches_nothing_beside_the_table(
        database, minio, bucket, tmp_path):
    api = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_ENCRYPTION_KEY=KEY,
                 LAKELEDGER__PG_POOL_SIZE="3")
    workers: list[WorkersProcess] = []
    try:
        with httpx.Client(base_url=api.url, timeout=60) as client:
            name = f"purge-{uuid.uuid4().hex[:8]}"
            created = client.post("/management/v1/warehouse", json={
                "warehouse-name": name, "storage-profile": minio.profile(bucket, name),
                "storage-credential": minio.credential(), "delete-profile": {"type": "hard"}})
            assert created.status_code == 201, created.text
            prefix = f"/catalog/v1/{created.json()['warehouse-id']}"
            assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
            tables = {}
            for table in ("t", "other"):
                r = client.post(f"{prefix}/namespaces/ns/tables", json={"name": table, "schema": SCHEMA})
                assert r.status_code == 200, r.text
                tables[table] = (r.json()["metadata"]["table-uuid"], r.json()["metadata"]["location"].split("/", 3)[3])
            table_id, key = tables["t"]
            s3 = minio.client()
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda i: s3.put_object(Bucket=bucket, Key=f"{key}/data/part-{i:05}.parquet", Body=b"x"),
                              range(OBJECTS)))
            for i in range(3):
                s3.put_object(Bucket=bucket, Key=f"{key}-x/data/keep-{i}.parquet", Body=b"keep")
            beside = sorted(minio.keys(bucket, f"{key}-x/") + minio.keys(bucket, tables["other"][1] + "/"))
            total = len(minio.keys(bucket, key + "/"))
            assert total > OBJECTS  # the data files and the table's metadata file

            workers.append(WorkersProcess(database, tmp_path, LAKELEDGER__PG_ENCRYPTION_KEY=KEY,
                                          LAKELEDGER__PURGE_MAX_FILES_PER_SECOND=str(RATE)))
            dropped = client.delete(f"{prefix}/namespaces/ns/tables/t", params={"purgeRequested": "true"})
            assert dropped.status_code == 204, dropped.text
            left = wait_until(lambda: (lambda n: n if 0 < n < total - RATE else 0)(len(minio.keys(bucket, key + "/"))),
                              60, "the purge's first batches")
            workers[0].kill()
            assert _purged(database)[table_id] == 0  # killed before it finished
            assert len(minio.keys(bucket, key + "/")) > 0, "the purge finished before the worker was killed"

            workers.append(WorkersProcess(database, tmp_path, LAKELEDGER__PG_ENCRYPTION_KEY=KEY))
            wait_until(lambda: _purged(database)[table_id] >= 1, 60, "the purge's completion by the next worker")
            wait_until(lambda: _purger_caught_up(database), 30, "the purger catching up with the log")
    finally:
        for w in workers:
            w.stop()
        api.stop()

    assert left < total
    assert minio.keys(bucket, key + "/") == []
    assert _purged(database) == Counter({table_id: 1})
    assert sorted(minio.keys(bucket, f"{key}-x/") + minio.keys(bucket, tables["other"][1] + "/")) == beside
    assert len(beside) == 4  # the sibling prefix's three objects and the other table's metadata file
