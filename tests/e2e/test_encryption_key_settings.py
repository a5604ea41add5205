"""The secret store's key, LAKELEDGER__PG_ENCRYPTION_KEY (issue 12, point 3): a server without one refuses S3
credentials with a 400 naming it and records nothing, while file warehouses work; a key that is too short stops
`serve` and `workers` with a message, not a traceback; a server with another key than the one the secrets were
stored with answers S3 table IO with a clear 500 naming the key (a configuration fault that retrying cannot mend,
so not a 503, which clients retry). Each test has a database of its own, on the session's Postgres."""

import os
import subprocess
import sys
import uuid

import httpx
import psycopg
import pytest
from support import SCHEMA, Server

KEY = "encryption-key-settings-test-key-1"
OTHER_KEY = "encryption-key-settings-test-key-2"


def _events(database: str) -> int:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def _secrets(database: str) -> int:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM ll_secrets").fetchone()[0]


def _s3_warehouse(client: httpx.Client, minio, bucket: str, **profile) -> httpx.Response:
    name = f"key-{uuid.uuid4().hex[:8]}"
    return client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name, **profile),
        "storage-credential": minio.credential()})


def test_without_a_key_s3_credentials_are_refused_and_file_warehouses_work(database, minio, bucket, tmp_path):
    server = Server(database, tmp_path, LAKELEDGER__WORKERS="off")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            before = _events(database)
            for profile in ({}, {"sts-enabled": True}):
                r = _s3_warehouse(client, minio, bucket, **profile)
                assert r.status_code == 400, r.text
                assert r.json()["error"]["type"] == "BadRequestException"
                assert "LAKELEDGER__PG_ENCRYPTION_KEY" in r.json()["error"]["message"]
                assert minio.password not in r.text
            assert _events(database) == before and _secrets(database) == 0
            # nothing was written to the bucket either: the key is checked before the probe
            assert client.get("/management/v1/warehouse").json()["warehouses"] == []

            path = tmp_path / "files"
            created = client.post("/management/v1/warehouse", json={
                "warehouse-name": "files", "storage-profile": {"type": "file", "location": f"file://{path}"}})
            assert created.status_code == 201, created.text
            prefix = f"/catalog/v1/{created.json()['warehouse-id']}"
            assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
            table = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
            assert table.status_code == 200, table.text
            assert path.joinpath(table.json()["metadata-location"].removeprefix(f"file://{path}/")).is_file()
            assert client.get(f"{prefix}/namespaces/ns/tables/t").status_code == 200
    finally:
        server.stop()
    assert b"Traceback" not in server.log_path.read_bytes()


@pytest.mark.parametrize("command", ["serve", "workers"])
def test_a_key_shorter_than_16_characters_stops_the_process_with_a_message(database, tmp_path, command):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
    env.update(LAKELEDGER__PG_URL=database, LAKELEDGER__DATA_DIR=str(tmp_path), LAKELEDGER__LISTEN_PORT="0",
               LAKELEDGER__PG_ENCRYPTION_KEY="fifteen-chars-k")
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", command], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.strip() == ("lakeledger: invalid settings: LAKELEDGER__PG_ENCRYPTION_KEY must be at least "
                                   "16 characters")
    assert "fifteen-chars-k" not in done.stdout + done.stderr  # the key itself is never printed
    with psycopg.connect(database) as conn:  # it stopped before touching the database: not even migrated
        assert conn.execute("SELECT to_regclass('lakeledger_events')").fetchone()[0] is None


def test_a_server_with_another_key_says_so_on_s3_table_io(database, minio, bucket, tmp_path):
    first = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_ENCRYPTION_KEY=KEY)
    try:
        with httpx.Client(base_url=first.url, timeout=60) as client:
            created = _s3_warehouse(client, minio, bucket, **{"sts-enabled": True})
            assert created.status_code == 201, created.text
            prefix = f"/catalog/v1/{created.json()['warehouse-id']}"
            assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
            assert (
                client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
            )
    finally:
        first.stop()

    second = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_ENCRYPTION_KEY=OTHER_KEY)
    try:
        with httpx.Client(base_url=second.url, timeout=60) as client:
            before = _events(database)
            table = f"{prefix}/namespaces/ns/tables/t"
            answers = {
                "vended load": client.get(table, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}),
                "loadCredentials": client.get(f"{table}/credentials"),
                "create": client.post(f"{prefix}/namespaces/ns/tables", json={"name": "u", "schema": SCHEMA}),
                "commit": client.post(table, json={"requirements": [], "updates": [
                    {"action": "set-properties", "updates": {"k": "v"}}]}),
            }
            for what, r in answers.items():
                assert r.status_code == 500, (what, r.text)
                error = r.json()["error"]
                assert error["type"] == "InternalServerError", (what, r.text)
                assert "LAKELEDGER__PG_ENCRYPTION_KEY" in error["message"], (what, r.text)
                assert "not the one it was stored with" in error["message"], (what, r.text)
            assert _events(database) == before
            # what needs no secret still works: the table's metadata, read through the catalog
            assert client.get(f"{prefix}/namespaces/ns/tables").status_code == 200
    finally:
        second.stop()
    log = second.log_path.read_bytes()
    assert b"not the one it was stored with" in log and b"Traceback" not in log
