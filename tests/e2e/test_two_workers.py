"""Two `lakeledger workers` processes at once on one database, each running every worker (projections, the
CloudEvents publisher, expiry timers, purges, purge retries), and kill -9 of the one holding a position in the middle
of its work: first the publisher's mid-batch, then the purger's mid-purge, each replaced by a fresh process so two
run again. Their positions are rows locked for the length of a batch (``FOR UPDATE SKIP LOCKED``): the other process
steps aside while one holds a row, and takes over from the last committed position once the holder dies. Nothing is
published twice or lost, every timer fires once, every purge is recorded once and no process logs an error, and
every position ends at the log's head."""

import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg
import pytest
from jetstream_log import assert_exactly_once, count, head, positions, published_at_head
from support import SCHEMA, Server, WorkersProcess, wait_until

TABLES = 12
FILES = 60
PURGE_FILES_PER_SECOND = "40"  # a purge takes 1.5 s: long enough to be killed in the middle of one


class Cluster:
    """One API process (workers off), a soft-delete warehouse, and the workers processes, each named in Postgres
    (application_name) so the test can tell which one holds a position row."""

    def __init__(self, pg_url: str, nats_url: str, data_dir: Path):
        self.pg_url, self.nats_url, self.data_dir = pg_url, nats_url, data_dir
        self.api = Server(pg_url, data_dir, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="4")
        self.client = httpx.Client(base_url=self.api.url, timeout=60)
        r = self.client.post("/management/v1/warehouse", json={
            "warehouse-name": "wh", "delete-profile": {"type": "soft", "expiration-seconds": 3},
            "storage-profile": {"type": "file", "location": f"file://{data_dir / 'wh'}"}})
        assert r.status_code == 201, r.text
        self.prefix = f"/catalog/v1/{r.json()['warehouse-id']}"
        self.workers: dict[str, WorkersProcess] = {}

    def start_workers(self) -> str:
        name = f"workers-{len(self.workers) + 1}"
        self.workers[name] = WorkersProcess(self.pg_url, self.data_dir, PGAPPNAME=name,
                                            LAKELEDGER__NATS_ADDRESS=self.nats_url,
                                            LAKELEDGER__PURGE_MAX_FILES_PER_SECOND=PURGE_FILES_PER_SECOND)
        return name

    def holder(self, position: str) -> str | None:
        """The workers process whose open transaction has the position row locked, if any: the row's xmax is the
        locking transaction's id."""
        with psycopg.connect(self.pg_url) as conn:
            row = conn.execute("SELECT a.application_name FROM ll_projection_positions p JOIN pg_stat_activity a"
                               " ON a.backend_xid::text = p.xmax::text WHERE p.name = %s", (position,)).fetchone()
        return row[0] if row and row[0] in self.workers else None

    def kill_holder(self, position: str, while_=lambda: True) -> str:
        """Kills -9 the process holding ``position`` (waiting for one to hold it while ``while_()`` is true)."""
        deadline = time.monotonic() + 30
        while (name := self.holder(position)) is None:
            assert while_() and time.monotonic() < deadline, f"nothing held {position} while its work was under way"
            time.sleep(0.005)
        self.workers[name].kill()
        return name

    def events(self, kind: str) -> Counter:
        with psycopg.connect(self.pg_url) as conn:
            rows = conn.execute("SELECT originator_id FROM lakeledger_events WHERE topic LIKE %s",
                                (f"%:Tab%.{kind}",)).fetchall()
        return Counter(str(r[0]) for r in rows)

    def close(self) -> None:
        for w in self.workers.values():
            w.stop()
        self.client.close()
        self.api.stop()


@pytest.fixture
def cluster(database, nats_server, tmp_path):
    c = Cluster(database, nats_server.url, tmp_path)
    yield c
    c.close()


def _files(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def _burst(url: str, prefix: str, how_many: int, errors: list) -> threading.Thread:
    def run():
        try:
            with httpx.Client(base_url=url, timeout=60) as c:
                for i in range(how_many):
                    r = c.post(f"{prefix}/namespaces", json={"namespace": [f"burst_{i}"]})
                    assert r.status_code == 200, r.text
        except BaseException as e:  # surfaced by the test, not lost in the thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_two_workers_processes_killed_one_at_a_time_hold_every_position_exactly_once(cluster):
    c = cluster
    c.start_workers()
    c.start_workers()
    assert c.client.post(f"{c.prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    tables: dict[str, tuple[Path, bool]] = {}
    for i in range(TABLES):
        r = c.client.post(f"{c.prefix}/namespaces/ns/tables", json={"name": f"t{i}", "schema": SCHEMA})
        assert r.status_code == 200, r.text
        location = Path(r.json()["metadata"]["location"].removeprefix("file://"))
        for f in range(FILES):
            (location / "data").mkdir(parents=True, exist_ok=True)
            (location / "data" / f"part-{f:05}.bin").write_bytes(b"x")
        tables[r.json()["metadata"]["table-uuid"]] = (location, i % 2 == 0)
    wait_until(lambda: positions(c.pg_url).get("cloudevents") == head(c.pg_url), 60, "the first events published")

    # A backlog for the publisher: its row held here while a burst and the drops are appended, then let go.
    errors: list[BaseException] = []
    with psycopg.connect(c.pg_url) as hold:
        hold.execute("SELECT 1 FROM ll_projection_positions WHERE name = 'cloudevents' FOR UPDATE")
        start = head(c.pg_url)
        burst = _burst(c.api.url, c.prefix, 200, errors)
        for i, (_, purge) in enumerate(tables.values()):
            r = c.client.delete(f"{c.prefix}/namespaces/ns/tables/t{i}", params={"purgeRequested": str(purge).lower()})
            assert r.status_code == 204, r.text
        wait_until(lambda: head(c.pg_url) >= start + 300, 60, "a backlog of 300 events")
        published = count(c.nats_url)
    wait_until(lambda: count(c.nats_url) >= published + 20, 30, "the publisher taking the backlog",
               interval=0.005)

    # 1. The publisher killed in the middle of a batch: sent, PubAck'd, its position not yet recorded.
    killed = c.kill_holder("cloudevents")
    behind = head(c.pg_url) - positions(c.pg_url)["cloudevents"]
    assert behind > 50, f"the publisher was {behind} events behind the head when killed: too late"
    c.start_workers()

    # 2. The purger killed in the middle of a purge: some of a table's files deleted, Purged not yet recorded.
    purged = [location for location, purge in tables.values() if purge]
    mid_purge = lambda: any(0 < _files(location) < FILES for location in purged)  # noqa: E731
    wait_until(mid_purge, 60, "a purge under way", interval=0.01)
    killed_too = c.kill_holder("purger", while_=mid_purge)
    done_before = len(c.events("Purged"))
    assert done_before < len(purged), "every purge was done before the kill"
    print(f"killed {killed} publishing {behind} events behind the head, then {killed_too} mid-purge "
          f"after {done_before} of {len(purged)} purges")
    c.start_workers()

    burst.join(120)
    assert not errors, errors[0]
    wait_until(lambda: set(c.events("Expired")) >= set(tables) and len(c.events("Purged")) == len(purged), 90,
               "every expiry and purge")
    messages, expected = published_at_head(c.nats_url, c.pg_url)
    assert_exactly_once(messages, expected)
    assert len(expected) > 300 + 3 * TABLES

    names = ("catalog", "history", "expiry-schedule", "users-roles", "access-history", "tags", "purger", "cloudevents")
    wait_until(lambda: all(positions(c.pg_url).get(n) == head(c.pg_url) for n in names), 30,
               "every position reaching the head")
    assert c.events("Expired") == Counter({t: 1 for t in tables})
    assert c.events("Purged") == Counter({t: 1 for t, (_, purge) in tables.items() if purge})
    # every purge's attempts are in the log; the killed one's start has no outcome, and the next start names it
    started = c.events("PurgeStarted")
    assert set(started) == {t for t, (_, purge) in tables.items() if purge} and 2 in started.values(), started
    with psycopg.connect(c.pg_url) as conn:
        abandoned = conn.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE '%%.PurgeStarted'"
                                 " AND convert_from(state, 'UTF8')::jsonb->>'abandoned' IS NOT NULL").fetchone()[0]
    assert abandoned >= 1
    for table_id, (location, purge) in tables.items():
        assert location.exists() is not purge, table_id
        if not purge:
            assert _files(location / "data") == FILES
    with psycopg.connect(c.pg_url) as conn:
        assert conn.execute("SELECT count(*) FROM ll_purge_retries").fetchone()[0] == 0, "a purge failed"

    # The processes that were not killed logged no error: no purge of what another deleted, no batch applied twice.
    for name, w in c.workers.items():
        if name in (killed, killed_too):
            continue
        text = w.log_path.read_text()
        assert "Traceback" not in text and "failed" not in text and "ERROR" not in text, (name, text[-3000:])
