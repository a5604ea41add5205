"""What Prometheus metrics cost (issue 15, point 8): loadTable of the same table from two API processes on one
database, one counting and timing every request (LAKELEDGER__METRICS=on, the default) and one not (off), in
alternating rounds so both meet the same machine; and what one scrape of /metrics takes."""

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from . import procs
from .loadgen import LoadResult


def _scrape_ms(url: str) -> tuple[float, int]:
    runs, size = [], 0
    with httpx.Client(timeout=30) as http:
        for _ in range(20):
            started = time.perf_counter()
            r = http.get(f"{url}/metrics")
            runs.append((time.perf_counter() - started) * 1000)
            size = len(r.content)
    return statistics.median(runs), size


def run(pg_url: str, data_dir: Path, work: Path, path: str, rounds: int,
        measure: Callable[[str, str, int], LoadResult], say) -> str:
    servers = {}
    try:
        for state in ("on", "off"):
            say(f"metrics overhead: starting an API process with LAKELEDGER__METRICS={state}")
            servers[state] = procs.start_lakeledger(pg_url, data_dir, work, f"metrics-{state}",
                                                    WORKERS="off", METRICS=state)
        results: dict[str, list[LoadResult]] = {"on": [], "off": []}
        for n in range(1, rounds + 1):
            for state in ("on", "off"):
                server = servers[state]
                results[state].append(measure(f"metrics round {n}: loadTable, metrics {state}", server.url + path,
                                              server.pid))
        scrape_ms, scrape_bytes = _scrape_ms(servers["on"].url)
    finally:
        for server in servers.values():
            server.stop()
    on = statistics.mean(r.rps for r in results["on"])
    off = statistics.mean(r.rps for r in results["off"])
    lines = [f"Metrics overhead: loadTable, {rounds} alternating rounds, one API process each (workers off)",
             f"  {'metrics':<8} {'req/s (rounds)':>26} {'p99 ms':>7} {'CPU us/req':>10}"]
    for state in ("on", "off"):
        runs = results[state]
        cpu = [r.server_cpu_us for r in runs if r.server_cpu_us is not None]
        per_round = f"{statistics.mean(r.rps for r in runs):,.0f} (" + ", ".join(f"{r.rps:,.0f}" for r in runs) + ")"
        lines.append(f"  {state:<8} {per_round:>26} {max(r.p99_ms for r in runs):>7.2f} "
                     f"{(f'{statistics.mean(cpu):.0f}' if cpu else '-'):>10}")
    cost = (off - on) / off * 100 if off else 0
    verdict = "met" if cost < 5 else "MISSED"
    lines.append(f"  cost of metrics: {cost:+.1f} % of loadTable req/s (target < 5 %: {verdict}); one scrape of "
                 f"/metrics {scrape_ms:.1f} ms, {scrape_bytes:,} bytes")
    return "\n".join(lines)
