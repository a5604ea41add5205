"""The commands as users run them: `serve` on the embedded Postgres with no configuration, `workers`
as a process of its own on the same data directory, and `migrate` run again."""

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from support import SCHEMA, Server


def _cli(*args, env):
    return subprocess.run([sys.executable, "-m", "lakeledger.cli", *args], env=env, capture_output=True, text=True,
                          timeout=180)


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    """A data directory with no LAKELEDGER__PG_URL: serve and workers share its embedded Postgres."""
    data_dir = tmp_path_factory.mktemp("embedded")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
    env["LAKELEDGER__DATA_DIR"] = str(data_dir)
    yield data_dir, env
    # The embedded Postgres outlives the processes that shared it (as it should for a user's next start);
    # a test run stops it: SIGINT is Postgres' fast shutdown.
    pid_file = data_dir / "postgres" / "postmaster.pid"
    if pid_file.exists():
        os.kill(int(pid_file.read_text().split()[0]), signal.SIGINT)


def test_migrate_is_idempotent(embedded):
    _, env = embedded
    first = _cli("migrate", env=env)
    assert first.returncode == 0, first.stderr
    second = _cli("migrate", env=env)
    assert second.returncode == 0, second.stderr
    assert "nothing (up to date)" in second.stdout


def test_serve_on_the_embedded_postgres_with_workers_in_their_own_process(embedded):
    data_dir, env = embedded
    server = Server(pg_url=None, data_dir=data_dir, LAKELEDGER__WORKERS="off")
    workers = None
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            wh = c.post("/management/v1/warehouse", json={
                "warehouse-name": "embedded", "storage-profile": {"type": "file",
                                                                  "location": f"file://{data_dir}/wh"}}).json()
            p = f"/catalog/v1/{wh['warehouse-id']}"
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
    finally:
        if workers:
            workers.terminate()
            workers.wait(10)
        server.stop()
