"""CloudEvents publication to a real NATS JetStream, exactly once and in log order, across crashes: the
publisher killed -9, nats-server restarted, Postgres restarted, each in the middle of a burst of changes.
Each test has a database of its own (on this module's own embedded Postgres, which one test restarts) and
a nats-server of its own; what the stream holds is compared, id by id, with the log."""

import asyncio
import contextlib
import subprocess
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import jetstream_log
import nats
import psycopg
import pytest
from support import SCHEMA, Server, WorkersProcess

from lakeledger.eventstore.identity import event_id, event_type

STREAM = "LAKELEDGER"
SUBJECT = "lakeledger"


@pytest.fixture(scope="module")
def postgres(postgres_home):
    """This module's own embedded Postgres: one test restarts it under the processes using it. Kept in the
    session's postgres_home, not pytest's temporary directory (see that fixture)."""
    import pgserver
    from pgserver import pg_ctl

    server = pgserver.get_server(postgres_home / "cloudevents", cleanup_mode=None)
    yield server
    with contextlib.suppress(subprocess.CalledProcessError):
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=server.pgdata, user=server.system_user)


@pytest.fixture
def database(postgres) -> str:
    name = f"ce_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres.get_uri(name)


def _api(pg_url: str, data_dir: Path, **env) -> Server:
    return Server(pg_url, data_dir, LAKELEDGER__WORKER_POLL_SECONDS="0.2", **env)


def _warehouse(client: httpx.Client, path: Path) -> dict:
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}",
        "storage-profile": {"type": "file", "location": f"file://{path}"}})
    assert r.status_code == 201, r.text
    return {"id": r.json()["warehouse-id"], "prefix": f"/catalog/v1/{r.json()['warehouse-id']}"}


def _burst(client: httpx.Client, prefix: str, count: int, tolerate_errors: bool = False) -> None:
    """``count`` changes (namespace creations, each a few events); with ``tolerate_errors`` a request that
    fails (the database is restarting) is simply not retried: the log, not the burst, is what is compared."""
    for i in range(count):
        try:
            r = client.post(f"{prefix}/namespaces", json={"namespace": [f"burst_{i}"]})
            if not tolerate_errors:
                assert r.status_code == 200, r.text
        except httpx.HTTPError:
            if not tolerate_errors:
                raise


def _log_ids(pg_url: str) -> list[tuple[int, str, str, str]]:
    """(position, event id, entity id, event type) of every event, in log order."""
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT notification_id, originator_id, originator_version, topic"
                            " FROM lakeledger_events ORDER BY notification_id").fetchall()
    return [(p, str(event_id(o, v)), str(o), event_type(t)) for p, o, v, t in rows]


async def _stream_config(url: str):
    nc = await nats.connect(url, connect_timeout=2)
    try:
        return (await nc.jetstream().stream_info(STREAM)).config
    finally:
        await nc.close()


def _published(nats_url: str, pg_url: str, timeout: float = 60) -> tuple[list[dict], list[tuple]]:
    """Waits until the stream holds as many messages as the log has events (and the position row is at
    the head), then returns both."""
    deadline = time.monotonic() + timeout
    while True:
        expected = _log_ids(pg_url)
        try:
            messages = jetstream_log.stream(nats_url)
        except (TimeoutError, OSError, nats.errors.Error):
            messages = []
        if len(messages) >= len(expected) or time.monotonic() > deadline:
            return messages, expected
        time.sleep(0.3)


def _assert_exactly_once_in_order(messages: list[dict], expected: list[tuple]) -> None:
    published = [m["event"]["id"] for m in messages]
    assert len(published) == len(set(published)), "an event was published twice"
    assert published == [e[1] for e in expected]
    assert [m["event"]["sequence"] for m in messages] == [e[0] for e in expected]
    assert all(m["headers"].get("Nats-Msg-Id") == m["event"]["id"] for m in messages)


def test_every_event_is_a_cloudevent_in_log_order(tmp_path, database, nats_server):
    started = datetime.now(UTC) - timedelta(seconds=5)
    api = _api(database, tmp_path, LAKELEDGER__NATS_ADDRESS=nats_server.url)
    try:
        with httpx.Client(base_url=api.url, timeout=60) as client:
            wh = _warehouse(client, tmp_path / "wh")
            prefix = wh["prefix"]
            assert client.post(f"{prefix}/namespaces", json={"namespace": ["sales"]}).status_code == 200
            r = client.post(f"{prefix}/namespaces/sales/tables", json={"name": "big", "schema": SCHEMA})
            assert r.status_code == 200, r.text
            table_id = r.json()["metadata"]["table-uuid"]
            # a metrics report is an event of the log like any other (docs/metrics-reports.md): published too
            report = {"report-type": "commit-report", "table-name": "sales.big", "snapshot-id": 1, "sequence-number": 1,
                      "operation": "append", "metrics": {"added-records": {"unit": "count", "value": 3}}}
            assert client.post(f"{prefix}/namespaces/sales/tables/big/metrics", json=report).status_code == 204
            r = client.post(f"{prefix}/tables/rename", json={"source": {"namespace": ["sales"], "name": "big"},
                                                              "destination": {"namespace": ["sales"], "name": "large"}})
            assert r.status_code == 204, r.text
            # no purge: its table.purged, recorded by the worker whenever it gets to it, would race the last assertion
            assert client.delete(f"{prefix}/namespaces/sales/tables/large",
                                 params={"purgeRequested": "false"}).status_code == 204
            messages, expected = _published(nats_server.url, database)
            _assert_exactly_once_in_order(messages, expected)

            by_id = {e[1]: e for e in expected}
            for m in messages:
                ce = m["event"]
                position, _, entity, etype = by_id[ce["id"]]
                assert ce["specversion"] == "1.0"
                if etype.startswith("tabular."):  # renames and drops are named for the kind: table.renamed
                    etype = ce["type"].removeprefix("io.lakeledger.")
                    assert etype.partition(".")[0] in ("table", "view")
                assert ce["type"] == f"io.lakeledger.{etype}"
                assert m["subject"] == f"{SUBJECT}.{etype}"
                assert ce["source"] == f"/lakeledger/{uuid.UUID(int=0)}"
                assert ce["subject"] == entity
                assert ce["entitytype"] == etype.partition(".")[0]
                assert ce["datacontenttype"] == "application/json"
                assert m["headers"]["Content-Type"] == "application/cloudevents+json"
                assert started <= datetime.fromisoformat(ce["time"].replace("Z", "+00:00")) <= datetime.now(UTC)
                assert ce["actor"] and ce["requestid"]
                assert isinstance(ce["data"], dict)
            table_events = [m["event"] for m in messages if m["event"]["subject"] == table_id]
            assert [e["type"] for e in table_events][-2:] == [
                "io.lakeledger.table.renamed",
                "io.lakeledger.table.dropped",
            ]
            assert all(e["warehouseid"] == wh["id"] for e in table_events)
            [reported] = [m["event"] for m in messages if m["event"]["type"] == "io.lakeledger.metrics-report.received"]
            assert reported["warehouseid"] == wh["id"] and reported["data"]["table_id"] == table_id
            assert reported["data"]["report"] == report and reported["data"]["kind"] == "commit-report"
            assert table_events[0]["data"]["name"] == "big"

            config = asyncio.run(_stream_config(nats_server.url))
            assert config.subjects == [f"{SUBJECT}.>"]
            assert config.duplicate_window == 3600

            # As after a crash between the PubAcks and the commit of the position: everything is sent
            # again, and JetStream drops every repeat.
            with psycopg.connect(database, autocommit=True) as conn:
                conn.execute("UPDATE ll_projection_positions SET position = 0 WHERE name = 'cloudevents'")
            assert client.post(f"{prefix}/namespaces", json={"namespace": ["after"]}).status_code == 200
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                with psycopg.connect(database) as conn:
                    position = conn.execute("SELECT position FROM ll_projection_positions"
                                            " WHERE name = 'cloudevents'").fetchone()[0]
                if position == _log_ids(database)[-1][0]:
                    break
                time.sleep(0.2)
            messages, expected = _published(nats_server.url, database)
            _assert_exactly_once_in_order(messages, expected)
    finally:
        api.stop()


def _burst_in_background(api: Server, prefix: str, count: int, tolerate_errors: bool = False) -> threading.Thread:
    errors: list[BaseException] = []

    def run():
        try:
            with httpx.Client(base_url=api.url, timeout=30) as client:
                _burst(client, prefix, count, tolerate_errors)
        except BaseException as e:  # surfaced by the test, not lost in the thread
            errors.append(e)

    thread = threading.Thread(target=run)
    thread.errors = errors
    thread.start()
    return thread


def _wait_for_messages(nats_url: str, at_least: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while _count(nats_url) < at_least:
        assert time.monotonic() < deadline, f"fewer than {at_least} messages were published in {timeout}s"
        time.sleep(0.002)


def _log_length(pg_url: str) -> int:
    with psycopg.connect(pg_url) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def _count(nats_url: str) -> int:
    try:
        return jetstream_log.count(nats_url)
    except (TimeoutError, OSError, nats.errors.Error):
        return 0


def _catching_up(pg_url: str, nats_url: str, backlog: int, start_burst) -> threading.Thread:
    """Holds the publisher back (its position row locked) while the burst started by ``start_burst`` leaves
    ``backlog`` events waiting, then lets it go and returns (the burst) once it is part-way through them: a
    crash now falls in the middle of a batch, after some PubAcks and before the position is recorded, where
    only de-duplication prevents repeats."""
    deadline = time.monotonic() + 30
    with psycopg.connect(pg_url) as hold:
        while hold.execute("SELECT position FROM ll_projection_positions WHERE name = 'cloudevents'"
                           " FOR UPDATE").fetchone() is None:
            hold.rollback()
            assert time.monotonic() < deadline, "the publisher never registered its position"
            time.sleep(0.1)
        start = _log_length(pg_url)
        burst = start_burst()
        while _log_length(pg_url) < start + backlog:
            assert time.monotonic() < deadline, "the burst is too slow"
            time.sleep(0.05)
        before = _count(nats_url)
    _wait_for_messages(nats_url, before + 20)
    return burst


@pytest.fixture
def split(tmp_path, database, nats_server):
    """An API process without workers, and `lakeledger workers` publishing, on one fresh database."""
    api = _api(database, tmp_path, LAKELEDGER__WORKERS="off")
    with httpx.Client(base_url=api.url, timeout=60) as client:
        wh = _warehouse(client, tmp_path / "wh")
    workers = [WorkersProcess(database, tmp_path, LAKELEDGER__NATS_ADDRESS=nats_server.url)]
    yield api, wh, workers
    for w in workers:
        w.stop()
    api.stop()


def test_publisher_killed_mid_burst_loses_and_repeats_nothing(tmp_path, database, nats_server, split):
    api, wh, workers = split
    burst = _catching_up(database, nats_server.url, 250, lambda: _burst_in_background(api, wh["prefix"], 200))
    workers[0].kill()
    assert burst.is_alive(), "the burst ended before the publisher was killed"
    workers.append(WorkersProcess(database, tmp_path, LAKELEDGER__NATS_ADDRESS=nats_server.url))
    burst.join(120)
    assert not burst.errors
    messages, expected = _published(nats_server.url, database)
    assert len(expected) > 400
    _assert_exactly_once_in_order(messages, expected)


def test_nats_restarted_mid_burst_loses_and_repeats_nothing(tmp_path, database, nats_server, split):
    api, wh, _ = split
    burst = _catching_up(database, nats_server.url, 250, lambda: _burst_in_background(api, wh["prefix"], 200))
    nats_server.kill()
    time.sleep(1.0)  # the publisher fails and backs off meanwhile
    nats_server.start()
    burst.join(120)
    assert not burst.errors
    messages, expected = _published(nats_server.url, database)
    assert len(expected) > 400
    _assert_exactly_once_in_order(messages, expected)


def test_postgres_restarted_mid_burst_loses_and_repeats_nothing(tmp_path, postgres, database, nats_server, split):
    from pgserver import pg_ctl

    api, wh, _ = split
    burst = _catching_up(database, nats_server.url, 250,
                         lambda: _burst_in_background(api, wh["prefix"], 200, tolerate_errors=True))
    pg_ctl(["-w", "-m", "fast", "restart"], pgdata=postgres.pgdata, user=postgres.system_user, timeout=60)
    burst.join(120)
    assert not burst.errors
    # Changes after the restart are published too: the publisher reconnected.
    with httpx.Client(base_url=api.url, timeout=30) as client:
        deadline = time.monotonic() + 30
        while client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["after_restart"]}).status_code not in (
            200,
            409,
        ):
            assert time.monotonic() < deadline, "the API did not recover from the Postgres restart"
            time.sleep(0.5)
    messages, expected = _published(nats_server.url, database)
    assert len(expected) > 100
    _assert_exactly_once_in_order(messages, expected)
