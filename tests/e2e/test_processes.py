"""The commands as users run them: `serve` on the embedded Postgres with no configuration, `workers`
as a process of its own on the same data directory, and `migrate` run again. And how they stop: the
embedded Postgres stops with the last Lakeledger process using its data directory, whichever way that
process was stopped; a kill -9 stops nothing and does not get in the way of the next start."""

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import leftovers
import psutil
import pytest
from support import SCHEMA, Server, wait_until


def _env(data_dir) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
    env["LAKELEDGER__DATA_DIR"] = str(data_dir)
    return env


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "lakeledger.cli", *args], env=env, capture_output=True, text=True,
                          timeout=180)


def _postmasters(data_dir) -> list[psutil.Process]:
    """Running postmasters of the data directory's embedded Postgres, found as `ps` would (by `-D <pgdata>` on
    their command line), not through postmaster.pid, which a killed Postgres leaves behind."""
    pgdata = str((data_dir / "postgres").resolve())
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = process.info["cmdline"] or []
        if (process.info["status"] != psutil.STATUS_ZOMBIE and cmdline and cmdline[0].endswith("postgres")
                and pgdata in cmdline):
            found.append(process)
    return found


def _stop_leftover_postgres(data_dir) -> None:
    """A test that failed may leave its Postgres behind: stopped here so that one failure stays one."""
    for postmaster in _postmasters(data_dir):
        postmaster.send_signal(signal.SIGINT)
        postmaster.wait(30)


def _embedded(data_dir, **env) -> Server:
    """`serve` with no LAKELEDGER__PG_URL; small pools, since several of these may share one Postgres."""
    return Server(pg_url=None, data_dir=data_dir, LAKELEDGER__PG_POOL_SIZE="2", **env)


def _warehouse(client: httpx.Client, data_dir) -> str:
    wh = client.post("/management/v1/warehouse", json={
        "warehouse-name": "embedded", "storage-profile": {"type": "file", "location": f"file://{data_dir}/wh"}})
    assert wh.status_code == 201, wh.text
    return f"/catalog/v1/{wh.json()['warehouse-id']}"


@pytest.fixture(scope="module")
def embedded(postgres_home):
    """A data directory with no LAKELEDGER__PG_URL: serve and workers share its embedded Postgres."""
    data_dir = Path(tempfile.mkdtemp(prefix="embedded-", dir=postgres_home))
    yield data_dir, _env(data_dir)
    _stop_leftover_postgres(data_dir)


@pytest.fixture
def fresh_dir(postgres_home):
    """A fresh data directory (where embedded Postgres data directories go, see tests/conftest.py)."""
    path = Path(tempfile.mkdtemp(prefix="data-", dir=postgres_home))
    yield path
    _stop_leftover_postgres(path)


def test_migrate_is_idempotent_and_stops_the_postgres_it_started(embedded):
    data_dir, env = embedded
    first = _cli("migrate", env=env)
    assert first.returncode == 0, first.stderr
    assert not _postmasters(data_dir), "migrate was the only user of the Postgres it started"
    second = _cli("migrate", env=env)
    assert second.returncode == 0, second.stderr
    assert "nothing (up to date)" in second.stdout
    assert not _postmasters(data_dir)


def test_the_embedded_postgres_has_room_for_a_rebuild_beside_servers(pg_url):
    """initdb's 100 connections ran out with two API processes and a rebuild (one connection per read model): the
    embedded Postgres is given 400 by its first user."""
    import psycopg

    from lakeledger.postgres import MAX_CONNECTIONS

    with psycopg.connect(pg_url) as conn:
        assert int(conn.execute("SHOW max_connections").fetchone()[0]) >= MAX_CONNECTIONS == 400


def test_serve_on_the_embedded_postgres_with_workers_in_their_own_process(embedded):
    data_dir, env = embedded
    server = _embedded(data_dir, LAKELEDGER__WORKERS="off")
    workers = None
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            p = _warehouse(c, data_dir)
            c.post(f"{p}/namespaces", json={"namespace": ["ns"]})
            created = c.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
            assert created.status_code == 200, created.text
            location = created.json()["metadata"]["location"][len("file://"):]
            assert c.delete(f"{p}/namespaces/ns/tables/t").status_code == 204
            time.sleep(1.5)
            assert os.path.isdir(location), "without workers nothing purges"

            workers = subprocess.Popen([sys.executable, "-m", "lakeledger.cli", "workers"], env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 60
            while os.path.exists(location) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not os.path.exists(location), "the workers process purged the dropped table"

        # The workers still use the Postgres: stopping the server leaves it running; stopping the workers,
        # its last user, stops it.
        postmaster, = _postmasters(data_dir)
        assert server.stop() == 0
        assert postmaster.is_running() and _postmasters(data_dir) == [postmaster]
        workers.terminate()
        assert workers.wait(30) == 0
        assert not _postmasters(data_dir), "the workers process was the last user of the embedded Postgres"
    finally:
        if workers and workers.poll() is None:
            workers.kill()
            workers.wait(10)
        server.stop()


def test_sigterm_and_then_sigint_each_stop_serve_and_its_postgres(fresh_dir):
    data_dir = fresh_dir
    server = _embedded(data_dir)
    postmaster, = _postmasters(data_dir)
    assert server.stop(signal.SIGTERM) == 0, server.log_path.read_text()[-3000:]
    assert not postmaster.is_running() or postmaster.status() == psutil.STATUS_ZOMBIE
    assert not _postmasters(data_dir), "serve stopped the Postgres it was the only user of"

    # The same data directory again (a SIGTERM here once made every later stop leave Postgres running).
    server = _embedded(data_dir)
    assert len(_postmasters(data_dir)) == 1
    assert server.stop(signal.SIGINT) == 0, server.log_path.read_text()[-3000:]  # Ctrl-C: uvicorn's own stop
    assert not _postmasters(data_dir)


def test_postgres_shared_by_two_servers_stops_with_the_last_one(fresh_dir):
    data_dir = fresh_dir
    first = _embedded(data_dir)
    second = _embedded(data_dir)
    try:
        postmaster, = _postmasters(data_dir)
        with httpx.Client(base_url=first.url, timeout=30) as c:
            prefix = _warehouse(c, data_dir)
        assert first.stop() == 0
        assert _postmasters(data_dir) == [postmaster], "the second server still uses it"
        with httpx.Client(base_url=second.url, timeout=30) as c:
            assert c.post(f"{prefix}/namespaces", json={"namespace": ["after_first_stopped"]}).status_code == 200
        assert second.stop() == 0
        assert not _postmasters(data_dir)
    finally:
        first.stop()
        second.stop()


def test_kill_9_does_not_stop_the_next_serve_nor_its_stop(fresh_dir):
    data_dir = fresh_dir
    killed = _embedded(data_dir)
    with httpx.Client(base_url=killed.url, timeout=30) as c:
        prefix = _warehouse(c, data_dir)
        assert c.post(f"{prefix}/namespaces", json={"namespace": ["before_kill"]}).status_code == 200
    killed.stop(signal.SIGKILL)
    # Nothing could stop Postgres: it waits, with no user, for the next start.
    postmaster, = _postmasters(data_dir)

    restarted = _embedded(data_dir)
    try:
        assert _postmasters(data_dir) == [postmaster], "the restarted server joined the running Postgres"
        with httpx.Client(base_url=restarted.url, timeout=30) as c:
            assert c.get(f"{prefix}/namespaces/before_kill").status_code == 200, "nothing was lost"
        assert restarted.stop() == 0
        assert not _postmasters(data_dir), "the killed server's pid does not count as a user"
    finally:
        restarted.stop()


def test_the_session_check_finds_what_a_test_left_running(tmp_path):
    """The check tests/conftest.py runs at the end of every session, on a child and on a detached daemon."""
    mark = os.environ[leftovers.MARK]
    child = subprocess.Popen(["sleep", "300"])
    daemon_pid_file = tmp_path / "daemon.pid"
    # Detached as pg_ctl detaches the postmaster: its parent is gone, only its environment says it is ours.
    subprocess.run(["sh", "-c", f"sleep 301 </dev/null >/dev/null 2>&1 & echo $! > {daemon_pid_file}"], check=True)
    daemon_pid = int(daemon_pid_file.read_text())
    try:
        assert psutil.Process(daemon_pid).ppid() != os.getpid()
        found = {p.pid: p for p in leftovers.started_by_session(mark, [])}
        assert child.pid in found and daemon_pid in found
        assert "sleep 301" in leftovers.describe(found[daemon_pid])
        leftovers.end([found[child.pid], found[daemon_pid]])
        child.wait(10)
        wait_until(lambda: daemon_pid not in {p.pid for p in leftovers.started_by_session(mark, [])}, 10,
                   "the detached process ending")
    finally:
        for pid in (child.pid, daemon_pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        child.wait(10)
