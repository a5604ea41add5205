"""``python -m bench.api_processes``: commits through one API process against two on the same port
(``LAKELEDGER__API_PROCESSES``), at 1, 4 and 16 concurrent clients over 50 tables, side by side in one run on one
Postgres. Each client owns its tables (no two race on one), each commit adds a snapshot (bench/commits.py)."""

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from . import catalog, commits, procs

CLIENTS = (1, 4, 16)


def _say(message: str) -> None:
    print(f"[api-processes {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def measure(pg_url: str, work: Path, processes: int, tables: int, seconds: float) -> dict[int, commits.CommitResult]:
    server = procs.start_lakeledger(pg_url, work / f"data-{processes}", work, f"serve-{processes}",
                                    API_PROCESSES=str(processes))
    try:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            where = work / f"warehouse-{processes}"
            where.mkdir()
            wh = catalog.create_warehouse(http, f"procs-{uuid.uuid4().hex[:8]}", f"file://{where}")
            catalog.create_namespace(http, wh, "bench")
            handles = [catalog.create_table(http, wh, "bench", f"t{i:03d}") for i in range(tables)]
        commits.run(server.url, handles, 4, 1.0)  # warm-up
        out = {}
        for clients in CLIENTS:
            out[clients] = commits.run(server.url, handles, clients, seconds)
            _say(f"{processes} process(es), {clients} clients: {out[clients].rps:.0f} commits/s, "
                 f"p50 {out[clients].p50_ms:.1f} ms")
        return out
    finally:
        server.stop()


def table(results: dict[int, dict[int, commits.CommitResult]]) -> str:
    lines = [f"commits by API processes (load average {' '.join(f'{x:.1f}' for x in os.getloadavg())})",
             f"{'clients':>8} " + " ".join(f"{f'{n} process(es): commits/s, p50 / p99 ms':>42}" for n in results)
             + "  ratio"]
    one, *rest = results.values()
    for clients in CLIENTS:
        cells = [f"{r[clients].rps:>14,.0f}, {r[clients].p50_ms:>6.1f} / {r[clients].p99_ms:>6.1f}"
                 f"{' (' + str(r[clients].non_200) + ' failed)' if r[clients].non_200 else ''}" for r in results.values()]
        ratio = f"x{rest[-1][clients].rps / one[clients].rps:.2f}" if rest and one[clients].rps else ""
        lines.append(f"{clients:>8} " + " ".join(f"{c:>42}" for c in cells) + f"  {ratio}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.api_processes", description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", type=int, nargs="+", default=[1, 2], help="API process counts (default 1 2)")
    p.add_argument("--tables", type=int, default=50)
    p.add_argument("--seconds", type=float, default=5.0, help="each measurement (default 5)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lakeledger-api-processes-") as tmp:
        pg = procs.EmbeddedPostgres(Path(tmp) / "pg")
        try:
            results = {n: measure(pg.url, Path(tmp), n, args.tables, args.seconds) for n in args.processes}
        finally:
            pg.stop()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
