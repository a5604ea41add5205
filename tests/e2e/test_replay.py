"""`lakeledger replay` and `lakeledger projections` against the real log: every event, once, in order, into a
JSON-lines file or an Iceberg table read back with pyiceberg; no live position moves."""

import json
import os
import re
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime

from pyiceberg.catalog.rest import RestCatalog
from support import SCHEMA

from lakeledger.eventstore.identity import event_id


def _cli(pg_url, data_dir, *args):
    env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    return subprocess.run([sys.executable, "-m", "lakeledger.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def _log(db, after=0):
    return db.execute("SELECT notification_id, originator_id, originator_version FROM lakeledger_events"
                      " WHERE notification_id > %s ORDER BY notification_id", (after,)).fetchall()


def _settled_positions(db) -> list:
    """The projections' positions once the live workers have caught up with the log."""
    deadline = time.monotonic() + 30
    while True:
        head = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
        rows = db.execute("SELECT name, position FROM ll_projection_positions WHERE name IN ('catalog', 'purger')"
                          " ORDER BY name").fetchall()
        if all(position == head for _, position in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def _changes(client, warehouse, namespace="replayed"):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": [namespace]})
    client.post(f"{p}/namespaces/{namespace}/tables", json={"name": "t", "schema": SCHEMA})
    client.post(f"{p}/namespaces/{namespace}/tables/t", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"k": "v"}}]})


def test_replay_into_a_json_lines_file_is_every_event_once_in_order(client, warehouse, db, pg_url, data_dir, tmp_path):
    _changes(client, warehouse)
    positions = _settled_positions(db)
    out = tmp_path / "history.jsonl"
    done = _cli(pg_url, data_dir, "replay", "--sink", "jsonl", "--out", str(out))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_bytes().split(b"\n")[:-1]]
    stored = _log(db)[:len(lines)]
    assert len(lines) >= len(stored) > 0
    assert [e["sequence"] for e in lines] == [row[0] for row in stored]
    assert [e["id"] for e in lines] == [str(event_id(row[1], row[2])) for row in stored]
    assert len({e["id"] for e in lines}) == len(lines)
    committed = [e for e in lines if e["type"] == "table.committed" and e["data"].get("updates")]
    assert committed and committed[-1]["data"]["updates"][0]["action"] == "set-properties"
    assert _settled_positions(db) == positions  # replay moved no live position
    # progress on stderr (not a terminal: plain lines), ending with the whole range covered
    last = lines[-1]["sequence"]
    assert re.search(rf"^replay: {last:,}/{last:,} events \(100 %\), [\d,]+ events/s, elapsed ", done.stderr, re.M), \
        done.stderr


def test_replay_a_range_by_position_and_by_instant(client, warehouse, db, pg_url, data_dir, tmp_path):
    _changes(client, warehouse, "first")
    middle = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    instant = datetime.now(UTC).isoformat()
    _changes(client, warehouse, "second")
    by_position = tmp_path / "range.jsonl"
    assert _cli(pg_url, data_dir, "replay", "--sink", "jsonl", "--out", str(by_position),
                "--from", f"seq:{middle + 1}").returncode == 0
    sequences = [json.loads(line)["sequence"] for line in by_position.read_bytes().split(b"\n")[:-1]]
    assert sequences[0] > middle and sequences == sorted(sequences)
    by_instant = tmp_path / "until.jsonl"
    assert (
        _cli(pg_url, data_dir, "replay", "--sink", "jsonl", "--out", str(by_instant), "--to", instant).returncode == 0
    )
    times = [json.loads(line)["time"] for line in by_instant.read_bytes().split(b"\n")[:-1]]
    assert times and max(times) <= instant
    assert max(json.loads(line)["sequence"] for line in by_instant.read_bytes().split(b"\n")[:-1]) <= middle


def test_bad_bounds_are_refused(pg_url, data_dir, tmp_path):
    done = _cli(pg_url, data_dir, "replay", "--sink", "jsonl", "--out", str(tmp_path / "x"), "--from", "yesterday")
    assert done.returncode != 0 and "neither a log position nor an RFC 3339 instant" in done.stderr
    assert not (tmp_path / "x").exists()


def test_replay_into_an_iceberg_table_that_pyiceberg_reads(client, server, warehouse, db, pg_url, data_dir):
    _changes(client, warehouse, "audited")
    stored = [row[0] for row in _log(db)]  # positions; refused appends leave gaps in the numbering
    head = stored[-1]
    done = _cli(pg_url, data_dir, "replay", "--sink", "iceberg", "--uri", f"{server.url}/catalog",
                "--warehouse", warehouse["name"], "--table", "audit.events", "--to", str(head))
    assert done.returncode == 0, done.stderr
    assert f"replayed {len(stored)} events" in done.stdout
    catalog = RestCatalog("reader", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    rows = catalog.load_table("audit.events").scan().to_arrow().sort_by("sequence")
    assert rows.column("sequence").to_pylist() == stored
    assert set(rows.column("type").to_pylist()) >= {"namespace.created", "table.created", "table.committed"}


def test_projections_shows_positions_and_lag(client, warehouse, pg_url, data_dir):
    _changes(client, warehouse, f"p{uuid.uuid4().hex[:6]}")
    done = _cli(pg_url, data_dir, "projections")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:]}
    head = int(lines["(log"][2])
    assert int(lines["catalog"][1]) == head and int(lines["catalog"][2]) == 0  # applied inside each append


def test_replay_into_a_nats_subject_twice_is_de_duplicated_by_jetstream(client, warehouse, db, pg_url, data_dir,
                                                                        nats_server):
    import asyncio

    import nats

    _changes(client, warehouse, "natsreplay")
    stored = [row for row in _log(db)]

    async def stream(create: bool):
        nc = await nats.connect(nats_server.url)
        try:
            js = nc.jetstream()
            if create:
                await js.add_stream(name="REPLAY", subjects=["replayed.>"], duplicate_window=3600)
                return None
            info = await js.stream_info("REPLAY")
            sub = await js.pull_subscribe("replayed.>", durable="check")
            messages = []
            while len(messages) < info.state.messages:
                batch = await sub.fetch(min(500, info.state.messages - len(messages)), timeout=10)
                for m in batch:
                    await m.ack()  # unacknowledged messages would stop the consumer at max_ack_pending
                messages += batch
            return [json.loads(m.data) for m in messages]
        finally:
            await nc.close()

    asyncio.run(stream(create=True))
    for _ in range(2):
        done = _cli(pg_url, data_dir, "replay", "--sink", "nats", "--nats-address", nats_server.url,
                    "--subject", "replayed", "--to", str(stored[-1][0]))
        assert done.returncode == 0, done.stderr
    received = asyncio.run(stream(create=False))
    assert [e["id"] for e in received] == [str(event_id(o, v)) for _, o, v in stored]
