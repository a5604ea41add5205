"""The commit benchmark: concurrent clients, each owning distinct tables (so no two clients ever
race on one table), each commit adding one snapshot and moving main to it."""

import asyncio
import copy
import time
from collections import Counter
from dataclasses import dataclass, field

import orjson

from .catalog import TableHandle
from .stats import percentile
from .wire import Closed, Connection

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
    snapshot_ids: list[int] = field(default_factory=list)  # of every commit answered 200

    @property
    def non_200(self) -> int:
        return sum(self.statuses.values())

    @property
    def rps(self) -> float:
        return self.ok / self.duration_s if self.duration_s else 0.0


def run(base_url: str, tables: list[TableHandle], clients: int, duration_s: float,
        headers: dict[str, str] | None = None) -> CommitResult:
    """``headers`` go with every request (e.g. Authorization)."""
    clients = max(1, min(clients, len(tables)))
    owned = [tables[i::clients] for i in range(clients)]  # disjoint: client i owns tables i, i+clients, ...
    return _loop(_run(base_url, owned, duration_s, headers or {}, len(tables)))


def run_hot(base_url: str, table: TableHandle, clients: int, duration_s: float) -> CommitResult:
    """Every client appends a snapshot to the same table, each on what it last saw of it (assert-ref-snapshot-id,
    as engines append): all but one of a race get 409 CommitFailed, reload the table and try again on top of the
    winner, as engines do."""
    return _loop(_run(base_url, [[copy.copy(table)] for _ in range(clients)], duration_s, {}, 1))


class PropertyWriter:
    """One client of a hot table whose commits require nothing of it: each sets the client's own property to a
    counter. The catalog applies each to the table as it then is, racing the others; an update lost to a race
    shows as a property left behind its client's last acknowledged value."""

    def __init__(self, path: str, key: str):
        self.path = path
        self.key = key
        self.acknowledged = -1
        self._next = 0

    def next_commit(self) -> tuple[bytes, int, int]:
        self._next += 1
        body = {"requirements": [], "updates": [{"action": "set-properties", "updates": {self.key: str(self._next)}}]}
        return orjson.dumps(body), self._next, 0

    def committed(self, value: int, _: int) -> None:
        self.acknowledged = value

    def update_from(self, metadata: dict) -> None:
        pass


def run_hot_unconditional(base_url: str, path: str, clients: int, duration_s: float) -> tuple[CommitResult, list]:
    """Every client commits to the same table with no requirement (``PropertyWriter``); returns the writers, whose
    last acknowledged values ``lost_properties`` checks."""
    writers = [PropertyWriter(path, f"writer-{i}") for i in range(clients)]
    return _loop(_run(base_url, [[w] for w in writers], duration_s, {}, 1)), writers


def lost_properties(metadata: dict, writers: list[PropertyWriter]) -> list[str]:
    """Writers whose last acknowledged value the table does not show."""
    properties = metadata.get("properties", {})
    return [w.key for w in writers if w.acknowledged >= 0 and properties.get(w.key) != str(w.acknowledged)]


def _loop(coroutine):
    try:
        import uvloop
        return uvloop.run(coroutine)
    except ImportError:
        return asyncio.run(coroutine)


async def _run(base_url: str, owned: list[list[TableHandle]], duration_s: float, headers: dict[str, str],
               tables: int) -> CommitResult:
    clients = len(owned)
    acknowledged: list[int] = []
    latencies: list[float] = []
    statuses: Counter = Counter()
    failures: list[str] = []
    errors = 0
    start = time.perf_counter()
    deadline = start + duration_s

    async def client(mine: list[TableHandle]) -> None:
        nonlocal errors
        http = Connection(base_url, headers, REQUEST_TIMEOUT_S)
        try:
            for i in range(MAX_COMMITS_PER_CLIENT):
                if time.perf_counter() >= deadline:
                    return
                table = mine[i % len(mine)]
                body, snapshot_id, sequence_number = table.next_commit()
                t0 = time.perf_counter()
                try:
                    status, content = await http.request("POST", table.path, body)
                except (TimeoutError, OSError, Closed) as e:
                    errors += 1
                    if len(failures) < 5:
                        failures.append(f"{type(e).__name__}: {e}")
                    continue
                elapsed = time.perf_counter() - t0
                if status == 200:
                    latencies.append(elapsed)
                    acknowledged.append(snapshot_id)
                    table.committed(snapshot_id, sequence_number)
                    continue
                statuses[status] += 1
                if len(failures) < 5:
                    failures.append(f"{status}: {content[:300].decode(errors='replace')}")
                # Whatever happened, build the next commit on what the catalog now says.
                try:
                    status, content = await http.request("GET", table.path)
                    if status == 200:
                        table.update_from(orjson.loads(content)["metadata"])
                except (TimeoutError, OSError, Closed):
                    errors += 1
        finally:
            http.close()

    await asyncio.gather(*(client(mine) for mine in owned))
    duration = time.perf_counter() - start
    latencies.sort()
    return CommitResult(len(latencies), statuses, errors, duration, percentile(latencies, 50) * 1e3,
                        percentile(latencies, 99) * 1e3, clients, tables, failures, acknowledged)


def lost(metadata: dict, acknowledged: list[int]) -> list[int]:
    """The acknowledged snapshots that are not in the main branch's history: updates a later commit lost."""
    by_id = {s["snapshot-id"]: s for s in metadata.get("snapshots", [])}
    history, current = set(), metadata.get("current-snapshot-id")
    while current is not None and current != -1 and current in by_id:
        history.add(current)
        current = by_id[current].get("parent-snapshot-id")
    return [s for s in acknowledged if s not in history]
