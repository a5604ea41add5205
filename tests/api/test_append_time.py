"""Append times against a real server and Postgres: every event's time of entry into the log follows log order
under concurrent appenders in two API processes, and an instant, once resolved by /config, names the same log
position for ever, even when it was resolved while an append was in flight, and even after the clock stepped
back."""

import json
import threading
import uuid
from datetime import UTC, datetime, timedelta
from urllib.parse import urlparse

import httpx
import psycopg
import pytest
from support import SCHEMA, Server, wait_until

THREADS, ROUNDS = 8, 6


def _resolve(client, warehouse, instant: datetime) -> int:
    r = client.get("/catalog/v1/config", params={"warehouse": f"{warehouse['name']}@{instant.isoformat()}"})
    assert r.status_code == 200, r.text
    prefix = r.json()["overrides"]["prefix"]
    assert prefix.startswith(f"{warehouse['id']}@seq:"), prefix
    return int(prefix.rpartition(":")[2])


def _appended_since(db, after: int) -> list[tuple[int, datetime, datetime]]:
    """(position, append time, the event's own timestamp) of every event after ``after``, in log order."""
    rows = db.execute("SELECT notification_id, appended_at, convert_from(state, 'UTF8') FROM lakeledger_events"
                      " WHERE notification_id > %s ORDER BY notification_id", (after,)).fetchall()
    return [(p, at, datetime.fromisoformat(json.loads(state)["timestamp"]["_data_"])) for p, at, state in rows]


def _appended_by(db, instant: datetime) -> int:
    return db.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events WHERE appended_at <= %s",
                      (instant,)).fetchone()[0]


def _head(db) -> int:
    return db.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]


def _burst(urls: list[str], warehouse, tag: str) -> list[Exception]:
    """THREADS clients over the given API processes, each creating ROUNDS namespaces with a table in each: many
    appends in flight at once."""
    errors: list[Exception] = []
    barrier = threading.Barrier(THREADS)

    def client_thread(i: int) -> None:
        try:
            with httpx.Client(base_url=urls[i % len(urls)], timeout=60) as c:
                barrier.wait()
                for n in range(ROUNDS):
                    ns = f"{tag}{i}x{n}"
                    r = c.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [ns]})
                    assert r.status_code == 200, r.text
                    r = c.post(f"{warehouse['prefix']}/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA})
                    assert r.status_code == 200, r.text
        except Exception as e:  # reported by the test, with the others
            errors.append(e)

    threads = [threading.Thread(target=client_thread, args=(i,)) for i in range(THREADS)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    return errors


def test_append_times_follow_log_order_under_concurrent_appenders(server, second_server, warehouse, db):
    before = _head(db)
    assert _burst([server.url, second_server.url], warehouse, "mono") == []
    appended = _appended_since(db, before)
    assert len(appended) >= THREADS * ROUNDS * 2
    times = [at for _, at, _ in appended]
    assert times == sorted(times), "an append time went back along the log"
    # taken under the lock, after the aggregate decided: never before the event's own timestamp (one host, one clock)
    assert all(at >= own for _, at, own in appended)
    # and each event's append time resolves to it (or to a later event appended in the same microsecond)
    with httpx.Client(base_url=server.url, timeout=60) as c:
        for position, at, _ in appended[::7]:
            resolved = _resolve(c, warehouse, at)
            assert resolved == max(p for p, t, _ in appended if t <= at) and resolved >= position


def test_past_instants_resolved_during_concurrent_appends_never_change(server, second_server, client, warehouse, db):
    resolved: list[tuple[datetime, int]] = []
    errors: list[Exception] = []
    done = threading.Event()

    def appenders() -> None:
        errors.extend(_burst([server.url, second_server.url], warehouse, "stable"))
        done.set()

    burst = threading.Thread(target=appenders)
    burst.start()
    while not done.is_set():  # instants just past, each resolved at once, while appends are in flight
        instant = datetime.now(UTC)
        resolved.append((instant, _resolve(client, warehouse, instant)))
    burst.join()
    assert errors == [] and len(resolved) >= 5
    again = [(instant, _resolve(client, warehouse, instant)) for instant, _ in resolved]
    assert again == resolved
    for instant, position in resolved:  # the answer is the log's own: the last event appended at or before it
        assert position == _appended_by(db, instant)


def test_an_instant_resolved_while_an_append_is_in_flight_keeps_its_answer(server, client, warehouse, db, pg_url):
    """An append holds the log lock and has its append time, but has not committed (here: the catalog projection
    inside its transaction waits for a row this test locks). An instant after that append time, resolved now,
    must already count the append, since it will land in the log at that time."""
    results: dict[str, object] = {}
    before = _head(db)
    with psycopg.connect(pg_url, autocommit=True) as blocker:
        with blocker.transaction():
            blocker.execute("SELECT 1 FROM ll_projection_positions WHERE name = 'catalog' FOR UPDATE")

            def append() -> None:
                with httpx.Client(base_url=server.url, timeout=60) as c:
                    results["append"] = c.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["inflight"]})

            appender = threading.Thread(target=append)
            appender.start()
            wait_until(lambda: blocker.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE l.relation = 'lakeledger_events'::regclass AND l.mode = 'ExclusiveLock' AND l.granted"
                " AND a.wait_event_type = 'Lock'").fetchone()[0], 10, what="an append in flight")
            instant = datetime.now(UTC)  # after the append's time, which was taken at its insert

            def resolve() -> None:
                with httpx.Client(base_url=server.url, timeout=60) as c:
                    results["resolved"] = _resolve(c, warehouse, instant)

            resolver = threading.Thread(target=resolve)
            resolver.start()
            resolver.join(1.0)
            waited = resolver.is_alive()
        # the transaction ends here: the append goes on and commits (within its 10 s lock timeout)
        appender.join(30)
        resolver.join(30)
    assert results["append"].status_code == 200, results["append"].text
    assert waited, "the instant was answered before the append in flight was settled"
    # The append in flight (this test's, or a worker's that got the lock first) was appended before the instant:
    # the answer counts it, and is the answer for good.
    assert results["resolved"] > before
    assert results["resolved"] == _appended_by(db, instant) == _resolve(client, warehouse, instant)


@pytest.fixture
def own_log(pg_url, tmp_path):
    """A server on a database of its own, whose log a test may bend (an append time in the future)."""
    name = f"appendtime_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = urlparse(pg_url)._replace(path=f"/{name}").geturl()
    s = Server(url, tmp_path, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="2")
    try:
        yield s, url
    finally:
        s.stop()
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_append_times_never_go_back_when_the_clock_does(own_log, tmp_path):
    server, url = own_log
    with httpx.Client(base_url=server.url, timeout=60) as c, psycopg.connect(url, autocommit=True) as db:
        r = c.post("/management/v1/warehouse", json={"warehouse-name": "clock", "storage-profile": {
            "type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text
        warehouse = {"name": "clock", "id": r.json()["warehouse-id"],
                     "prefix": f"/catalog/v1/{r.json()['warehouse-id']}"}
        assert c.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["first"]}).status_code == 200
        before = datetime.now(UTC)
        # as if the last append had read a clock an hour ahead, and the clock had been set right since
        ahead = db.execute("UPDATE lakeledger_events SET appended_at = now() + interval '1 hour'"
                           " WHERE notification_id = (SELECT max(notification_id) FROM lakeledger_events)"
                           " RETURNING notification_id, appended_at").fetchone()
        resolved_before = _resolve(c, warehouse, before)
        assert resolved_before < ahead[0]
        assert c.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["later"]}).status_code == 200
        after = _appended_since(db, ahead[0])
        assert after and all(at >= ahead[1] for _, at, _ in after)
        times = [r[1] for r in db.execute("SELECT notification_id, appended_at FROM lakeledger_events"
                                          " ORDER BY notification_id").fetchall()]
        assert times == sorted(times)
        # the past stays as it was answered: the late append did not land before the stepped-back clock's "now"
        assert _resolve(c, warehouse, before) == resolved_before
        assert _resolve(c, warehouse, datetime.now(UTC)) == resolved_before
        assert _resolve(c, warehouse, ahead[1] + timedelta(microseconds=-1)) == resolved_before
