"""``python -m bench.api_processes``: commits through one API process against two on the same port
(``LAKELEDGER__API_PROCESSES``), and through one whose background read models run in a ``lakeledger workers`` of
their own (``LAKELEDGER__WORKERS=off``, as docs/scaling.md lays out), at 1, 4 and 16 concurrent clients over 50
tables, side by side in one run on one Postgres. Each client owns its tables (no two race on one), each commit adds
a snapshot (bench/commits.py). At 16 clients it also says where the CPU of a commit goes (the API processes,
Postgres, this load generator: all on the same cores), and measures a hot table two ways: 16 clients committing updates
that require nothing of the table (the catalog serialises them; no acknowledged update may be lost), and 16 clients
appending snapshots each on what it last saw (refused commits retried on the winner's metadata; no acknowledged snapshot
may be missing from the table's history)."""

import argparse
import os
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import orjson

from . import catalog, commits, procs

CLIENTS = (1, 4, 16)
HOT_CLIENTS = 16


@dataclass
class CpuSplit:
    """CPU milliseconds per commit answered 200, by where they were spent."""

    api: float
    postgres: float
    load_generator: float

    @property
    def total(self) -> float:
        return self.api + self.postgres + self.load_generator


@dataclass
class Measured:
    by_clients: dict[int, commits.CommitResult]
    cpu: CpuSplit
    hot: commits.CommitResult
    hot_lost: list[int]
    hot_snapshots: int
    unconditional: commits.CommitResult
    unconditional_lost: list[str]


def _say(message: str) -> None:
    print(f"[api-processes {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Layout:
    processes: int
    workers_apart: bool = False  # the background read models in a `lakeledger workers` of their own

    @property
    def label(self) -> str:
        return f"{self.processes} process{'es' if self.processes > 1 else ''}" + \
            (" + workers apart" if self.workers_apart else "")


def measure(pg: procs.EmbeddedPostgres, work: Path, layout: Layout, tables: int, seconds: float) -> Measured:
    name = layout.label.replace(" ", "-").replace("+", "")
    settings = {"WORKERS": "off"} if layout.workers_apart else {}
    server = procs.start_lakeledger(pg.url, work / f"data-{name}", work, f"serve-{name}",
                                    API_PROCESSES=str(layout.processes), **settings)
    workers = procs.start_workers(pg.url, work / f"data-{name}", work, f"workers-{name}") \
        if layout.workers_apart else None
    processes = layout.label

    def api_cpu() -> float:
        return procs.tree_cpu_seconds(server.process.pid) + (procs.tree_cpu_seconds(workers.pid) if workers else 0)

    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            where = work / f"warehouse-{processes}"
            where.mkdir()
            wh = catalog.create_warehouse(http, f"procs-{uuid.uuid4().hex[:8]}", f"file://{where}")
            catalog.create_namespace(http, wh, "bench")
            handles = [catalog.create_table(http, wh, "bench", f"t{i:03d}") for i in range(tables)]
            hot_table = catalog.create_table(http, wh, "bench", "hot")
            hot_properties = catalog.create_table(http, wh, "bench", "hot_properties")
        commits.run(server.url, handles, 4, 1.0)  # warm-up
        out = {}
        for clients in CLIENTS:
            before = (api_cpu(), pg.cpu_seconds(), procs.self_cpu_seconds())
            out[clients] = commits.run(server.url, handles, clients, seconds)
            after = (api_cpu(), pg.cpu_seconds(), procs.self_cpu_seconds())
            _say(f"{processes}, {clients} clients: {out[clients].rps:.0f} commits/s, "
                 f"p50 {out[clients].p50_ms:.1f} ms")
        ok = max(out[CLIENTS[-1]].ok, 1)
        cpu = CpuSplit(*((b - a) * 1e3 / ok for a, b in zip(before, after, strict=True)))
        hot = commits.run_hot(server.url, hot_table, HOT_CLIENTS, seconds)
        with httpx.Client(base_url=server.url, timeout=60) as http:
            metadata = orjson.loads(catalog.load(http, hot_table))["metadata"]
        lost = commits.lost(metadata, hot.snapshot_ids)
        _say(f"{processes}, hot table: {hot.rps:.0f} commits/s, {hot.statuses.get(409, 0)} refused (409), "
             f"{len(lost)} lost")
        unconditional, writers = commits.run_hot_unconditional(server.url, hot_properties.path, HOT_CLIENTS, seconds)
        with httpx.Client(base_url=server.url, timeout=60) as http:
            lost_writers = commits.lost_properties(orjson.loads(catalog.load(http, hot_properties))["metadata"],
                                                   writers)
        _say(f"{processes}, hot table, no requirements: {unconditional.rps:.0f} commits/s, "
             f"{len(lost_writers)} lost")
        return Measured(out, cpu, hot, lost, len(metadata.get("snapshots", [])), unconditional, lost_writers)
    finally:
        server.stop()
        if workers is not None:
            workers.stop(grace=30)


def table(results: dict[str, Measured]) -> str:
    lines = [f"commits by API process layout (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; "
             f"ratio: each layout against the first)",
             f"{'clients':>8} " + " ".join(f"{f'{n}: commits/s, p50 / p99 ms':>52}" for n in results)]
    one = next(iter(results.values()))
    for clients in CLIENTS:
        cells = []
        for r in results.values():
            c = r.by_clients[clients]
            ratio = f" x{c.rps / one.by_clients[clients].rps:.2f}" if one.by_clients[clients].rps else ""
            cells.append(f"{c.rps:,.0f}, {c.p50_ms:.1f} / {c.p99_ms:.1f}{ratio}"
                         f"{' (' + str(c.non_200) + ' failed)' if c.non_200 else ''}")
        lines.append(f"{clients:>8} " + " ".join(f"{c:>52}" for c in cells))
    lines.append(_target(results))
    lines.append(f"CPU ms per commit at {CLIENTS[-1]} clients (API processes + Postgres + this load generator, "
                 f"all on the same cores):")
    for n, r in results.items():
        lines.append(f"  {n}: {r.cpu.api:.2f} + {r.cpu.postgres:.2f} + {r.cpu.load_generator:.2f} = "
                     f"{r.cpu.total:.2f} ms; at {os.cpu_count()} cores that bounds commits at "
                     f"{os.cpu_count() * 1e3 / r.cpu.total:.0f}/s")
    lines.append(f"hot table, no requirements: {HOT_CLIENTS} clients setting properties of one table, the catalog "
                 f"serialising them")
    for n, r in results.items():
        u = r.unconditional
        refused = u.statuses.get(409, 0)
        lines.append(f"  {n}: {u.rps:,.0f} commits/s, p50 {u.p50_ms:.1f} / p99 {u.p99_ms:.1f} ms, "
                     f"{refused} refused (409), {u.non_200 - refused} other failures, "
                     f"{len(r.unconditional_lost)} acknowledged updates lost (of {u.ok})")
    lines.append("  (a refusal: the commit kept losing races to another API process's commits for 5 s, each one "
                 "re-applied on the winner's state; a client retries CommitFailedException, as Iceberg's clients do)")
    lines.append(f"hot table, engine appends: {HOT_CLIENTS} clients appending snapshots to one table "
                 f"(assert-ref-snapshot-id), refused commits (409) retried on the winner's metadata")
    for n, r in results.items():
        other = r.hot.non_200 - r.hot.statuses.get(409, 0)
        lines.append(f"  {n}: {r.hot.rps:,.0f} commits/s, p50 {r.hot.p50_ms:.1f} ms, "
                     f"{r.hot.statuses.get(409, 0)} refused, {other} other failures, {len(r.hot_lost)} acknowledged "
                     f"commits lost (of {r.hot.ok}; {r.hot_snapshots} snapshots in the table)")
    return "\n".join(lines)


TARGET_RPS, TARGET_P50_MS = 400, 10.0


def _target(results: dict[str, Measured]) -> str:
    """Whether any layout and client count reached the commit target (PRODUCT.md), and the best that did or not."""
    rows = [(c.rps, c.p50_ms, n, clients) for n, r in results.items() for clients, c in r.by_clients.items()]
    met = [row for row in rows if row[0] >= TARGET_RPS and row[1] <= TARGET_P50_MS]
    rps, p50, layout, clients = max(met or [row for row in rows if row[1] <= TARGET_P50_MS] or rows)
    return (f"target >= {TARGET_RPS} commits/s with p50 <= {TARGET_P50_MS:g} ms: "
            f"{'met' if met else 'not met'}, best {rps:,.0f}/s at p50 {p50:.1f} ms ({layout}, {clients} clients)")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.api_processes", description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", type=int, nargs="+", default=[1, 2], help="API process counts (default 1 2)")
    p.add_argument("--no-workers-apart", action="store_true",
                   help="leave out the last layout: one API process, the background read models in their own process")
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--seconds", type=float, default=5.0, help="each measurement (default 5)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lakeledger-api-processes-") as tmp:
        pg = procs.EmbeddedPostgres(Path(tmp) / "pg")
        try:
            layouts = [Layout(n) for n in args.processes] + ([] if args.no_workers_apart else [Layout(1, True)])
            results = {layout.label: measure(pg, Path(tmp), layout, args.tables, args.seconds) for layout in layouts}
        finally:
            pg.stop()
    print(table(results))
    failed = [n for n, r in results.items() if r.hot_lost or r.hot.non_200 != r.hot.statuses.get(409, 0)
              or r.unconditional_lost or r.unconditional.non_200 != r.unconditional.statuses.get(409, 0)
              or any(c.non_200 for c in r.by_clients.values())]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
