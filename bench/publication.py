"""Publication lag: from a commit's HTTP response to its CloudEvent arriving from NATS JetStream.

Runs after the other scenarios, so the publisher's CPU does not count against them: a real nats-server
(-js) and a `lakeledger workers` process with the NATS address start, publish the backlog, and then one
client commits to a table one commit at a time while a NATS subscriber notes when each commit's event
arrives."""

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from harness import processes

from .catalog import TableHandle
from .procs import free_port, start_workers
from .stats import percentile

SUBJECT = "lakeledger"


@dataclass
class LagResult:
    commits: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    backlog: int
    backlog_s: float


def nats_server_path() -> str | None:
    return processes.nats_server_binary()


def run(pg_url: str, data_dir: Path, work: Path, base_url: str, table: TableHandle, commits: int) -> LagResult:
    store = work / "jetstream"
    store.mkdir()
    nats = processes.Nats(nats_server_path() or "nats-server", free_port(), store, work / "nats.log")
    workers = start_workers(pg_url, data_dir, work, "publisher", NATS_ADDRESS=nats.url, NATS_SUBJECT=SUBJECT)
    try:
        return asyncio.run(_measure(nats.url, pg_url, base_url, table, commits))
    finally:
        for process in (workers, nats):
            process.stop(grace=15)


async def _measure(nats_url: str, pg_url: str, base_url: str, table: TableHandle, commits: int) -> LagResult:
    import nats
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        backlog = conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]
    nc = await nats.connect(nats_url, connect_timeout=10)
    arrived: dict[str, float] = {}
    seen = 0
    caught_up = asyncio.Event()

    async def on_message(msg) -> None:
        nonlocal seen
        seen += 1
        event = orjson.loads(msg.data)
        arrived[event["id"]] = time.perf_counter()
        if seen >= backlog:
            caught_up.set()

    await nc.subscribe(f"{SUBJECT}.>", cb=on_message)
    started = time.perf_counter()
    await asyncio.wait_for(caught_up.wait(), timeout=600)
    backlog_s = time.perf_counter() - started

    lags = []
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        for _ in range(commits):
            before = set(arrived)
            body, snapshot_id, sequence_number = table.next_commit()
            response = await http.post(table.path, content=body, headers={"content-type": "application/json"})
            answered = time.perf_counter()
            if response.status_code != 200:
                raise RuntimeError(f"commit failed: {response.status_code} {response.text[:300]}")
            table.committed(snapshot_id, sequence_number)
            deadline = answered + 30
            while len(arrived) == len(before) and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            new = [arrived[i] for i in arrived.keys() - before]
            if not new:
                raise RuntimeError("a commit's CloudEvent did not arrive within 30 s")
            lags.append(max(0.0, max(new) - answered) * 1000)  # 0: it arrived before the HTTP response
    await nc.drain()
    lags.sort()
    return LagResult(len(lags), percentile(lags, 50), percentile(lags, 99), lags[-1], backlog, backlog_s)
