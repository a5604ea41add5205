"""Postgres failing under a running `serve` (issue 27, point 7): killed with -9, stalled (SIGSTOP) longer than the
statement timeout, restarted. Whatever it does, every answer is a 2xx or a 503 with Retry-After (never a 500, never
a request left hanging), the service heals with no operator (the embedded Postgres is started again by `serve`, an
external one reconnected to), every acknowledged write is in the log exactly once, and SIGTERM ends `serve` within
5 s with nothing left running."""

import contextlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest
from support import SCHEMA, Server, WorkersProcess, wait_until

# Small timeouts, so that a stall outlasts them quickly: a statement may run 2 s, a request waits 3 s for a
# connection; a client gives up on an answer 5 s after the statement timeout
# (lakeledger/eventstore/postgres_failures.py).
_TIMEOUTS = {"LAKELEDGER__PG_STATEMENT_TIMEOUT_SECONDS": "2", "LAKELEDGER__PG_POOL_TIMEOUT_SECONDS": "3",
             "LAKELEDGER__PG_POOL_SIZE": "3", "LAKELEDGER__WORKER_POLL_SECONDS": "0.5"}
# Generous: the longest any request may take while Postgres fails, the pool's wait and the answer timeout included
# several times over. A request not answered by then counts as hanging.
_REQUEST_DEADLINE_SECONDS = 30


@dataclass
class Answer:
    kind: str  # "create" (a namespace), "commit" (a table property), "load"
    key: str
    status: int | None  # None: no answer within the deadline, or the connection failed
    retry_after: str | None = None
    text: str = ""
    at: float = field(default_factory=time.monotonic)


class Load:
    """Three clients at once until stopped: one creating namespaces (each name once), one committing a new table
    property each time (updateTable's fast path), one loading the table (loadTable's fast path)."""

    def __init__(self, server: Server, prefix: str):
        self.server = server
        self.prefix = prefix
        self.answers: list[Answer] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, args=(kind,), daemon=True)
                        for kind in ("create", "commit", "load")]

    def __enter__(self) -> "Load":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(_REQUEST_DEADLINE_SECONDS + 5)

    def _run(self, kind: str) -> None:
        table = f"{self.prefix}/namespaces/load/tables/t"
        with httpx.Client(base_url=self.server.url, timeout=_REQUEST_DEADLINE_SECONDS) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                key = f"{kind}-{uuid.uuid4().hex[:12]}"
                try:
                    if kind == "create":
                        r = client.post(f"{self.prefix}/namespaces", json={"namespace": [key]})
                    elif kind == "commit":
                        r = client.post(table, json={"requirements": [], "updates": [
                            {"action": "set-properties", "updates": {key: "1"}}]})
                    else:
                        r = client.get(table)
                except httpx.HTTPError as e:
                    self.answers.append(Answer(kind, key, None, text=repr(e)))
                    time.sleep(0.05)
                    continue
                self.answers.append(Answer(kind, key, r.status_code, r.headers.get("retry-after"), r.text[:300]))
                if r.status_code == 503:
                    time.sleep(0.05)

    def acknowledged(self, kind: str) -> list[str]:
        return [a.key for a in self.answers if a.kind == kind and a.status is not None and 200 <= a.status < 300]

    def succeeded_after(self, kind: str, instant: float) -> bool:
        return any(a.kind == kind and a.at > instant and a.status is not None and 200 <= a.status < 300
                   for a in self.answers)

    def wait_for_success_after(self, instant: float, timeout: float) -> None:
        """Until a creation, a commit and a load each succeeded after ``instant``."""
        kinds = ("create", "commit", "load")
        try:
            wait_until(lambda: all(self.succeeded_after(kind, instant) for kind in kinds), timeout,
                       "writes and reads to succeed again")
        except BaseException:
            after = Counter((a.kind, a.status) for a in self.answers if a.at > instant)
            last = {kind: next((a for a in reversed(self.answers) if a.kind == kind), None) for kind in kinds}
            raise AssertionError(f"answers since: {dict(after)}; last of each: {last}") from None

    def check_answers(self) -> None:
        """Every answer a 2xx or a 503 with Retry-After; every request answered within the deadline."""
        unanswered = [a for a in self.answers if a.status is None]
        assert not unanswered, f"requests not answered within {_REQUEST_DEADLINE_SECONDS} s: {unanswered[:5]}"
        wrong = [a for a in self.answers if not (200 <= a.status < 300 or a.status == 503)]
        assert not wrong, f"answers other than 2xx and 503: {wrong[:5]}"
        for a in self.answers:
            if a.status == 503:
                assert a.retry_after is not None and int(a.retry_after) > 0, a
                assert '"ServiceUnavailableException"' in a.text, a


def _postgres_processes(pgdata: Path) -> list[psutil.Process]:
    """The postmaster of ``pgdata`` (found by `-D <pgdata>` on its command line, as `ps` would) and its children."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = process.info["cmdline"] or []
        if (process.info["status"] != psutil.STATUS_ZOMBIE and cmdline and cmdline[0].endswith("postgres")
                and str(pgdata.resolve()) in cmdline):
            found.append(process)
            found.extend(process.children(recursive=True))
    return found


def _signal_all(processes: list[psutil.Process], sig: int) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.send_signal(sig)


def _url(pgdata: Path) -> str:
    """The URL of the running Postgres of ``pgdata``, from its postmaster.pid (line 5: its socket directory)."""
    lines = (pgdata / "postmaster.pid").read_text().splitlines()
    return f"postgresql://postgres:@/postgres?host={lines[4].strip()}&port={lines[3].strip()}"


def _sessions_of(url: str, application: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                            (application,)).fetchone()[0]


def _warehouse_and_table(server: Server, location: Path) -> str:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        wh = client.post("/management/v1/warehouse", json={
            "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}",
            "storage-profile": {"type": "file", "location": f"file://{location}"}})
        assert wh.status_code == 201, wh.text
        prefix = f"/catalog/v1/{wh.json()['warehouse-id']}"
        assert client.post(f"{prefix}/namespaces", json={"namespace": ["load"]}).status_code == 200
        r = client.post(f"{prefix}/namespaces/load/tables", json={"name": "t", "schema": SCHEMA})
        assert r.status_code == 200, r.text
    return prefix


def _check_log(url: str, load: Load) -> None:
    """Every acknowledged namespace creation and table commit is in the log, exactly once."""
    created, committed = load.acknowledged("create"), load.acknowledged("commit")
    assert created and committed, "the load made no write at all"
    with psycopg.connect(url, autocommit=True) as conn:
        for key in created + committed:
            # the events' state is their JSON: a write recorded twice would show one of its topics twice
            topics = conn.execute("SELECT topic, count(*) FROM lakeledger_events WHERE position(%s in state) > 0"
                                  " GROUP BY topic", (f'"{key}"'.encode(),)).fetchall()
            assert topics and all(count == 1 for _, count in topics), f"{key}: {topics}"


def _api_children(server: Server) -> list[psutil.Process]:
    """serve's API processes (``python -m lakeledger.cli serve``, lakeledger/api_processes.py). The postmaster just
    killed is a zombie until serve reaps it, and has no command line; the pg_ctl that starts it again names the data
    directory, whose path may hold "lakeledger" too (it did once, failing dead-1)."""
    children = []
    for child in psutil.Process(server.process.pid).children():
        try:
            if "lakeledger.cli" in child.cmdline():
                children.append(child)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            continue
    return children


def _stopped_within(server: Server, seconds: float) -> int | None:
    """SIGTERM, then the exit code if `serve` exited within ``seconds`` (None if not; it is then killed)."""
    server.process.send_signal(signal.SIGTERM)
    try:
        return server.process.wait(seconds)
    except subprocess.TimeoutExpired:
        return None
    finally:
        server.stop(signal.SIGKILL)


@pytest.fixture
def embedded_dir(postgres_home):
    """A data directory of its own: `serve` starts its embedded Postgres there and is its only user."""
    path = Path(tempfile.mkdtemp(prefix="pgfail-", dir=postgres_home))
    yield path
    pgdata = path / "postgres"
    _signal_all(_postgres_processes(pgdata), signal.SIGCONT)  # a failed test may leave it stopped
    for process in _postgres_processes(pgdata)[:1]:
        process.send_signal(signal.SIGINT)
        process.wait(30)


def _embedded_serve(data_dir: Path) -> Server:
    return Server(None, data_dir, **_TIMEOUTS)


def test_kill_9_of_the_embedded_postmaster_under_load_heals_without_an_operator(embedded_dir):
    server = _embedded_serve(embedded_dir)
    pgdata = embedded_dir / "postgres"
    try:
        prefix = _warehouse_and_table(server, embedded_dir / "wh")
        with Load(server, prefix) as load:
            wait_until(lambda: len(load.acknowledged("commit")) >= 5, 30, "the load to run")
            postmaster = _postgres_processes(pgdata)[0]
            postmaster.kill()
            killed = time.monotonic()
            load.wait_for_success_after(killed, 90)
            recovered = time.monotonic() - killed
            time.sleep(1)
        print(f"\nkill -9 of the embedded postmaster: writes and reads succeed again {recovered:.1f} s later; "
              f"{sum(a.status == 503 for a in load.answers)} answers were 503, {len(load.answers)} in all")
        load.check_answers()
        assert server.process.poll() is None, "serve kept running"
        new_postmaster = _postgres_processes(pgdata)[0]
        assert new_postmaster.pid != postmaster.pid, "serve started a new postmaster"
        _check_log(_url(pgdata), load)
    finally:
        server.stop()


def test_a_stalled_postgres_answers_503_in_bounded_time_and_recovers(embedded_dir):
    server = _embedded_serve(embedded_dir)
    pgdata = embedded_dir / "postgres"
    stalled: list[psutil.Process] = []
    try:
        prefix = _warehouse_and_table(server, embedded_dir / "wh")
        with Load(server, prefix) as load:
            wait_until(lambda: len(load.acknowledged("commit")) >= 5, 30, "the load to run")
            stalled = _postgres_processes(pgdata)
            _signal_all(stalled, signal.SIGSTOP)
            stopped = time.monotonic()
            # longer than the statement timeout, the pool's wait and the client's answer timeout (2 + 5 s)
            wait_until(lambda: sum(a.status == 503 and a.at > stopped for a in load.answers) >= 3, 30,
                       "503s while Postgres is stalled")
            time.sleep(max(0.0, 10 - (time.monotonic() - stopped)))
            _signal_all(stalled, signal.SIGCONT)
            continued = time.monotonic()
            load.wait_for_success_after(continued, 60)
        print(f"\nSIGSTOP of Postgres for {continued - stopped:.1f} s: "
              f"{sum(a.status == 503 for a in load.answers)} answers were 503, {len(load.answers)} in all")
        load.check_answers()
        assert any(a.status == 503 and stopped < a.at < continued for a in load.answers)
        _check_log(_url(pgdata), load)
    finally:
        _signal_all(stalled, signal.SIGCONT)
        server.stop()


_START = """
import sys, pgserver
print(pgserver.get_server(sys.argv[1], cleanup_mode=None).get_uri(), flush=True)
"""

_RESTART = """
import sys, pgserver
from pgserver import pg_ctl
server = pgserver.get_server(sys.argv[1], cleanup_mode=None)
pg_ctl(["-w", "-m", "fast", "restart"], pgdata=server.pgdata, user=server.system_user, timeout=60)
"""


def _pgserver(script: str, pgdata: Path) -> str:
    done = subprocess.run([sys.executable, "-c", script, str(pgdata)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_an_external_postgres_restarted_is_reconnected_to_without_restarting_serve(postgres_home, tmp_path):
    pgdata = Path(tempfile.mkdtemp(prefix="external-", dir=postgres_home))
    url = _pgserver(_START, pgdata).splitlines()[-1]
    server = Server(url, tmp_path, **_TIMEOUTS)
    try:
        prefix = _warehouse_and_table(server, tmp_path / "wh")
        with Load(server, prefix) as load:
            wait_until(lambda: len(load.acknowledged("commit")) >= 5, 30, "the load to run")
            old = _postgres_processes(pgdata)[0].pid
            _pgserver(_RESTART, pgdata)  # pg_ctl restart: a fast shutdown ends every session, then a start
            restarted = time.monotonic()
            assert _postgres_processes(pgdata)[0].pid != old
            load.wait_for_success_after(restarted, 60)
            time.sleep(1)
        load.check_answers()
        assert server.process.poll() is None
        _check_log(url, load)
    finally:
        server.stop()
        for process in _postgres_processes(pgdata)[:1]:
            process.send_signal(signal.SIGINT)
            process.wait(30)


@pytest.mark.parametrize("api_processes", ["1", "2"])
@pytest.mark.parametrize("failure", ["stalled", "dead"])
def test_sigterm_ends_serve_within_5_s_whatever_postgres_does(embedded_dir, failure, api_processes):
    server = Server(None, embedded_dir, **_TIMEOUTS, LAKELEDGER__API_PROCESSES=api_processes)
    pgdata = embedded_dir / "postgres"
    try:
        prefix = _warehouse_and_table(server, embedded_dir / "wh")
        with Load(server, prefix) as load:
            wait_until(lambda: len(load.acknowledged("commit")) >= 5, 30, "the load to run")
            processes = _postgres_processes(pgdata)
            if failure == "stalled":
                _signal_all(processes, signal.SIGSTOP)
                time.sleep(1)  # requests now wait on it
            else:
                processes[0].kill()
                time.sleep(0.3)  # the supervisor finds it gone and starts it again meanwhile
            api_children = _api_children(server)
            assert len(api_children) == int(api_processes) - 1
            code = _stopped_within(server, 5)
            load.stop.set()
        assert code == 0, f"serve did not stop within 5 s of SIGTERM ({code}): {server.log_path.read_text()[-3000:]}"
        assert not [p for p in api_children if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        # nothing left behind: serve was the embedded Postgres' only user, so it stopped it (a stalled one too)
        wait_until(lambda: not _postgres_processes(pgdata), 10, "no Postgres process left")
    finally:
        _signal_all(_postgres_processes(pgdata), signal.SIGCONT)
        server.stop()


@pytest.mark.parametrize("failure", ["stalled", "dead"])
def test_sigterm_ends_workers_within_5_s_whatever_postgres_does(embedded_dir, failure):
    """`lakeledger workers` as a process of its own, on the embedded Postgres of a `serve`."""
    server = _embedded_serve(embedded_dir)
    pgdata = embedded_dir / "postgres"
    workers = None
    try:
        prefix = _warehouse_and_table(server, embedded_dir / "wh")
        workers = WorkersProcess(_url(pgdata), embedded_dir, PGAPPNAME="stopped-workers", **_TIMEOUTS)
        with Load(server, prefix) as load:
            wait_until(lambda: len(load.acknowledged("commit")) >= 5, 30, "the load to run")
            # started: its pools and its LISTEN connection are open (libpq names them after PGAPPNAME)
            wait_until(lambda: _sessions_of(_url(pgdata), "stopped-workers") >= 3, 60, "the workers process to run")
            assert workers.process.poll() is None, workers.log_path.read_text()[-3000:]
            processes = _postgres_processes(pgdata)
            if failure == "stalled":
                _signal_all(processes, signal.SIGSTOP)
                time.sleep(1)  # the workers now wait on it
            else:
                processes[0].kill()
                time.sleep(0.3)
            workers.process.send_signal(signal.SIGTERM)
            try:
                code = workers.process.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            _signal_all(processes, signal.SIGCONT)
            load.stop.set()
        assert code == 0, f"workers did not stop within 5 s of SIGTERM ({code}): " \
                          f"{workers.log_path.read_text()[-3000:]}"
    finally:
        _signal_all(_postgres_processes(pgdata), signal.SIGCONT)
        if workers:
            workers.stop()
        server.stop()
