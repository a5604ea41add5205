"""LAKELEDGER__API_PROCESSES=2: `lakeledger serve` runs two API processes on one port (lakeledger/api_processes.py).
Both answer requests; a write answered by either is read at once through the other, for many write-then-read pairs
each on a new connection (handed to the processes in turn), under concurrent writers; the workers run
once (one process holds the projections' LISTEN); a child that dies is started again; and stopping the server stops
every process."""

import asyncio
import os
import signal
import threading
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest
from support import SCHEMA, Server, wait_until


def _children(pid: int) -> list[int]:
    """Child processes of ``pid``, whichever of its threads started them."""
    return [int(p) for task in Path(f"/proc/{pid}/task").iterdir() for p in (task / "children").read_text().split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"


def _metrics_dir(pid: int) -> Path:
    """The directory where API process ``pid`` writes its metrics: named in a child's environment (the parent made
    it after its own start)."""
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return Path(next(v for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")).split(b"=", 1)[1].decode())


def _answered_by(shared: Path, pid: int, route: str) -> float:
    """Requests to ``route`` that process ``pid`` answered: its own request counter, read from its own file of the
    shared metrics directory (not the sum a scrape gives)."""
    from prometheus_client.multiprocess import MultiProcessCollector

    files = [str(f) for f in shared.glob(f"counter_{pid}.db")]
    return sum(s.value for metric in MultiProcessCollector.merge(files, accumulate=False) for s in metric.samples
               if s.name == "lakeledger_http_requests_total" and s.labels["route"] == route)


def _kept_by(pid: int, url: str) -> int:
    """Connections to the server's port that process ``pid`` holds open."""
    port = int(url.rsplit(":", 1)[1])
    return sum(1 for c in psutil.Process(pid).net_connections("tcp")
               if c.laddr and c.laddr.port == port and c.status == psutil.CONN_ESTABLISHED)


@pytest.fixture
def two(database, tmp_path):
    server = Server(database, tmp_path, LAKELEDGER__API_PROCESSES="2")
    try:
        wait_until(lambda: len(_children(server.process.pid)) == 1, 30, "the second API process starts")
        yield server
    finally:
        server.stop()


def test_two_api_processes_share_the_port_and_read_each_others_writes(two, database, tmp_path):
    parent = two.process.pid
    [child] = _children(parent)
    with httpx.Client(base_url=two.url, timeout=30) as c:
        r = c.post("/management/v1/warehouse", json={"warehouse-name": "two", "storage-profile": {
            "type": "file", "location": f"file://{tmp_path / 'two'}"}})
        assert r.status_code == 201, r.text
        prefix = f"/catalog/v1/{r.json()['warehouse-id']}"
        assert c.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    shared = _metrics_dir(child)
    tables = "/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}"  # updateTable's and loadTable's route
    before = {pid: _answered_by(shared, pid, tables) for pid in (parent, child)}

    failures: list[str] = []

    def writer(w: int) -> None:
        for i in range(25):
            name = f"w{w}_{i}"
            # a new connection for each request: either process may take it
            with httpx.Client(base_url=two.url, timeout=30) as c1:
                made = c1.post(f"{prefix}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA})
            with httpx.Client(base_url=two.url, timeout=30) as c2:
                committed = c2.post(f"{prefix}/namespaces/ns/tables/{name}", json={"requirements": [], "updates": [
                    {"action": "set-properties", "updates": {"i": str(i)}}]})
            with httpx.Client(base_url=two.url, timeout=30) as c3:
                read = c3.get(f"{prefix}/namespaces/ns/tables/{name}")
            if (made.status_code, committed.status_code, read.status_code) != (200, 200, 200) \
                    or read.json()["metadata"]["properties"].get("i") != str(i):
                failures.append(
                    f"{name}: {made.status_code} {committed.status_code} {read.status_code} {read.text[:200]}"
                )

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    # 200 commits and reads on new connections, handed to the two processes in turn: each answered a share
    # (a request is counted once its answer is sent: the last ones may lag the client by a moment)
    def answered() -> dict[int, float]:
        return {pid: _answered_by(shared, pid, tables) - before[pid] for pid in (parent, child)}

    wait_until(lambda: sum(answered().values()) == 200, 10, "both processes to have counted their answers")
    assert all(n >= 50 for n in answered().values()), answered()
    with psycopg.connect(database) as conn:
        # the workers' LISTEN connection to this database: one, the parent's (the child runs none)
        listeners = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                 " AND query ILIKE 'LISTEN%%'").fetchone()[0]
        api_child = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                                 " AND application_name = 'lakeledger-api-1'").fetchone()[0]
    assert listeners == 1 and api_child >= 1


def test_kept_connections_opened_in_a_burst_fall_evenly_on_both_processes(two):
    """Engines open their connections together and keep them: the parent hands each new connection to the next
    process in turn, so sixteen kept connections are served eight and eight (a socket per process, hashed by the
    kernel, split four connections two and two only three times in eight)."""
    parent = two.process.pid
    [child] = _children(parent)
    failures: list[str] = []
    served: dict[int, int] = {}

    async def client(http: httpx.AsyncClient) -> None:
        for _ in range(20):
            r = await http.get("/management/v1/warehouse")
            if r.status_code != 200:
                failures.append(f"{r.status_code} {r.text[:200]}")

    async def burst() -> None:  # as an engine's pool: connections opened at once, each kept
        clients = [httpx.AsyncClient(base_url=two.url, timeout=30) for _ in range(16)]
        try:
            await asyncio.gather(*(client(http) for http in clients))
            # every client's connection is still open here
            served.update({pid: _kept_by(pid, two.url) for pid in (parent, child)})
        finally:
            await asyncio.gather(*(http.aclose() for http in clients))

    asyncio.run(burst())
    assert failures == []
    assert served == {parent: 8, child: 8}


def _answers(url: str) -> bool:
    """Whether ``url`` answers 200; a process still starting may take a connection and answer late (a loaded
    machine), which is a no for now, not a failure."""
    try:
        return httpx.get(url, timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def test_a_dead_api_process_is_started_again_and_a_stop_stops_them_all(two):
    parent = two.process.pid
    [child] = _children(parent)
    os.kill(child, signal.SIGKILL)
    replaced = wait_until(lambda: [p for p in _children(parent) if p != child and _alive(p)], 30,
                          "the killed API process is started again")
    wait_until(lambda: _answers(f"{two.url}/health"), 30, "the port answers")
    for _ in range(20):  # new connections: whichever process takes them answers
        assert httpx.get(f"{two.url}/management/v1/warehouse", timeout=10).status_code == 200
    [new] = replaced
    clients = [httpx.Client(base_url=two.url, timeout=10) for _ in range(4)]
    try:  # the process started again takes its turn of new connections
        assert all(http.get("/management/v1/warehouse").status_code == 200 for http in clients)
        assert {pid: _kept_by(pid, two.url) for pid in (parent, new)} == {parent: 2, new: 2}
    finally:
        for http in clients:
            http.close()
    assert two.stop() == 0
    wait_until(lambda: not any(_alive(p) for p in replaced), 30, "the API processes stop with the server")


def _route_count(text: str, route: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "lakeledger_http_requests_total" and s.labels["route"] == route)


def test_metrics_are_summed_over_both_api_processes(database, tmp_path):
    """Prometheus reaches one process per scrape; each answers for both (prometheus-client's multiprocess mode in a
    directory the parent made and removes at its stop)."""
    server = Server(database, tmp_path, LAKELEDGER__API_PROCESSES="2")
    try:
        wait_until(lambda: len(_children(server.process.pid)) == 1, 30, "the second API process starts")
        [child] = _children(server.process.pid)
        shared = _metrics_dir(child)
        # the child serves once its application started (its pool gauges are written then)
        wait_until(lambda: (shared / f"gauge_livesum_{child}.db").exists(), 30, "the second API process to serve")
        for _ in range(40):  # a new connection each: handed to both processes in turn
            assert httpx.get(f"{server.url}/catalog/v1/config", params={"warehouse": "none"}).status_code == 404
        wait_until(lambda: {int(p.stem.rsplit("_", 1)[1]) for p in shared.glob("counter_*.db")}
                   >= {server.process.pid, child}, 10, "both processes to have counted requests")
        counts = {_route_count(httpx.get(f"{server.url}/metrics").text, "/catalog/v1/config") for _ in range(10)}
        assert counts == {40.0}  # whichever process answered the scrape
    finally:
        server.stop()
    assert not shared.exists()
