"""Footprint of ``lakeledger serve``: the CPU it burns while nobody calls it, and its resident memory after start
and after the rest of the bench. ``python -m bench.footprint`` measures a server on its own (about a minute, for
the before/after of a change): idle, a short loadTable and commit run, idle again."""

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from . import procs

IDLE_SECONDS = 20.0
RSS_TARGET_MB = 150.0
IDLE_CPU_TARGET_PCT = 0.2  # of one core; Lakekeeper measured 0.08 %


@dataclass
class Idle:
    seconds: float
    cpu_pct: float  # of one core, user + system
    wakeups: int  # voluntary + involuntary context switches of every thread


@dataclass
class Footprint:
    idle_after_start: Idle
    rss_after_start_mb: float
    idle_after_run: Idle | None = None
    rss_after_run_mb: float | None = None


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def _switches(process: psutil.Process) -> int:
    """Context switches of every thread (/proc's process figure counts the main thread only); a thread that
    ended during the window takes its count with it, so this is a floor."""
    total = 0
    for status in Path(f"/proc/{process.pid}/task").glob("*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        total += sum(int(line.split()[1]) for line in text.splitlines() if line.split(":")[0] in
                     ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))
    return total


def idle(pid: int, seconds: float) -> Idle:
    """CPU and context switches of the process over ``seconds`` in which nothing calls it."""
    process = psutil.Process(pid)
    t0, c0, s0 = time.monotonic(), process.cpu_times(), _switches(process)
    time.sleep(seconds)
    t1, c1, s1 = time.monotonic(), process.cpu_times(), _switches(process)
    used = (c1.user - c0.user) + (c1.system - c0.system)
    return Idle(t1 - t0, used / (t1 - t0) * 100, s1 - s0)


SETTLE_SECONDS = 2.0  # start-up's own work (default project, the workers' first passes) is over by then


def after_start(pid: int, idle_seconds: float, say) -> Footprint:
    """Right after ``serve`` is ready: its RSS, and its CPU over ``idle_seconds`` of nobody calling."""
    time.sleep(SETTLE_SECONDS)
    rss = rss_mb(pid)
    say(f"footprint: RSS {rss:.1f} MB after start; {idle_seconds:g} s idle")
    return Footprint(idle(pid, idle_seconds), rss)


def after_run(f: Footprint, pid: int, idle_seconds: float, say) -> tuple[str, bool]:
    """At the end of the run on the same server: RSS, then idle CPU again; the rendered section."""
    f.rss_after_run_mb = rss_mb(pid)
    say(f"footprint: RSS {f.rss_after_run_mb:.1f} MB after the run; {idle_seconds:g} s idle")
    f.idle_after_run = idle(pid, idle_seconds)
    return render(f)


def render(f: Footprint) -> tuple[str, bool]:
    rss = f.rss_after_run_mb if f.rss_after_run_mb is not None else f.rss_after_start_mb
    idles = [i for i in (f.idle_after_start, f.idle_after_run) if i is not None]
    rss_ok = rss <= RSS_TARGET_MB
    cpu_ok = all(i.cpu_pct <= IDLE_CPU_TARGET_PCT for i in idles)
    lines = ["Footprint of lakeledger serve (workers on, one process)",
             "  idle: nothing calls the server; CPU is user + system of the process over the window, wake-ups its "
             "context switches per second"]

    def idle_row(name: str, i: Idle) -> str:
        return (
            f"  {name:<34} {i.cpu_pct:>7.3f} % of a core  {i.wakeups / i.seconds:>7.1f} wake-ups/s  "
            f"({i.seconds:.0f} s)  target <= {IDLE_CPU_TARGET_PCT:g} %: "
            f"{'PASS' if i.cpu_pct <= IDLE_CPU_TARGET_PCT else 'MISS'}"
        )

    lines.append(idle_row("idle CPU after start", f.idle_after_start))
    if f.idle_after_run is not None:
        lines.append(idle_row("idle CPU after the run", f.idle_after_run))
    lines.append(f"  {'RSS after start':<34} {f.rss_after_start_mb:>7.1f} MB")
    if f.rss_after_run_mb is not None:
        lines.append(f"  {'RSS after the run':<34} {f.rss_after_run_mb:>7.1f} MB  target <= {RSS_TARGET_MB:g} MB: "
                     f"{'PASS' if rss_ok else 'MISS'}")
    return "\n".join(lines), rss_ok and cpu_ok


def _short_run(url: str, load_seconds: float, say) -> None:
    """A small stand-in for the bench's core section: a 100-snapshot table loaded with wrk (or the Python
    client), then commits by 16 clients over 50 tables."""
    import uuid

    import httpx

    from . import catalog, commits, loadgen

    with httpx.Client(base_url=url, timeout=60) as http:
        work = Path(tempfile.mkdtemp(prefix="lakeledger-footprint-wh-"))
        wh = catalog.create_warehouse(http, f"footprint-{uuid.uuid4().hex[:8]}", f"file://{work}")
        catalog.create_namespace(http, wh, "bench")
        table = catalog.create_table(http, wh, "bench", "load_me")
        for _ in range(100):
            catalog.commit_snapshot(http, table)
        tables = [catalog.create_table(http, wh, "bench", f"commit_{i:03d}") for i in range(50)]
    say(f"loadTable {load_seconds:g} s, then commits {load_seconds:g} s")
    loadgen.run(url + table.path, 16, load_seconds, 1, "wrk" if loadgen.wrk_path() else "python")
    commits.run(url, tables, 16, load_seconds)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.footprint", description=__doc__)
    p.add_argument("--idle-seconds", type=float, default=IDLE_SECONDS)
    p.add_argument("--load-seconds", type=float, default=10.0,
                   help="a short loadTable and commit run between the two measurements (0: none)")
    args = p.parse_args(argv)

    def say(message: str) -> None:
        print(f"[footprint {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    work = Path(tempfile.mkdtemp(prefix="lakeledger-footprint-"))
    pg = procs.EmbeddedPostgres(work / "pg")
    try:
        server = procs.start_lakeledger(pg.url, work / "data", work)
        try:
            f = after_start(server.pid, args.idle_seconds, say)
            if args.load_seconds:
                _short_run(server.url, args.load_seconds, say)
                text = after_run(f, server.pid, args.idle_seconds, say)[0]
            else:
                text = render(f)[0]
        finally:
            server.stop()
    finally:
        pg.stop()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
