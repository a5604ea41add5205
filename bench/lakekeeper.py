"""``python -m bench.lakekeeper``: Lakekeeper (Rust; ``make bench-lakekeeper`` builds it from its pinned source into
.cache/lakekeeper) beside Lakeledger with its defaults (``lakeledger serve``, one process), in one run on one Postgres
server and one MinIO, each catalog on an S3 warehouse of the same JSON (Lakekeeper has no file storage), each sent the
very same request bodies and headers. Each round measures on each server in turn (Lakekeeper first, then
Lakeledger, then Lakekeeper again ...): createTable of 1,000 tables by 8 clients into a new namespace, listTables of
that namespace (1,000 tables), loadTable of a 100-snapshot table and its revalidation (``If-None-Match``, 304) under
16 wrk connections, and commits by 16 clients over 50 of the round's new tables, each adding a snapshot
(bench/commits.py). After the rounds: each server's resident memory and its CPU while nobody calls it. The table
gives the median of the rounds and the ratio Lakeledger / Lakekeeper (> 1: Lakeledger ahead), with the load average
and the foreign CPU: what processes other than the two servers, Postgres, MinIO and the load generator used during the
measurements. Without the binary it says how to build it and exits 0; it exits 1 when a request to Lakeledger
failed."""

import argparse
import asyncio
import contextlib
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import orjson
import psutil

from harness import processes

from . import catalog, commits, footprint, loadgen, procs, s3
from .stats import percentile
from .wire import Closed, Connection

COMMIT = "90892e9cc1b5"  # scripts/build-lakekeeper.sh's pinned commit, the binary's name
BIN_ENV = "LAKELEDGER_LAKEKEEPER_BIN"
DEFAULT_BIN = f".cache/lakekeeper/bin/lakekeeper-{COMMIT}"
BUILD_HINT = "LAKELEDGER_LAKEKEEPER_SOURCE=/path/to/lakekeeper make bench-lakekeeper"
LAKEKEEPER = "Lakekeeper"
LAKELEDGER = "Lakeledger"
CREATE_CLIENTS = 8
CONNECTIONS = 16
COMMIT_CLIENTS = 16
COMMIT_TABLES = 50
REQUEST_TIMEOUT_S = 30.0
WARMUP_S = 1.0
WAREHOUSE = "bench"
# The revalidation's loads ask for no storage access: on S3 Lakekeeper answers 304 to nothing else (a load that may
# carry credentials is answered in full, as they may have expired), and Lakeledger answers it alike.
CLIENT_MANAGED = {s3.DELEGATION: "client-managed"}


def _say(message: str) -> None:
    print(f"[lakekeeper {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def binary() -> Path | None:
    return processes.cached_tool(BIN_ENV, DEFAULT_BIN)


# -- the servers ---------------------------------------------------------------------------------------------------

def start_lakekeeper(binary_path: Path, pg_url: str, work: Path) -> procs.ServerProcess:
    """``lakekeeper migrate``, then ``lakekeeper serve`` on a free loopback port (its metrics on another), logging
    warnings and errors only, as the bench's Lakeledger does (LAKELEDGER__LOG_LEVEL=warning)."""
    port = procs.free_port()
    env = {"LAKEKEEPER__PG_DATABASE_URL_READ": pg_url, "LAKEKEEPER__PG_DATABASE_URL_WRITE": pg_url,
           "LAKEKEEPER__PG_ENCRYPTION_KEY": "lakeledger-bench-encryption-key",
           "LAKEKEEPER__LISTEN_PORT": str(port), "LAKEKEEPER__BIND_IP": procs.LOOPBACK,
           "LAKEKEEPER__METRICS__PORT": str(procs.free_port()), "RUST_LOG": "warn"}
    with open(work / "lakekeeper-migrate.log", "wb") as log:
        done = subprocess.run([str(binary_path), "migrate"], env={**os.environ, **env}, stdout=log,
                              stderr=subprocess.STDOUT, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"lakekeeper migrate failed ({done.returncode}):\n"
                           f"{(work / 'lakekeeper-migrate.log').read_text(errors='replace')[-3000:]}")
    return procs.ServerProcess("lakekeeper serve", [str(binary_path), "serve"], port, work / "lakekeeper.log", env)


def warehouse_body(minio: s3.Minio, key_prefix: str) -> dict:
    """The S3 warehouse both catalogs get: without STS (Lakekeeper answers loads with a remote-signing config then),
    path-style on MinIO, an access key."""
    return {"warehouse-name": WAREHOUSE,
            "storage-profile": {"type": "s3", "bucket": s3.BUCKET, "key-prefix": key_prefix,
                                "endpoint": minio.endpoint, "region": s3.REGION, "path-style-access": True,
                                "flavor": "s3-compat", "sts-enabled": False},
            "storage-credential": {"type": "s3", "credential-type": "access-key", "aws-access-key-id": minio.user,
                                   "aws-secret-access-key": minio.password}}


@dataclass
class Side:
    """One catalog under test, set up: its URL, its process tree, its catalog prefix and the loadTable table."""

    name: str
    server: procs.ServerProcess
    prefix: str
    load_table: catalog.TableHandle
    etag: str
    load_bytes: int  # the loadTable answer's body

    @property
    def url(self) -> str:
        return self.server.url

    def namespace_path(self, namespace: str) -> str:
        return f"/catalog/v1/{self.prefix}/namespaces/{namespace}"


def prepare(name: str, server: procs.ServerProcess, minio: s3.Minio, snapshots: int) -> Side:
    """The warehouse, namespace ``bench`` and its ``load_me`` table with ``snapshots`` commits, through the same
    requests on both catalogs; checks that a client-managed load answers an ETag and its revalidation 304."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        if name == LAKEKEEPER:
            catalog.check(http.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}), 200, 204)
        catalog.check(http.post("/management/v1/warehouse", json=warehouse_body(minio, name.lower())), 200, 201)
        config = catalog.check(http.get("/catalog/v1/config", params={"warehouse": WAREHOUSE}), 200).json()
        # Lakekeeper sends the prefix among the defaults, Lakeledger among the overrides
        prefix = config.get("overrides", {}).get("prefix") or config.get("defaults", {}).get("prefix")
        if not prefix:
            raise RuntimeError(f"{name}'s /config names no prefix: {config}")
        catalog.create_namespace(http, prefix, "bench")
        table = catalog.create_table(http, prefix, "bench", "load_me")
        for _ in range(snapshots):
            catalog.commit_snapshot(http, table)
        loaded = catalog.check(http.get(table.path), 200)
        got = len(orjson.loads(loaded.content)["metadata"].get("snapshots", []))
        if got != snapshots:
            raise RuntimeError(f"{name}'s table has {got} snapshots, expected {snapshots}")
        etag = catalog.check(http.get(table.path, headers=CLIENT_MANAGED), 200).headers.get("etag")
        if not etag:
            raise RuntimeError(f"{name} answers loadTable without an ETag")
        catalog.check(http.get(table.path, headers={**CLIENT_MANAGED, "If-None-Match": etag}), 304)
    return Side(name, server, prefix, table, etag, len(loaded.content))


# -- foreign CPU ---------------------------------------------------------------------------------------------------

def _busy_seconds() -> float:
    """CPU time every core of the machine has spent busy so far (/proc/stat: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class Accounting:
    """The CPU of the processes the comparison knows (both servers, Postgres, MinIO, this process and the load
    generators it waited for), and of the whole machine, around each measurement: the difference, in cores, is the
    foreign CPU, what the rest of the machine took meanwhile. A known process that ended inside a window (a Postgres
    backend closing its connection) counts as foreign, so it is an upper bound."""

    def __init__(self, known_pids: Callable[[], list[int]]):
        self._known_pids = known_pids
        self.windows: list[tuple[float, float]] = []  # (seconds, foreign cores)

    def _known(self) -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return sum(procs.tree_cpu_seconds(pid) for pid in self._known_pids()) + procs.self_cpu_seconds() \
            + children.ru_utime + children.ru_stime

    def measure(self, work: Callable[[], "Result"]) -> "Result":
        t0, busy0, known0 = time.monotonic(), _busy_seconds(), self._known()
        result = work()
        t1, busy1, known1 = time.monotonic(), _busy_seconds(), self._known()
        seconds = t1 - t0
        result.foreign_cores = max(0.0, (busy1 - busy0) - (known1 - known0)) / seconds if seconds else 0.0
        self.windows.append((seconds, result.foreign_cores))
        return result


# -- the workloads -------------------------------------------------------------------------------------------------

@dataclass
class Result:
    """One workload on one server in one round."""

    rps: float
    p50_ms: float
    p99_ms: float
    failed: int                       # answers other than the expected one, and transport errors
    first_failures: list[str] = field(default_factory=list)
    foreign_cores: float = 0.0


def _from_load(result: loadgen.LoadResult) -> Result:
    return Result(result.rps, result.p50_ms, result.p99_ms, result.non_2xx + result.errors)


def _from_commits(result: commits.CommitResult) -> Result:
    return Result(result.rps, result.p50_ms, result.p99_ms, result.non_200 + result.errors, result.first_failures)


@dataclass
class Created:
    result: Result
    tables: list[catalog.TableHandle]


def create_tables(side: Side, namespace: str, count: int, clients: int) -> Created:
    """``count`` tables created by ``clients`` concurrent clients (keep-alive, bench/wire.py), each taking the next
    name; the rate is tables created per second of the whole."""
    path = side.namespace_path(namespace) + "/tables"
    names = iter(f"t{i:04d}" for i in range(count))
    latencies: list[float] = []
    failures: Counter = Counter()
    first_failures: list[str] = []
    handles: dict[str, catalog.TableHandle] = {}

    async def client() -> None:
        http = Connection(side.url, timeout_s=REQUEST_TIMEOUT_S)
        try:
            for name in names:
                body = orjson.dumps({"name": name, "schema": catalog.SCHEMA})
                t0 = time.perf_counter()
                try:
                    status, content = await http.request("POST", path, body)
                except (TimeoutError, OSError, Closed) as e:
                    failures["transport"] += 1
                    if len(first_failures) < 5:
                        first_failures.append(f"{type(e).__name__}: {e}")
                    continue
                if status != 200:
                    failures[status] += 1
                    if len(first_failures) < 5:
                        first_failures.append(f"{status}: {content[:300].decode(errors='replace')}")
                    continue
                latencies.append(time.perf_counter() - t0)
                handle = catalog.TableHandle(f"{path}/{name}", "", None, 0)
                handle.update_from(orjson.loads(content)["metadata"])
                handles[name] = handle
        finally:
            http.close()

    async def all_clients() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return time.perf_counter() - start

    elapsed = commits._loop(all_clients())
    latencies.sort()
    result = Result(len(latencies) / elapsed if elapsed else 0.0, percentile(latencies, 50) * 1e3,
                    percentile(latencies, 99) * 1e3, sum(failures.values()), first_failures)
    return Created(result, [handles[n] for n in sorted(handles)])


def _load(url: str, seconds: float, headers: dict[str, str] | None = None) -> Result:
    tool = "wrk" if loadgen.wrk_path() else "python"
    loadgen.run(url, CONNECTIONS, WARMUP_S, 1, tool, headers)
    return _from_load(loadgen.run(url, CONNECTIONS, seconds, 1, tool, headers))


WORKLOADS = ("createTable", "listTables", "loadTable", "revalidation", "commits")
LABELS = {"createTable": f"createTable, {CREATE_CLIENTS} clients",
          "listTables": f"listTables, {CONNECTIONS} connections",
          "loadTable": f"loadTable, {CONNECTIONS} connections",
          "revalidation": f"revalidation (If-None-Match → 304, client-managed), {CONNECTIONS} connections",
          "commits": f"commits, {COMMIT_CLIENTS} clients over {COMMIT_TABLES} tables"}


def run_round(side: Side, round_no: int, args, accounting: Accounting) -> dict[str, Result]:
    """Every workload once on ``side``, in a namespace of this round."""
    out: dict[str, Result] = {}
    namespace = f"round{round_no}"
    with httpx.Client(base_url=side.url, timeout=60) as http:
        catalog.create_namespace(http, side.prefix, namespace)

    _say(f"round {round_no}, {side.name}: createTable of {args.list_tables} tables, {CREATE_CLIENTS} clients")
    created: list[Created] = []

    def create() -> Result:
        created.append(create_tables(side, namespace, args.list_tables, CREATE_CLIENTS))
        return created[0].result

    out["createTable"] = accounting.measure(create)
    tables = created[0].tables

    list_url = side.url + side.namespace_path(namespace) + "/tables"
    listed = orjson.loads(catalog.check(httpx.get(list_url, timeout=60), 200).content)
    if len(listed.get("identifiers", [])) != len(tables):
        raise RuntimeError(f"{side.name} lists {len(listed.get('identifiers', []))} of the {len(tables)} tables "
                           f"of {namespace} in one answer")
    load_url = side.url + side.load_table.path
    for name, url, headers in (("listTables", list_url, None), ("loadTable", load_url, None),
                               ("revalidation", load_url, {**CLIENT_MANAGED, "If-None-Match": side.etag})):
        _say(f"round {round_no}, {side.name}: {name}, {args.seconds:g} s")
        out[name] = accounting.measure(lambda u=url, h=headers: _load(u, args.seconds, h))

    commit_tables = tables[:COMMIT_TABLES]
    _say(f"round {round_no}, {side.name}: commits, {args.seconds:g} s")
    commits.run(side.url, commit_tables, 4, WARMUP_S)
    out["commits"] = accounting.measure(
        lambda: _from_commits(commits.run(side.url, commit_tables, COMMIT_CLIENTS, args.seconds)))
    for name, r in out.items():
        _say(f"  {name}: {r.rps:,.0f}/s, p50 {r.p50_ms:.1f} ms, p99 {r.p99_ms:.1f} ms, {r.failed} failed, "
             f"foreign CPU {r.foreign_cores:.2f} cores" + (f"; {r.first_failures[0]}" if r.first_failures else ""))
    return out


# -- memory and idle -----------------------------------------------------------------------------------------------

def tree_rss_mb(pid: int) -> tuple[float, int]:
    """The resident memory of a process and its descendants, and how many processes that is."""
    process = psutil.Process(pid)
    tree = [process, *process.children(recursive=True)]
    total = 0
    for p in tree:
        with contextlib.suppress(psutil.Error):  # a child that ended meanwhile
            total += p.memory_info().rss
    return total / 2**20, len(tree)


def idle_cpu_pct(pids: list[int], seconds: float) -> list[float]:
    """Each process tree's CPU, in % of a core, over the same ``seconds`` of nobody calling any of them."""
    before = [procs.tree_cpu_seconds(pid) for pid in pids]
    t0 = time.monotonic()
    time.sleep(seconds)
    elapsed = time.monotonic() - t0
    return [(procs.tree_cpu_seconds(pid) - b) / elapsed * 100 for pid, b in zip(pids, before, strict=True)]


# -- the table -----------------------------------------------------------------------------------------------------

def _median(results: list[Result], attribute: str) -> float:
    return statistics.median(getattr(r, attribute) for r in results)


def render(rounds: dict[str, list[dict[str, Result]]], rss: dict[str, tuple[float, int]], idle: dict[str, float],
           context: dict) -> str:
    lk, ll = rounds[LAKEKEEPER], rounds[LAKELEDGER]
    lines = [f"Lakekeeper {context['lakekeeper_version']} (commit {COMMIT}) beside Lakeledger (`lakeledger serve`, "
             f"its defaults), S3 warehouses on one MinIO, one Postgres {context['postgres']} server; median of "
             f"{len(ll)} alternating rounds (Lakekeeper first), {context['seconds']:g} s a load "
             f"({context['load_tool']}), createTable of {context['tables']} tables",
             f"load average {context['load_before']} before, {context['load_after']} after; foreign CPU during the "
             f"measurements: mean {context['foreign_mean']:.2f}, max {context['foreign_max']:.2f} cores "
             f"(of {os.cpu_count()}); loadTable answers {context['load_bytes']}",
             "",
             "| workload | Lakekeeper | Lakeledger | ratio | Lakekeeper p50 / p99 ms | Lakeledger p50 / p99 ms |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for w in WORKLOADS:
        a = [r[w] for r in lk]
        b = [r[w] for r in ll]
        a_rps, b_rps = _median(a, "rps"), _median(b, "rps")
        unit = "tables/s" if w == "createTable" else "commits/s" if w == "commits" else "req/s"
        wins = sum(1 for x, y in zip(a, b, strict=True) if y.rps > x.rps)
        failed = sum(r.failed for r in b)
        label = f"listTables of {context['tables']:,} tables, {CONNECTIONS} connections" if w == "listTables" \
            else f"createTable, {CREATE_CLIENTS} clients ({context['tables']:,} tables)" if w == "createTable" \
            else LABELS[w]
        lines.append(
            f"| {label} | {a_rps:,.0f} {unit} | {b_rps:,.0f} | "
            f"{b_rps / a_rps if a_rps else 0:.2f} ({wins}/{len(b)} rounds ahead) | "
            f"{_median(a, 'p50_ms'):.1f} / {_median(a, 'p99_ms'):.1f} | "
            f"{_median(b, 'p50_ms'):.1f} / {_median(b, 'p99_ms'):.1f}"
            + (f" ({failed} failed)" if failed else "") + " |")
    (lk_rss, lk_procs), (ll_rss, ll_procs) = rss[LAKEKEEPER], rss[LAKELEDGER]
    ratio = ll_rss / lk_rss if lk_rss else 0.0

    def processes(n: int) -> str:
        return f" ({n} processes)" if n > 1 else ""

    times = f"{ratio:.1f}× more" if ratio >= 1 or not ratio else f"{1 / ratio:.1f}× less"
    lines.append(f"| RSS after the runs | {lk_rss:.0f} MB{processes(lk_procs)} | "
                 f"{ll_rss:.0f} MB{processes(ll_procs)} | {times} | | |")
    lines.append(f"| idle CPU after the runs ({context['idle_seconds']:g} s) | {idle[LAKEKEEPER]:.2f} % of a core | "
                 f"{idle[LAKELEDGER]:.2f} % | | | |")
    lines.append("")
    lines.append("rounds (req/s, Lakekeeper / Lakeledger):")
    for w in WORKLOADS:
        cells = "  ".join(f"{x[w].rps:,.0f} / {y[w].rps:,.0f}" for x, y in zip(lk, ll, strict=True))
        foreign = max(r[w].foreign_cores for r in lk + ll)
        lines.append(f"  {w:<13} {cells}   (foreign CPU at most {foreign:.2f} cores)")
    lk_failed = {w: sum(r[w].failed for r in lk) for w in WORKLOADS}
    if any(lk_failed.values()):
        lines.append("Lakekeeper's failed requests: " + ", ".join(f"{w} {n}" for w, n in lk_failed.items() if n))
    return "\n".join(lines)


# -- the run -------------------------------------------------------------------------------------------------------

def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.lakekeeper", description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    p.add_argument("--seconds", type=float, default=10.0, help="each load and the commits, per round (default 10)")
    p.add_argument("--snapshots", type=int, default=100, help="snapshots of the loadTable table (default 100)")
    p.add_argument("--list-tables", type=int, default=1000,
                   help="tables createTable makes each round, which listTables then lists (default 1000)")
    p.add_argument("--idle-seconds", type=float, default=footprint.IDLE_SECONDS,
                   help="idle CPU of both servers measured over this long after the rounds (default 20)")
    p.add_argument("--only", choices=("lakeledger",),
                   help="measure Lakeledger alone, as if the binary were missing (for working on the section)")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs) afterwards")
    args = p.parse_args(argv)
    if not 1 <= args.rounds <= 20:
        p.error("--rounds must be between 1 and 20")
    if not 0 < args.seconds <= 600:
        p.error("--seconds must be in (0, 600]")
    if not COMMIT_TABLES <= args.list_tables <= 1000:
        p.error(f"--list-tables must be between {COMMIT_TABLES} and 1000 (Lakekeeper's largest page)")
    return args


def run(args) -> int:
    lakekeeper = None if args.only else binary()
    if lakekeeper is None and not args.only:
        print(f"Lakekeeper beside Lakeledger: not measured, Lakekeeper is not built "
              f"({os.environ.get(BIN_ENV) or DEFAULT_BIN} is missing): {BUILD_HINT}", flush=True)
        return 0
    pg_bin = procs.contrib_postgres_bin()
    if pg_bin is None:
        raise SystemExit("Lakekeeper's migrations need Postgres' contrib extensions, which pgserver lacks: "
                         "apt-get install postgresql postgresql-contrib (or LAKELEDGER_BENCH_PG_BIN=its bin directory)")
    minio_bin = s3.minio_path()
    if minio_bin is None:
        raise SystemExit("MinIO is missing (.cache/minio/bin/minio): run `make minio-deps` (make bench does)")
    work = Path(tempfile.mkdtemp(prefix="lakeledger-bench-lakekeeper-"))
    _say(f"working directory {work}")
    started: list = []
    try:
        _say(f"starting Postgres ({pg_bin}) and MinIO")
        pg = procs.ContribPostgres(pg_bin)
        started.append(pg)
        minio = s3.Minio(minio_bin, work)
        started.append(minio)
        minio.make_bucket(s3.BUCKET)
        sides: dict[str, Side] = {}
        if lakekeeper is not None:
            _say(f"starting {lakekeeper.name}")
            server = start_lakekeeper(lakekeeper, pg.create_database("lakekeeper"), work)
            started.append(server)
            sides[LAKEKEEPER] = prepare(LAKEKEEPER, server, minio, args.snapshots)
        _say("starting lakeledger serve")
        server = procs.start_lakeledger(pg.create_database("lakeledger"), work / "data", work)
        started.append(server)
        sides[LAKELEDGER] = prepare(LAKELEDGER, server, minio, args.snapshots)

        def known() -> list[int]:
            return [pg.pid, minio.pid, *(s.server.pid for s in sides.values())]

        accounting = Accounting(known)
        load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
        rounds: dict[str, list[dict[str, Result]]] = {name: [] for name in sides}
        for n in range(1, args.rounds + 1):
            for name, side in sides.items():
                rounds[name].append(run_round(side, n, args, accounting))
                if not side.server.running():
                    raise RuntimeError(f"{name} died during round {n}:\n{side.server.tail()}")
        load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
        rss = {name: tree_rss_mb(side.server.pid) for name, side in sides.items()}
        errors = sum(1 for line in sides[LAKELEDGER].server.tail(10_000_000).splitlines() if " ERROR " in line)
        if errors:
            _say(f"lakeledger serve logged {errors} ERROR lines (--keep keeps {sides[LAKELEDGER].server.log_path})")
        _say(f"idle CPU of {' and '.join(sides)}, {args.idle_seconds:g} s")
        idle = dict(zip(sides, idle_cpu_pct([s.server.pid for s in sides.values()], args.idle_seconds), strict=True))
        ll_failed = sum(r[w].failed for r in rounds[LAKELEDGER] for w in WORKLOADS)
        seconds = sum(s for s, _ in accounting.windows)
        context = {"seconds": args.seconds, "tables": args.list_tables, "idle_seconds": args.idle_seconds,
                   "load_tool": loadgen.describe("wrk" if loadgen.wrk_path() else "python", CONNECTIONS, 1),
                   "postgres": pg_bin.parent.name, "load_before": load_before, "load_after": load_after,
                   "foreign_mean": sum(s * c for s, c in accounting.windows) / seconds if seconds else 0.0,
                   "foreign_max": max(c for _, c in accounting.windows),
                   "load_bytes": ", ".join(f"{s.load_bytes:,} bytes ({name})" for name, s in sides.items()),
                   "lakekeeper_version": _version(lakekeeper) if lakekeeper else ""}
        if LAKEKEEPER in sides:
            print(render(rounds, rss, idle, context), flush=True)
        else:
            print(render_alone(rounds[LAKELEDGER], rss[LAKELEDGER][0], idle[LAKELEDGER], context), flush=True)
        if ll_failed:
            _say(f"{ll_failed} requests to Lakeledger failed (--keep keeps its log)")
        return 1 if ll_failed else 0
    finally:
        procs.tear_down(started, work, args.keep, _say)


def render_alone(rounds: list[dict[str, Result]], rss: float, idle: float, context: dict) -> str:
    lines = [f"Lakeledger alone (--only lakeledger), median of {len(rounds)} rounds, {context['seconds']:g} s a load; "
             f"load average {context['load_before']} before, {context['load_after']} after; foreign CPU mean "
             f"{context['foreign_mean']:.2f}, max {context['foreign_max']:.2f} cores; loadTable answers "
             f"{context['load_bytes']}"]
    for w in WORKLOADS:
        rs = [r[w] for r in rounds]
        lines.append(f"  {LABELS[w]:<55} {_median(rs, 'rps'):>8,.0f}/s  p50 {_median(rs, 'p50_ms'):.1f} ms  "
                     f"p99 {_median(rs, 'p99_ms'):.1f} ms  ({', '.join(f'{r.rps:,.0f}' for r in rs)}; "
                     f"{sum(r.failed for r in rs)} failed)")
    lines.append(f"  RSS after the runs {rss:.0f} MB; idle CPU {idle:.2f} % of a core")
    return "\n".join(lines)


def _version(binary_path: Path) -> str:
    done = subprocess.run([str(binary_path), "version"], capture_output=True, text=True, timeout=30)
    return done.stdout.strip() or "?"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # A SIGTERM must still tear the servers and Postgres down.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
