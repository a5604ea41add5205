"""Liveness and readiness (issue 15, point 4), proved by taking away what a server needs while it runs: its
Postgres is stopped and started again, its NATS killed and started again, a migration it ships is missing from the
database, a read model falls behind with no workers to apply it. ``/health`` stays 200 throughout (the process is
alive); ``/health/ready`` answers 503 naming the failing check, and 200 again once the part is back."""

import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC
from pathlib import Path

import httpx
import psycopg
import pytest
from support import NatsServer, Server, WorkersProcess, create_database, wait_until

_START = """
import sys, pgserver
server = pgserver.get_server(sys.argv[1], cleanup_mode=None)
print(server.get_uri(), flush=True)
"""


class StoppablePostgres:
    """An embedded Postgres (the pgserver wheel) that outlives the process starting it, so the test can stop it
    (SIGINT to the postmaster: a fast shutdown) and start it again in the same directory, at the same address."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.url = self.start()

    def start(self) -> str:
        try:
            import pgserver  # noqa: F401
        except ImportError:
            pytest.fail("The embedded Postgres (pgserver wheel) is missing: run `make setup`")
        done = subprocess.run([sys.executable, "-c", _START, str(self.directory)], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        pid_file = self.directory / "postmaster.pid"
        if not pid_file.exists():
            return
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGINT)
        wait_until(lambda: not _alive(pid), 30, "Postgres to stop")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _ready(server) -> httpx.Response:
    return httpx.get(f"{server.url}/health/ready", timeout=10)


@pytest.fixture(scope="module")
def postgres(postgres_home):
    pg = StoppablePostgres(postgres_home / f"health-{uuid.uuid4().hex[:8]}")
    yield pg
    pg.stop()


@pytest.fixture(scope="module")
def nats_server(tmp_path_factory):
    server = NatsServer(tmp_path_factory.mktemp("health-nats"))
    yield server
    if server.process.poll() is None:
        server.kill()


@pytest.fixture(scope="module")
def api(postgres, nats_server, tmp_path_factory):
    s = Server(postgres.url, tmp_path_factory.mktemp("health-serve"), LAKELEDGER__NATS_ADDRESS=nats_server.url,
               LAKELEDGER__PG_POOL_SIZE="3", LAKELEDGER__WORKER_POLL_SECONDS="0.5",
               LAKELEDGER__PG_POOL_TIMEOUT_SECONDS="3")
    yield s
    s.stop()


def test_ready_names_every_check_when_all_is_well(api):
    r = _ready(api)
    assert r.status_code == 200, r.text
    assert r.json() == {"status": "ready", "failing": [],
                        "checks": {"postgres": "ok", "migrations": "ok", "read-models": "ok", "nats": "ok"}}
    assert httpx.get(f"{api.url}/health").json() == {"status": "ok"}


def test_postgres_stopped_under_a_running_server(api, postgres):
    postgres.stop()
    try:
        wait_until(lambda: _ready(api).status_code == 503, 20, "readiness to fail without Postgres")
        body = _ready(api).json()
        assert body["status"] == "unavailable"
        assert "postgres" in body["failing"]
        assert body["checks"]["postgres"].startswith("unreachable")
        assert body["checks"]["nats"] == "ok"
        live = httpx.get(f"{api.url}/health")
        assert live.status_code == 200  # alive: a restart would not bring Postgres back
        # what the catalog answers meanwhile: "try again", never an internal error
        for path in ("/catalog/v1/config?warehouse=any", f"/catalog/v1/{uuid.uuid4()}/namespaces/ns/tables/t"):
            r = httpx.get(f"{api.url}{path}", timeout=60)
            assert r.status_code == 503, r.text
            assert r.json()["error"]["type"] == "ServiceUnavailableException"
        assert api.process.poll() is None
    finally:
        postgres.start()
    wait_until(lambda: _ready(api).status_code == 200, 30, "readiness to come back with Postgres")


def test_nats_killed_under_a_running_server(api, nats_server):
    nats_server.kill()
    try:
        r = _ready(api)
        assert r.status_code == 503, r.text
        assert r.json()["failing"] == ["nats"]
        assert "unreachable" in r.json()["checks"]["nats"]
    finally:
        nats_server.start()
    wait_until(lambda: _ready(api).status_code == 200, 20, "readiness to come back with NATS")


def test_a_migration_missing_from_the_database(api, postgres):
    with psycopg.connect(postgres.url, autocommit=True) as conn:
        name, applied_at = conn.execute("SELECT name, applied_at FROM ll_schema_migrations"
                                        " ORDER BY name DESC LIMIT 1").fetchone()
        conn.execute("DELETE FROM ll_schema_migrations WHERE name = %s", (name,))
        try:
            r = _ready(api)
            assert r.status_code == 503
            assert r.json()["failing"] == ["migrations"]
            assert name in r.json()["checks"]["migrations"] and "lakeledger migrate" in r.json()["checks"]["migrations"]
        finally:
            conn.execute("INSERT INTO ll_schema_migrations (name, applied_at) VALUES (%s, %s)", (name, applied_at))
    assert _ready(api).status_code == 200


def _recorded_without_the_catalog(database: str) -> None:
    """A project created by an event appended through the event store's recorder alone, as a process that died
    between the append and its read model (or an older version) would leave it: the catalog read model is behind."""
    from datetime import datetime

    from lakeledger.domain.project import Project
    from lakeledger.eventstore.log import EventLog
    from lakeledger.eventstore.settings import PostgresSettings

    log = EventLog(PostgresSettings.from_url(database), pool_size=1)
    try:
        event = Project.Created(originator_id=uuid.uuid4(), originator_version=1, timestamp=datetime.now(UTC),
                                originator_topic="lakeledger.domain.project:Project", actor="system",
                                request_id="test", name="behind")
        log._app.recorder.insert_events([log._app.mapper.to_stored_event(event)])
    finally:
        log.close()


def test_a_read_model_behind_the_bound_until_workers_apply_it(pg_url, tmp_path):
    """A serve without workers and nobody else applying the log: the catalog, which readiness depends on, falls
    behind (the history too, which readiness does not wait for: docs/read-models.md); a `lakeledger workers` brings
    it back."""
    database = create_database(pg_url, f"health_{uuid.uuid4().hex[:12]}")
    s = Server(database, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__READY_MAX_LAG_SECONDS="1",
               LAKELEDGER__PG_POOL_SIZE="2")
    workers = None
    try:
        assert _ready(s).status_code == 200
        r = httpx.post(f"{s.url}/management/v1/warehouse", json={
            "warehouse-name": "lagging", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text
        time.sleep(1.5)
        assert _ready(s).status_code == 200  # only the history is behind
        _recorded_without_the_catalog(database)
        time.sleep(1.5)
        r = _ready(s)
        assert r.status_code == 503, r.text
        assert r.json()["failing"] == ["read-models"]
        assert "catalog by" in r.json()["checks"]["read-models"]
        workers = WorkersProcess(database, tmp_path)
        wait_until(lambda: _ready(s).status_code == 200, 30, "the workers to bring the read models up to date")
    finally:
        if workers:
            workers.stop()
        s.stop()
