"""Secrets never reach the event log or anything derived from it (issue 12, point 3).

One database of its own, one `lakeledger serve` (workers on, CloudEvents to a JetStream of its own, log level
debug) and one `lakeledger workers` beside it, both on the session's MinIO. An STS warehouse is created, its
credential rotated (once with a wrong secret, refused), its storage changed, a table created and loaded with
vended credentials (once under an Idempotency-Key, whose response the server keeps) and with remote signing
(one request signed), then dropped with purge. Every secret that passed through the catalog — the warehouse's
secret key, the wrong one, every vended secret key and session token — is then searched for in a full pg_dump,
the whole history API, every CloudEvent in the stream, a `replay --sink jsonl` file and both processes' logs.
The search is not vacuous: the dump does hold the ll_secrets row's ciphertext and the fingerprint."""

import base64
import os
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import jetstream_log
import psycopg
import pytest
from support import SCHEMA, NatsServer, Server, WorkersProcess, wait_until

KEY = "secrets-never-logged-test-key"  # this test's own LAKELEDGER__PG_ENCRYPTION_KEY
WRONG_SECRET = "wrong-secret-that-must-not-stay-0451"


def _pg_dump() -> Path:
    """pg_dump of the embedded Postgres wheel (pgserver), next to the postgres binary it runs."""
    try:
        import pgserver
    except ImportError:
        pytest.fail("The embedded Postgres (pgserver wheel) is missing: run `make setup`")
    binary = Path(pgserver.__file__).parent / "pginstall" / "bin" / "pg_dump"
    if not binary.exists():
        pytest.fail(f"{binary} is missing from the pgserver wheel: run `make setup`")
    return binary


def _stream_bytes(url: str) -> list[bytes]:
    """Every message of the CloudEvents stream, headers and body."""
    return [m["subject"].encode() + repr(m["headers"]).encode() + m["data"] for m in jetstream_log.stream(url)]


def _forms(secret: str) -> list[bytes]:
    """The ways a secret could be spelt in a dump or a log: as text, as a bytea column's hex, in base64."""
    raw = secret.encode()
    return [raw, raw.hex().encode(), base64.b64encode(raw), base64.urlsafe_b64encode(raw)]


def _leaks(haystack: bytes, secrets: dict[str, str]) -> list[str]:
    return [name for name, secret in secrets.items() if any(form in haystack for form in _forms(secret))]


def _history(client: httpx.Client, path: str) -> bytes:
    """Every page of a history, concatenated."""
    pages, token = [], None
    while True:
        r = client.get(path, params={"pageSize": 5, **({"pageToken": token} if token else {})})
        assert r.status_code == 200, r.text
        pages.append(r.content)
        token = r.json().get("next-page-token")
        if not token:
            return b"\n".join(pages)


def test_no_secret_reaches_the_dump_history_cloudevents_replay_or_logs(database, minio, bucket, tmp_path):
    store = tmp_path / "jetstream"
    store.mkdir()
    stream = NatsServer(store)
    env = {"LAKELEDGER__PG_ENCRYPTION_KEY": KEY, "LAKELEDGER__NATS_ADDRESS": stream.url,
           "LAKELEDGER__LOG_LEVEL": "debug", "LAKELEDGER__WORKER_POLL_SECONDS": "0.2", "LAKELEDGER__PG_POOL_SIZE": "4"}
    api = Server(database, tmp_path, **env)
    workers = WorkersProcess(database, tmp_path, **env)
    try:
        with httpx.Client(base_url=api.url, timeout=60) as client:
            secrets, fingerprint, wid = _exercise(client, minio, bucket)
            wait_until(lambda: _purged(database), 60, "the purge of the dropped table")
            server_history = _history(client, "/management/v1/history")
            warehouse_history = _history(client, f"/management/v1/warehouse/{wid}/history")
        with psycopg.connect(database) as conn:
            head = conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]
            ciphertexts = [bytes(r[0]) for r in conn.execute("SELECT ciphertext FROM ll_secrets").fetchall()]
        wait_until(lambda: len(_stream_bytes(stream.url)) >= head, 60,
                   "the publication of every event as a CloudEvent")
        events = _stream_bytes(stream.url)
    finally:
        workers.stop()
        api.stop()
        stream.kill()

    dump = subprocess.run([str(_pg_dump()), "--no-owner", "-d", database], capture_output=True, timeout=120)
    assert dump.returncode == 0, dump.stderr.decode()
    replayed = tmp_path / "history.jsonl"
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "replay", "--sink", "jsonl", "--out", str(replayed)],
                          env={**{k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")},
                               "LAKELEDGER__PG_URL": database, "LAKELEDGER__DATA_DIR": str(tmp_path)},
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()

    # the search is not vacuous: each place holds what it is expected to hold
    assert len(ciphertexts) == 1  # the storage change's credential; the ones it replaced are deleted
    for ciphertext in ciphertexts:
        assert ciphertext.hex().encode() in dump.stdout  # bytea, as pg_dump writes it
    assert fingerprint.encode() in dump.stdout or fingerprint.encode().hex().encode() in dump.stdout
    assert fingerprint.encode() in warehouse_history and fingerprint.encode() in replayed.read_bytes()
    assert b"rotated the storage credential" in warehouse_history and b"changed the storage" in warehouse_history
    assert len(events) == head and any(fingerprint.encode() in e for e in events)
    api_log, workers_log = api.log_path.read_bytes(), workers.log_path.read_bytes()
    assert b"DEBUG" in api_log and b"DEBUG" in workers_log  # the logs are real, at debug level
    assert b"Purged" in api_log + workers_log

    places = {"pg_dump": dump.stdout, "server history": server_history, "warehouse history": warehouse_history,
              "CloudEvents": b"\n".join(events), "replay jsonl": replayed.read_bytes(), "server log": api_log,
              "workers log": workers_log}
    found = {place: _leaks(content, secrets) for place, content in places.items()}
    assert found == {place: [] for place in places}, found


def _exercise(client: httpx.Client, minio, bucket: str) -> tuple[dict[str, str], str, str]:
    """Every path a secret takes through the catalog; returns the secrets seen, the fingerprint, the warehouse id."""
    name = f"sec-{uuid.uuid4().hex[:8]}"
    secrets = {"warehouse secret key": minio.password, "refused secret key": WRONG_SECRET}
    created = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name, **{"sts-enabled": True}),
        "storage-credential": minio.credential(), "delete-profile": {"type": "hard"}})
    assert created.status_code == 201, created.text
    wid, fingerprint = created.json()["warehouse-id"], created.json()["storage-credential-fingerprint"]
    refused = client.post(f"/management/v1/warehouse/{wid}/storage-credential", json={
        "new-storage-credential": {**minio.credential(), "aws-secret-access-key": WRONG_SECRET}})
    assert refused.status_code == 400, refused.text
    rotated = client.post(f"/management/v1/warehouse/{wid}/storage-credential",
                          json={"new-storage-credential": minio.credential()})
    assert rotated.status_code == 200, rotated.text
    changed = client.post(f"/management/v1/warehouse/{wid}/storage", json={
        "storage-profile": minio.profile(bucket, name, **{"sts-enabled": True, "sts-token-validity-seconds": 1800}),
        "storage-credential": minio.credential()})
    assert changed.status_code == 200, changed.text
    assert minio.password not in client.get(f"/management/v1/warehouse/{wid}").text

    prefix = f"/catalog/v1/{wid}"
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    vended = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    # under an Idempotency-Key the server keeps the response for retries: with the credentials it carries
    keyed = {**vended, "Idempotency-Key": str(uuid.uuid4())}
    table = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}, headers=keyed)
    assert table.status_code == 200, table.text
    # a retry is answered from the kept (encrypted) response, credentials and all
    retry = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}, headers=keyed)
    assert retry.status_code == 200 and retry.headers.get("idempotent-replayed") == "true", retry.text
    assert retry.content == table.content
    loaded = client.get(f"{prefix}/namespaces/ns/tables/t", headers=vended)
    assert loaded.status_code == 200, loaded.text
    for i, answer in enumerate((table.json(), loaded.json(),
                                client.get(f"{prefix}/namespaces/ns/tables/t/credentials").json())):
        for credential in answer["storage-credentials"]:
            config = credential["config"]
            secrets[f"vended secret key {i}"] = config["s3.secret-access-key"]
            secrets[f"vended session token {i}"] = config["s3.session-token"]
    # the vended credential works: it is a real secret, not a placeholder
    config = loaded.json()["config"]
    as_table = minio.client(key=config["s3.access-key-id"], secret=config["s3.secret-access-key"],
                            token=config["s3.session-token"])
    key = loaded.json()["metadata-location"].split("/", 3)[3]
    assert as_table.get_object(Bucket=bucket, Key=key)["Body"].read()

    signing = client.get(f"{prefix}/namespaces/ns/tables/t", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
    assert signing.status_code == 200, signing.text
    signer = f"{signing.json()['config']['s3.signer.uri']}/{signing.json()['config']['s3.signer.endpoint']}"
    uri = f"{minio.endpoint}/{bucket}/{key}"
    signed = httpx.post(signer, json={"region": "us-east-1", "method": "GET", "uri": uri,
                                      "headers": {"Host": [f"127.0.0.1:{minio.port}"]}}, timeout=30)
    assert signed.status_code == 200, signed.text
    got = httpx.get(signed.json()["uri"], headers={k: v[0] for k, v in signed.json()["headers"].items()})
    assert got.status_code == 200 and b'"table-uuid"' in got.content

    assert client.delete(f"{prefix}/namespaces/ns/tables/t", params={"purgeRequested": "true"}).status_code == 204
    return secrets, fingerprint, wid


def _purged(database: str) -> bool:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE '%%.Purged'").fetchone()[0] > 0
