"""The commit benchmark: concurrent clients, each owning distinct tables (so no two clients ever
race on one table), each commit adding one snapshot and moving main to it."""

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx
import orjson

from .catalog import TableHandle
from .stats import percentile

MAX_COMMITS_PER_CLIENT = 100_000  # the deadline ends the loop first; this is just a bound
REQUEST_TIMEOUT_S = 30.0


@dataclass
class CommitResult:
    ok: int
    statuses: Counter          # non-200 responses by status code
    errors: int                # transport errors (no response)
    duration_s: float
    p50_ms: float
    p99_ms: float
    clients: int
    tables: int
    first_failures: list[str] = field(default_factory=list)

    @property
    def non_200(self) -> int:
        return sum(self.statuses.values())

    @property
    def rps(self) -> float:
        return self.ok / self.duration_s if self.duration_s else 0.0


def run(base_url: str, tables: list[TableHandle], clients: int, duration_s: float,
        headers: dict[str, str] | None = None) -> CommitResult:
    """``headers`` go with every request (e.g. Authorization)."""
    try:
        import uvloop
        return uvloop.run(_run(base_url, tables, clients, duration_s, headers or {}))
    except ImportError:
        return asyncio.run(_run(base_url, tables, clients, duration_s, headers or {}))


async def _run(base_url: str, tables: list[TableHandle], clients: int, duration_s: float,
               headers: dict[str, str]) -> CommitResult:
    clients = max(1, min(clients, len(tables)))
    owned = [tables[i::clients] for i in range(clients)]  # disjoint: client i owns tables i, i+clients, ...
    latencies: list[float] = []
    statuses: Counter = Counter()
    failures: list[str] = []
    errors = 0
    start = time.perf_counter()
    deadline = start + duration_s

    async def client(mine: list[TableHandle]) -> None:
        nonlocal errors
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        async with httpx.AsyncClient(base_url=base_url, timeout=REQUEST_TIMEOUT_S, limits=limits,
                                     headers=headers) as http:
            for i in range(MAX_COMMITS_PER_CLIENT):
                if time.perf_counter() >= deadline:
                    return
                table = mine[i % len(mine)]
                body, snapshot_id, sequence_number = table.next_commit()
                t0 = time.perf_counter()
                try:
                    r = await http.post(table.path, content=body, headers={"content-type": "application/json"})
                except httpx.HTTPError as e:
                    errors += 1
                    if len(failures) < 5:
                        failures.append(f"{type(e).__name__}: {e}")
                    continue
                elapsed = time.perf_counter() - t0
                if r.status_code == 200:
                    latencies.append(elapsed)
                    table.committed(snapshot_id, sequence_number)
                    continue
                statuses[r.status_code] += 1
                if len(failures) < 5:
                    failures.append(f"{r.status_code}: {r.text[:300]}")
                # Whatever happened, build the next commit on what the catalog now says.
                try:
                    loaded = await http.get(table.path)
                    if loaded.status_code == 200:
                        table.update_from(orjson.loads(loaded.content)["metadata"])
                except httpx.HTTPError:
                    errors += 1

    await asyncio.gather(*(client(mine) for mine in owned))
    duration = time.perf_counter() - start
    latencies.sort()
    return CommitResult(len(latencies), statuses, errors, duration, percentile(latencies, 50) * 1e3,
                        percentile(latencies, 99) * 1e3, clients, len(tables), failures)
