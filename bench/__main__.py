"""``python -m bench``: one full benchmark run, set up and torn down here. See bench/__init__.py."""

import argparse
import os
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import orjson

from . import (
    auth,
    catalog,
    commits,
    compression,
    footprint,
    loadgen,
    metrics_overhead,
    procs,
    publication,
    report,
    s3,
    soft_deletion,
)

AUTH_WARMUP_S = 1.0  # the authorization section's servers are warm after its first round


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--snapshots", type=int, default=100, help="snapshots of the loadTable table (default 100)")
    p.add_argument("--connections", type=int, default=16, help="concurrent loadTable connections (default 16)")
    p.add_argument("--load-seconds", type=float, default=10.0, help="loadTable measurement per server (default 10)")
    p.add_argument("--warmup-seconds", type=float, default=2.0, help="unmeasured load before each (default 2)")
    p.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto",
                   help="loadTable load generator: wrk if installed (auto), or the Python asyncio client")
    p.add_argument("--threads", type=int, default=1,
                   help="wrk threads / Python client processes (default 1: one core is left for the server's "
                        "Postgres; wrk -t1 handles 16 connections easily)")
    p.add_argument("--tables", type=int, default=50, help="tables the commit benchmark spreads over (default 50)")
    p.add_argument("--commit-clients", type=int, default=16, help="concurrent committers (default 16)")
    p.add_argument("--commit-seconds", type=float, default=10.0, help="commit measurement (default 10)")
    p.add_argument("--lag-commits", type=int, default=200, help="commits timed for publication lag (default 200)")
    p.add_argument("--tree-tables", type=int, default=200,
                   help="tables in the namespace dropped and undropped recursively (default 200)")
    p.add_argument("--s3-rounds", type=int, default=3,
                   help="rounds of file-warehouse then S3 vended-credential loadTable (default 3)")
    p.add_argument("--compression-rounds", type=int, default=2,
                   help="rounds of loadTable plain, gzip and zstd (default 2; 0 leaves the section out)")
    p.add_argument("--metrics-rounds", type=int, default=2,
                   help="alternating loadTable rounds with metrics on and off (default 2; 0 leaves them out)")
    p.add_argument("--auth-rounds", type=int, default=3,
                   help="rounds of the authorization section: loadTable, 304 and commits on each server (default 3)")
    p.add_argument("--auth-seconds", type=float, default=5.0,
                   help="each measurement of the authorization section, after a 1 s warm-up (default 5)")
    p.add_argument("--skip-auth", action="store_true", help="leave out the authorization section")
    p.add_argument("--only", choices=("auth",), help="run only this section (auth: authorization's cost)")
    p.add_argument("--idle-seconds", type=float, default=footprint.IDLE_SECONDS,
                   help="idle CPU of serve measured over this long after start and after the run (default 20)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, data) afterwards")
    p.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed")
    args = p.parse_args(argv)
    for name, most in (("snapshots", 10_000), ("connections", 1024), ("threads", 64), ("tables", 1000),
                       ("commit_clients", 256), ("s3_rounds", 10), ("auth_rounds", 10)):
        if not 1 <= getattr(args, name) <= most:
            p.error(f"--{name.replace('_', '-')} must be between 1 and {most}")
    if args.only and args.skip_auth:
        p.error("--only auth and --skip-auth leave nothing to run")
    for name in ("load_seconds", "commit_seconds", "auth_seconds"):
        if not 0 < getattr(args, name) <= 600:
            p.error(f"--{name.replace('_', '-')} must be in (0, 600]")
    if not 0 <= args.compression_rounds <= 10:
        p.error("--compression-rounds must be between 0 and 10")
    if not 0 <= args.metrics_rounds <= 10:
        p.error("--metrics-rounds must be between 0 and 10")
    if not 1 <= args.idle_seconds <= 600:
        p.error("--idle-seconds must be in [1, 600]")
    if not 0 <= args.warmup_seconds <= 60:
        p.error("--warmup-seconds must be in [0, 60]")
    return args


def _say(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _tool(choice: str) -> str:
    if choice == "python":
        return "python"
    if loadgen.wrk_path():
        return "wrk"
    if choice == "wrk":
        raise SystemExit(
            "wrk is not installed: `apt-get install -y wrk` (or `make bench-tools`), or use --loadgen python"
        )
    _say("wrk not found (apt-get install -y wrk); using the slower Python load generator")
    return "python"


def _measure_load(name: str, url: str, args, tool: str, headers: dict[str, str] | None = None,
                  body: bytes | None = None, server_pid: int | None = None) -> loadgen.LoadResult:
    """With ``server_pid``, also the server process's CPU time per request (``result.server_cpu_us``): unlike
    req/s, it does not move with what else the shared machine runs."""
    if args.warmup_seconds:
        _say(f"{name}: warm-up {args.warmup_seconds:g} s")
        loadgen.run(url, args.connections, args.warmup_seconds, args.threads, tool, headers, body)
    _say(f"{name}: {args.load_seconds:g} s, {args.connections} connections")
    cpu_before = procs.cpu_seconds(server_pid) if server_pid else None
    result = loadgen.run(url, args.connections, args.load_seconds, args.threads, tool, headers, body)
    if cpu_before is not None and result.requests:
        result.server_cpu_us = (procs.cpu_seconds(server_pid) - cpu_before) / result.requests * 1e6
    _say(f"{name}: {result.rps:.0f} req/s, p50 {result.p50_ms:.2f} ms, p99 {result.p99_ms:.2f} ms, "
         f"{result.non_2xx} non-2xx, {result.errors} errors")
    return result


def _s3_section(args, tool: str, work: Path, server, file_table: catalog.TableHandle, started: list):
    """MinIO, an STS-enabled S3 warehouse, and loadTable with vended credentials against the file warehouse's
    loadTable (alternating rounds, so both meet the same machine), then the remote signer."""
    binary = s3.minio_path()
    if binary is None:
        raise SystemExit("MinIO is missing (.cache/minio/bin/minio): run `make minio-deps` (make bench does)")
    _say("S3: starting MinIO")
    minio = s3.Minio(binary, work)
    started.append(minio)
    _say(f"S3: creating an STS-enabled S3 warehouse and a table with {args.snapshots} snapshots")
    with httpx.Client(base_url=server.url, timeout=60) as http:
        setup = s3.prepare(http, minio, args.snapshots)
        file_body = catalog.check(http.get(file_table.path, headers=s3.VENDED), 200).content
    file_loads, vended_loads = [], []
    for n in range(1, args.s3_rounds + 1):
        file_loads.append(_measure_load(f"S3 round {n}: loadTable on the file warehouse",
                                        server.url + file_table.path, args, tool, s3.VENDED, server_pid=server.pid))
        vended_loads.append(_measure_load(f"S3 round {n}: loadTable on S3, vended credentials",
                                          server.url + setup.table.path, args, tool, s3.VENDED,
                                          server_pid=server.pid))
    signer = _measure_load("S3 signer", setup.signer_url, args, tool, body=setup.sign_body, server_pid=server.pid)
    context = {"load_tool": loadgen.describe(tool, args.connections, args.threads), "snapshots": args.snapshots,
               "load_seconds": args.load_seconds, "warmup_seconds": args.warmup_seconds,
               "file_body_bytes": len(file_body), "vended_body_bytes": setup.vended_body_bytes}
    minio.stop()
    started.remove(minio)
    return report.render_s3(file_loads, vended_loads, signer, context)


def _core_sections(args, tool: str, work: Path, pg, started: list) -> bool:
    """loadTable against the bare server, 304, S3, commits, soft deletion and publication lag, on one server
    (stopped at the end); prints them, and answers whether every target was met."""
    _say("starting lakeledger serve (workers on)")
    server = procs.start_lakeledger(pg.url, work / "data", work)
    started.append(server)
    idle_footprint = footprint.after_start(server.pid, args.idle_seconds, _say)

    with httpx.Client(base_url=server.url, timeout=60) as http:
        warehouse_dir = work / "warehouse"
        warehouse_dir.mkdir()
        wh = catalog.create_warehouse(http, f"bench-{uuid.uuid4().hex[:8]}", f"file://{warehouse_dir}")
        catalog.create_namespace(http, wh, "bench")
        _say(f"creating the loadTable table and committing {args.snapshots} snapshots")
        table = catalog.create_table(http, wh, "bench", "load_me")
        for _ in range(args.snapshots):
            catalog.commit_snapshot(http, table)
        body = catalog.load(http, table)
        snapshots = len(orjson.loads(body)["metadata"].get("snapshots", []))
        if snapshots != args.snapshots:
            raise RuntimeError(f"the table has {snapshots} snapshots, expected {args.snapshots}")
        _say(f"creating {args.tables} tables for the commit benchmark")
        commit_tables = [catalog.create_table(http, wh, "bench", f"commit_{i:03d}") for i in range(args.tables)]

    url = server.url + table.path
    load = _measure_load("loadTable on Lakeledger", url, args, tool)
    tag = httpx.get(url, timeout=10).headers["etag"]
    if httpx.get(url, headers={"If-None-Match": tag}, timeout=10).status_code != 304:
        raise RuntimeError("Lakeledger does not answer If-None-Match with 304")
    revalidate = _measure_load("loadTable revalidation (If-None-Match, 304)", url, args, tool,
                               {"If-None-Match": tag})

    compression_text = None
    if args.compression_rounds:
        compression_text = compression.run(
            url, body, args.compression_rounds,
            lambda name, u, headers: _measure_load(name, u, args, tool, headers, server_pid=server.pid), _say)

    metrics_text = None
    if args.metrics_rounds:
        metrics_text = metrics_overhead.run(
            pg.url, work / "data", work, table.path, args.metrics_rounds,
            lambda name, u, pid: _measure_load(name, u, args, tool, server_pid=pid), _say)

    body_file = work / "load-table-response.json"
    body_file.write_bytes(body)
    _say(f"starting the bare FastAPI server with the same {len(body)} bytes")
    bare = procs.start_bare(body_file, work)
    started.append(bare)
    for check_url, who in ((url, "Lakeledger"), (bare.url + table.path, "bare server")):
        got = httpx.get(check_url, timeout=10).content
        if got != body:
            raise RuntimeError(f"{who} no longer returns the same bytes ({len(got)} vs {len(body)})")
    bare_result = _measure_load("same bytes on bare FastAPI", bare.url + table.path, args, tool)
    for result, who in ((load, "Lakeledger"), (bare_result, "bare server")):
        if result.ok and result.bytes_per_response < len(body):
            raise RuntimeError(f"{who} sent {result.bytes_per_response:.0f} bytes per response on average, "
                               f"less than the {len(body)}-byte body")
    bare.stop()
    started.remove(bare)

    s3_text, s3_ok = _s3_section(args, tool, work, server, table, started)

    _say(f"commits: {args.commit_clients} clients over {args.tables} tables, {args.commit_seconds:g} s")
    commit_result = commits.run(server.url, commit_tables, args.commit_clients, args.commit_seconds)
    _say(f"commits: {commit_result.rps:.0f}/s, p50 {commit_result.p50_ms:.2f} ms, "
         f"{commit_result.non_200} non-200")
    if server.process.poll() is not None:
        raise RuntimeError(f"lakeledger serve died during the run:\n{server.tail()}")
    server_errors = sum(1 for line in server.tail(10_000_000).splitlines() if " ERROR " in line)
    if server_errors:
        _say(f"lakeledger serve logged {server_errors} ERROR lines (run with --keep to read {server.log_path})")

    _say(f"soft deletion: {args.tree_tables} tables dropped one by one, then a tree of as many dropped "
         f"recursively, undropped, and left to expire")
    with httpx.Client(base_url=server.url, timeout=120) as http:
        soft = soft_deletion.run(http, work, args.tree_tables)

    lag = None
    if publication.nats_server_path():
        _say(f"publication lag: nats-server and a publishing `lakeledger workers`, {args.lag_commits} commits")
        lag = publication.run(pg.url, work / "data", work, server.url, table, args.lag_commits)
    else:
        _say("nats-server not found (make nats-deps): publication lag not measured")

    context = {"cpus": os.cpu_count(), "load_tool": loadgen.describe(tool, args.connections, args.threads),
               "load_seconds": args.load_seconds, "warmup_seconds": args.warmup_seconds,
               "body_bytes": len(body), "commit_seconds": args.commit_seconds, "snapshots": args.snapshots}
    text, all_ok = report.render(load, bare_result, revalidate, commit_result, context)
    print(text, flush=True)
    if compression_text:
        print(compression_text, flush=True)
    if metrics_text:
        print(metrics_text, flush=True)
    print(s3_text, flush=True)
    print(f"Soft deletion, {soft.tables} tables: dropped one request each in {soft.one_by_one_s:.2f} s; as one "
          f"recursive namespace drop in {soft.recursive_drop_s:.2f} s "
          f"(x{soft.one_by_one_s / soft.recursive_drop_s if soft.recursive_drop_s else 0:.1f} faster), undropped in "
          f"{soft.undrop_s:.2f} s; expiry recorded at most {soft.expiry_lag_max_s:.2f} s after the due time; all "
          f"{soft.files_purged} files purged {soft.purge_done_s:.2f} s after it", flush=True)
    if lag is not None:
        print(f"CloudEvents publication lag (commit response -> event from NATS JetStream, {lag.commits} sequential "
              f"commits): p50 {lag.p50_ms:.2f} ms, p99 {lag.p99_ms:.2f} ms, max {lag.max_ms:.2f} ms; "
              f"backlog of {lag.backlog} events published in {lag.backlog_s:.1f} s "
              f"({lag.backlog / lag.backlog_s if lag.backlog_s else 0:.0f} events/s)", flush=True)
    footprint_text, footprint_ok = footprint.after_run(idle_footprint, server.pid, args.idle_seconds, _say)
    print(footprint_text, flush=True)
    server.stop()
    started.remove(server)
    return all_ok and s3_ok and footprint_ok


def _auth_section(args, tool: str, work: Path, pg_url: str, started: list) -> bool:
    timing = argparse.Namespace(**{**vars(args), "load_seconds": args.auth_seconds,
                                   "warmup_seconds": min(args.warmup_seconds, AUTH_WARMUP_S)})

    def measure(name: str, url: str, headers: dict[str, str], pid: int) -> loadgen.LoadResult:
        return _measure_load(name, url, timing, tool, headers, server_pid=pid)

    results = auth.run(args, work, pg_url, started, measure, _say)
    text, ok = report.render_auth(results, {
        "load_tool": loadgen.describe(tool, args.connections, args.threads), "snapshots": args.snapshots,
        "body_bytes": results.body_bytes, "seconds": args.auth_seconds, "warmup_seconds": timing.warmup_seconds,
        "clients": results.commits["off"][0].clients, "tables": args.tables, "rounds": args.auth_rounds,
        "cache_seconds": auth.CACHE_SECONDS})
    print(text, flush=True)
    return ok


def run(args) -> int:
    tool = _tool(args.loadgen)
    work = Path(tempfile.mkdtemp(prefix="lakeledger-bench-"))
    _say(f"working directory {work}")
    started: list = []  # stopped in reverse order
    try:
        _say("starting embedded Postgres (pgserver)")
        pg = procs.EmbeddedPostgres(work / "pg")
        started.append(pg)
        all_ok = True
        if args.only is None:
            all_ok = _core_sections(args, tool, work, pg, started)
        if not args.skip_auth:
            all_ok = _auth_section(args, tool, work, pg.url, started) and all_ok
        return 1 if args.strict and not all_ok else 0
    finally:
        procs.tear_down(started, work, args.keep, _say)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # A SIGTERM must still tear the servers and Postgres down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
