"""``python -m bench.scale``: the catalog read side at two sizes in one run, side by side (issue 14, point 3).

Two catalogs are seeded with ``bench.seed`` (the application's own command path), each in a database of its own on
one Postgres: a small one (1,000 tables, 10,000 events) and a large one (``--scale-tables``/``--scale-events``,
default 100,000 tables and 1,000,000 events; about 20 minutes of seeding on a 2-core machine). ``lakeledger serve``
is started on each in turn and the same requests are measured against both: list pages (first, middle, last, each
page's token taken from the page before), loadTable and 304 revalidation under load, the history of one table and
of the warehouse, the catalog as of earlier log positions (cold and warm), the recycle bin, start-up time, RSS, and
the bytes the log takes per event. The figures are printed with the ratio large/small and the target.

``--keep DIR`` keeps the Postgres (and the warehouses' files) in DIR: a later run with the same DIR and sizes
measures again without seeding. ``--pg-url`` seeds into databases of that server instead (kept; needs ``--keep``
for the files and the record of what was seeded).
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from harness.processes import lakeledger_command

from . import console_pages, footprint, loadgen, procs
from .seed import Plan, namespace_name, seed, table_name
from .stats import percentile

SMALL_TABLES, SMALL_EVENTS = 1_000, 10_000
LARGE_TABLES, LARGE_EVENTS = 100_000, 1_000_000
TABLES_PAGE = 25  # the same page size at both sizes: 4 pages of ns00000 at 1,000 tables, 40 at 100,000
NAMESPACES_PAGE = 4  # 3 pages of the 10 namespaces at 1,000 tables, 25 of the 100 at 100,000
RECYCLED = 100  # soft-dropped tables the recycle-bin listing shows
PAGE_P99_MS, PAGE_RATIO = 20.0, 1.5
LOAD_RATIO = 0.9  # loadTable and 304 req/s within 10 % of the small catalog's
HISTORY_P99_MS = 50.0
AS_OF_P99_MS = 50.0
RECYCLE_P99_MS = 20.0
REBUILD_EVENTS_PER_S = 20_000
HEALTH_POLL_S = 0.01


def namespaces_for(tables: int) -> int:
    """1,000 tables per namespace at scale, at least 10 namespaces (so the namespace list has pages too)."""
    return max(10, tables // 1000)


@dataclass(frozen=True)
class Size:
    tables: int
    events: int

    @property
    def label(self) -> str:
        return f"{self.tables:,} tables / {self.events:,} events"

    @property
    def database(self) -> str:
        return f"lakeledger_scale_{self.tables}_{self.events}"

    def plan(self) -> Plan:
        return Plan(namespaces=namespaces_for(self.tables), tables=self.tables, events=self.events)


# -- the seeded catalogs, kept or not -----------------------------------------------------------------------


@dataclass
class Catalog:
    size: Size
    url: str  # the database
    data_dir: Path  # the warehouse's files, and the server's data directory
    warehouse_name: str
    warehouse_id: str
    seed_seconds: float | None  # None: seeded by an earlier run


class Postgres:
    """The server the catalogs' databases live on: ``pg_url``'s, or an embedded one in ``directory`` (kept there
    when ``keep``, else removed on ``stop``)."""

    def __init__(self, directory: Path, pg_url: str | None, keep: bool):
        self._server = None
        if pg_url:
            self.url = pg_url
            return
        import warnings

        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
        import pgserver

        self._server = pgserver.get_server(directory, cleanup_mode="stop" if keep else "delete")
        self.url = self._server.get_uri()

    def database_url(self, name: str) -> str:
        return urlsplit(self.url)._replace(path=f"/{name}").geturl()

    def stop(self) -> None:
        if self._server is not None:
            self._server.cleanup()


def _connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _record_path(home: Path) -> Path:
    return home / "seeded.json"


def _records(home: Path) -> dict:
    path = _record_path(home)
    return json.loads(path.read_text()) if path.exists() else {}


def prepare(pg: Postgres, home: Path, size: Size, say) -> Catalog:
    """The catalog of ``size``: the one a previous run recorded in ``home``, else a new database seeded now (a
    database left by a seed that did not finish is dropped first)."""
    data_dir = home / f"data-{size.tables}-{size.events}"
    record = _records(home).get(size.database)
    with _connect(pg.url) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (size.database,)).fetchone()
        if record and exists:
            say(f"{size.label}: reusing the catalog seeded earlier ({size.database})")
            return Catalog(size, pg.database_url(size.database), data_dir, record["warehouse_name"],
                           record["warehouse_id"], None)
        if exists:
            conn.execute(f"DROP DATABASE {size.database}")
        conn.execute(f"CREATE DATABASE {size.database}")
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    url = pg.database_url(size.database)
    say(f"{size.label}: seeding ({size.plan()})")
    started = time.monotonic()
    seeded = seed(url, size.plan(), data_dir, lambda m: say(f"{size.label}: {m}"), warehouse_name="scale")
    seconds = time.monotonic() - started
    say(f"{size.label}: seeded in {seconds / 60:.1f} min, log length {seeded.events:,}")
    records = _records(home)
    records[size.database] = {"warehouse_name": seeded.warehouse_name, "warehouse_id": seeded.warehouse_id,
                              "tables": seeded.tables, "events": seeded.events, "seed_seconds": seconds}
    _record_path(home).write_text(json.dumps(records, indent=1))
    return Catalog(size, url, data_dir, seeded.warehouse_name, seeded.warehouse_id, seconds)


# -- the server, timed from process start to /health 200 ----------------------------------------------------


class TimedServer(procs.ServerProcess):
    """``lakeledger serve`` whose start-up (process start to the first /health 200) is measured to ~10 ms: the
    bench's ordinary readiness poll waits 0.2 s between tries."""

    def __init__(self, catalog: Catalog, log_dir: Path, name: str):
        port = procs.free_port()
        env = procs.lakeledger_env(catalog.url, catalog.data_dir, LISTEN_HOST=procs.LOOPBACK,
                                   LISTEN_PORT=str(port))
        self.started_at = time.monotonic()
        # a first start may migrate a big database
        super().__init__(f"lakeledger serve ({name})", lakeledger_command("serve"), port, log_dir / f"{name}.log",
                         env, timeout=procs.START_TIMEOUT_S * 5, interval=HEALTH_POLL_S)
        self.startup_s = time.monotonic() - self.started_at


# -- measurements -------------------------------------------------------------------------------------------


@dataclass
class Series:
    """Sequential requests, one at a time on one keep-alive connection."""
    samples: list[float]  # ms, sorted
    server_cpu_us: float | None = None

    @property
    def p50(self) -> float:
        return percentile(self.samples, 50)

    @property
    def p99(self) -> float:
        return percentile(self.samples, 99)

    @property
    def max(self) -> float:
        return self.samples[-1] if self.samples else 0.0


def _check(response: httpx.Response, *expected: int) -> httpx.Response:
    if response.status_code not in (expected or (200,)):
        raise RuntimeError(f"{response.request.method} {response.request.url} -> {response.status_code}: "
                           f"{response.text[:500]}")
    return response


def _series(http: httpx.Client, server: TimedServer, count: int, request, *expected: int) -> Series:
    """``count`` timed calls of ``request(http)`` (one request each), with the server's CPU per request."""
    cpu0, times = procs.cpu_seconds(server.pid), []
    for _ in range(count):
        t0 = time.perf_counter()
        _check(request(http), *expected)
        times.append((time.perf_counter() - t0) * 1000)
    return Series(sorted(times), (procs.cpu_seconds(server.pid) - cpu0) / count * 1e6)


def _one(http: httpx.Client, request, *expected: int) -> float:
    t0 = time.perf_counter()
    _check(request(http), *expected)
    return (time.perf_counter() - t0) * 1000


def _page_tokens(http: httpx.Client, path: str, size: int, key: str) -> list[str]:
    """The token of every page of the list at ``path``, first page's ``""`` included, each from the page
    before."""
    tokens, token = [], ""
    while token is not None:
        tokens.append(token)
        body = _check(http.get(path, params={"pageToken": token, "pageSize": size})).json()
        if not body[key]:
            tokens.pop()  # a last token that leads to an empty page: the page before was the last
            break
        token = body.get("next-page-token")
    return tokens


def _pages(http, server, path: str, size: int, key: str, samples: int) -> dict[str, Series]:
    tokens = _page_tokens(http, path, size, key)
    picks = {"first": tokens[0], "middle": tokens[len(tokens) // 2], "last": tokens[-1]}
    return {which: _series(http, server, samples,
                           lambda h, t=token: h.get(path, params={"pageToken": t, "pageSize": size}))
            for which, token in picks.items()} | {"pages": len(tokens)}


def _recycle(http: httpx.Client, catalog: Catalog, prefix: str) -> int:
    """Soft-deletes tables of the last namespace until the recycle bin holds ``RECYCLED`` (a kept catalog already
    does): the warehouse's delete profile is made soft, with an expiry far away."""
    bin_path = f"/management/v1/warehouse/{catalog.warehouse_id}/deleted-tabulars"
    have = len(_check(http.get(bin_path, params={"pageSize": RECYCLED})).json()["tabulars"])
    if have >= RECYCLED:
        return have
    _check(http.post(f"/management/v1/warehouse/{catalog.warehouse_id}/delete-profile", json={
        "delete-profile": {"type": "soft", "expiration-seconds": 365 * 24 * 3600}}), 200, 204)
    plan = catalog.size.plan()
    last = plan.namespaces - 1
    tables = [j for j in range(plan.tables - 1, -1, -1) if j % plan.namespaces == last]
    for j in tables[have:RECYCLED]:
        _check(http.delete(f"/catalog/v1/{prefix}/namespaces/{namespace_name(last)}/tables/{table_name(j)}"),
               204, 404)
    return len(_check(http.get(bin_path, params={"pageSize": RECYCLED})).json()["tabulars"])


@dataclass
class Figures:
    size: Size
    log_length: int = 0
    seed_minutes: float | None = None
    startups_s: list[float] = field(default_factory=list)
    series: dict[str, Series] = field(default_factory=dict)
    pages: dict[str, int] = field(default_factory=dict)
    loads: dict[str, loadgen.LoadResult] = field(default_factory=dict)
    body_bytes: int = 0
    history_catch_up_ms: float = 0.0
    as_of_positions: list[int] = field(default_factory=list)
    rss_mb: float = 0.0
    storage: dict[str, float] = field(default_factory=dict)
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rebuild_s: float = 0.0


def _rebuild(catalog: Catalog, work: Path) -> float:
    """Seconds of ``lakeledger rebuild`` (every read model from the log, blue/green), the command as users run it.
    Also what brings the read models a seed leaves behind (history, access history, catalog versions: not applied
    inside appends) to the head before the server starts, so its workers do not spend the run catching up."""
    env = {**os.environ, **procs.lakeledger_env(catalog.url, catalog.data_dir)}
    started = time.monotonic()
    with open(work / f"rebuild-{catalog.size.tables}.log", "w") as log:
        done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    if done.returncode != 0:
        raise RuntimeError(f"lakeledger rebuild failed, see {log.name}")
    return time.monotonic() - started


def _storage(url: str) -> dict[str, float]:
    with _connect(url) as conn:
        events, table_bytes, heap, indexes, database = conn.execute(
            "SELECT (SELECT count(*) FROM lakeledger_events), pg_total_relation_size('lakeledger_events'),"
            " pg_relation_size('lakeledger_events'), pg_indexes_size('lakeledger_events'),"
            " pg_database_size(current_database())").fetchone()
        read_models = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE c.relkind = 'r' AND n.nspname = 'public' AND c.relname LIKE 'll\\_%'").fetchone()[0]
    return {"events": events, "events_bytes": table_bytes, "heap_bytes": heap, "index_bytes": indexes,
            "database_bytes": database, "read_model_bytes": float(read_models)}


def _log_head(url: str) -> int:
    with _connect(url) as conn:
        return conn.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]


def measure(catalog: Catalog, args, tool: str, work: Path, say) -> Figures:
    f = Figures(catalog.size, seed_minutes=catalog.seed_seconds / 60 if catalog.seed_seconds else None)
    label = catalog.size.label
    server = None
    say(f"{label}: lakeledger rebuild")
    f.rebuild_s = _rebuild(catalog, work)
    f.log_length = _log_head(catalog.url)
    say(f"{label}: rebuilt in {f.rebuild_s:.1f} s ({f.log_length / f.rebuild_s:,.0f} events/s)")
    try:
        for n in range(args.startups):
            if server is not None:
                server.stop()
            server = TimedServer(catalog, work, f"serve-{catalog.size.tables}-{n}")
            f.startups_s.append(server.startup_s)
            say(f"{label}: start-up {n + 1}: {server.startup_s:.2f} s to /health 200")
        with httpx.Client(base_url=server.url, timeout=600) as http:
            prefix = _check(http.get("/catalog/v1/config", params={"warehouse": catalog.warehouse_name})
                            ).json()["overrides"]["prefix"]
            say(f"{label}: recycle bin of {_recycle(http, catalog, prefix)} soft-deleted tables")
            f.log_length = _log_head(catalog.url)
            ns0 = namespace_name(0)
            say(f"{label}: list pages ({args.samples} requests each)")
            for kind, path, size, key in (
                    ("namespaces", f"/catalog/v1/{prefix}/namespaces", NAMESPACES_PAGE, "namespaces"),
                    ("tables", f"/catalog/v1/{prefix}/namespaces/{ns0}/tables", TABLES_PAGE, "identifiers")):
                found = _pages(http, server, path, size, key, args.samples)
                f.pages[kind] = found.pop("pages")
                for which, series in found.items():
                    f.series[f"list {kind}, {which} page"] = series

            table_path = f"/catalog/v1/{prefix}/namespaces/{ns0}/tables/{table_name(0)}"
            loaded = _check(http.get(table_path))
            f.body_bytes = len(loaded.content)
            table_uuid = loaded.json()["metadata"]["table-uuid"]
            tag = loaded.headers["etag"]
            _check(http.get(table_path, headers={"If-None-Match": tag}), 304)
            for name, headers in (("loadTable", None), ("304 revalidation", {"If-None-Match": tag})):
                if args.warmup_seconds:
                    loadgen.run(server.url + table_path, args.connections, args.warmup_seconds, 1, tool, headers)
                say(f"{label}: {name}, {args.load_seconds:g} s, {args.connections} connections")
                cpu0 = procs.cpu_seconds(server.pid)
                result = loadgen.run(server.url + table_path, args.connections, args.load_seconds, 1, tool, headers)
                if result.requests:
                    result.server_cpu_us = (procs.cpu_seconds(server.pid) - cpu0) / result.requests * 1e6
                f.loads[name] = result

            history = f"/management/v1/warehouse/{catalog.warehouse_id}/history"
            say(f"{label}: history (the first request catches the history projection up with the log)")
            f.history_catch_up_ms = _history_caught_up(http, history, catalog.url, say)
            with _connect(catalog.url) as conn:  # an instant in the middle of the log, for a page deep in it
                middle = conn.execute("SELECT appended_at FROM lakeledger_events WHERE notification_id >= %s"
                                      " ORDER BY notification_id LIMIT 1", (f.log_length // 2,)).fetchone()[0]
            f.series["history of one table"] = _series(
                http, server, args.samples, lambda h: h.get(history, params={"tabular-id": table_uuid}))
            f.series["warehouse history, first page"] = _series(
                http, server, args.samples, lambda h: h.get(history, params={"pageSize": 100}))
            f.series["warehouse history, page mid-log"] = _series(
                http, server, args.samples,
                lambda h: h.get(history, params={"pageSize": 100, "since": middle.isoformat()}))

            events = f"/catalog/v1/{prefix}/events"
            with _connect(catalog.url) as conn:  # an instant just before the log's last 50 events
                near_head = conn.execute("SELECT appended_at FROM lakeledger_events WHERE notification_id >= %s"
                                         " ORDER BY notification_id LIMIT 1",
                                         (max(1, f.log_length - 50),)).fetchone()[0]
            for where, body in (("log start", {"page-size": 100}),
                                ("mid-log", {"page-size": 100, "since-timestamp-ms": _ms(middle)}),
                                ("log head", {"page-size": 100, "since-timestamp-ms": _ms(near_head)})):
                f.series[f"Events API, page of 100, {where}"] = _series(
                    http, server, args.samples, lambda h, body=body: h.post(events, json=body))

            say(f"{label}: catalog as of {args.positions} earlier log positions, cold and warm")
            _as_of(http, server, catalog, f, args)

            bin_path = f"/management/v1/warehouse/{catalog.warehouse_id}/deleted-tabulars"
            f.series["recycle bin, page of 100"] = _series(
                http, server, args.samples, lambda h: h.get(bin_path, params={"pageSize": RECYCLED}))

            hot_name = table_name(namespaces_for(catalog.size.tables))  # ns00000's second table (dealt round-robin)
            hot_path = f"/catalog/v1/{prefix}/namespaces/{ns0}/tables/{hot_name}"
            hot_uuid = _check(http.get(hot_path)).json()["metadata"]["table-uuid"]
            console_pages.give_history(http, hot_path, catalog.warehouse_id, hot_uuid,
                                       console_pages.HISTORY_ENTRIES, say)
            say(f"{label}: the console's pages ({args.samples} loads each)")
            for name, calls in console_pages.pages(prefix, catalog.warehouse_id, ns0, table_name(0), table_uuid,
                                                   hot_name, hot_uuid).items():
                f.series[name] = _series(http, server, args.samples, console_pages.one_page(calls, _check))
        f.rss_mb = footprint.rss_mb(server.pid)
        if server.process.poll() is not None:
            raise RuntimeError(f"lakeledger serve died during the run:\n{server.tail()}")
    finally:
        if server is not None:
            server.stop()
    f.storage = _storage(catalog.url)
    f.load_average = os.getloadavg()
    return f


def _ms(instant) -> int:
    return int(instant.timestamp() * 1000)


def _history_caught_up(http: httpx.Client, path: str, url: str, say) -> float:
    """Milliseconds until a history request is answered: it first brings the history projection up to the log's
    head, and gives up after a minute with a 500 while another process (the server's own workers, after a seed
    made without them) holds the projection; asked again until it answers."""
    started = last = time.monotonic()
    while True:
        response = http.get(path, params={"pageSize": 100})
        if response.status_code == 200:
            return (time.monotonic() - started) * 1000
        if response.status_code != 500 or time.monotonic() - started > 4 * 3600:
            _check(response)
        if time.monotonic() - last > 30:
            last = time.monotonic()
            with _connect(url) as conn:
                done = conn.execute("SELECT coalesce(max(sequence), 0) FROM ll_history").fetchone()[0]
            say(f"history projection at {done:,} after {last - started:.0f} s")


def _as_of(http, server, catalog: Catalog, f: Figures, args) -> None:
    """Positions spread over the second half of the log (every table exists there), each read first by a list
    page or by loadTable (alternately: the cold read is the first at that position, /config included), then the
    last one read warm."""
    head = f.log_length
    rng = random.Random(catalog.size.tables)
    f.as_of_positions = sorted(rng.sample(range(head // 2, head), args.positions))
    cold = {"config": [], "list": [], "load": []}
    ns0 = namespace_name(0)
    paths = {}
    for i, position in enumerate(f.as_of_positions):
        t0 = time.perf_counter()
        prefix = _check(http.get("/catalog/v1/config", params={"warehouse": f"{catalog.warehouse_name}@seq:{position}"}
                                 )).json()["overrides"]["prefix"]
        cold["config"].append((time.perf_counter() - t0) * 1000)
        paths = {"list": (f"/catalog/v1/{prefix}/namespaces/{ns0}/tables", {"pageToken": "", "pageSize": TABLES_PAGE}),
                 "load": (f"/catalog/v1/{prefix}/namespaces/{ns0}/tables/{table_name(0)}", None)}
        first = "list" if i % 2 == 0 else "load"
        path, params = paths[first]
        cold[first].append(_one(http, lambda h: h.get(path, params=params)))
    for what, times in cold.items():
        f.series[f"as of a position, cold: {what}" + (" (first read)" if what != "config" else "")] = \
            Series(sorted(times))
    for what, (path, params) in paths.items():
        f.series[f"as of a position, warm: {what}"] = _series(http, server, args.samples,
                                                             lambda h: h.get(path, params=params))


# -- the report ---------------------------------------------------------------------------------------------


def _mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def render(small: Figures, large: Figures, context: dict) -> tuple[str, bool]:
    """The side-by-side table, and whether every target was met."""
    rows: list[tuple[str, str, str, str, str]] = []  # what, small, large, ratio, target (with its verdict)
    verdicts: list[bool] = []

    def ratio(a: float, b: float) -> str:
        return f"x{b / a:.2f}" if a else "-"

    def target(ok: bool, text: str) -> str:
        verdicts.append(ok)
        return f"{text}: {_mark(ok)}"

    def latency(s: Series) -> str:
        cpu = f", {s.server_cpu_us:,.0f} us CPU" if s.server_cpu_us is not None else ""
        return f"{s.p50:.2f} / {s.p99:.2f}{cpu}"

    def series_row(name: str, bound: float | None = None, relative: float | None = None) -> None:
        a, b = small.series[name], large.series[name]
        text = ""
        if bound is not None:
            ok = b.p99 <= bound and a.p99 <= bound
            words = f"p99 <= {bound:g} ms"
            if relative is not None:
                ok = ok and b.p99 <= relative * a.p99
                words += f", <= {relative:g}x 1k"
            text = target(ok, words)
        rows.append((f"{name}, p50 / p99 ms", latency(a), latency(b), ratio(a.p99, b.p99), text))

    start_a, start_b = sorted(small.startups_s), sorted(large.startups_s)
    med_a, med_b = start_a[len(start_a) // 2], start_b[len(start_b) // 2]
    rows.append((f"start-up to /health 200, median of {len(start_a)} (s)",
                 f"{med_a:.2f} ({', '.join(f'{s:.2f}' for s in small.startups_s)})",
                 f"{med_b:.2f} ({', '.join(f'{s:.2f}' for s in large.startups_s)})", ratio(med_a, med_b),
                 target(med_b <= 1.5 * med_a + 0.5, "independent of the log (<= 1.5x + 0.5 s)")))
    rate_a, rate_b = small.log_length / small.rebuild_s, large.log_length / large.rebuild_s
    rows.append(("lakeledger rebuild, all read models: s (events/s)", f"{small.rebuild_s:,.1f} ({rate_a:,.0f})",
                 f"{large.rebuild_s:,.1f} ({rate_b:,.0f})", ratio(rate_a, rate_b),
                 target(rate_b >= REBUILD_EVENTS_PER_S, f">= {REBUILD_EVENTS_PER_S:,} events/s")))
    for kind in ("namespaces", "tables"):
        for which in ("first", "middle", "last"):
            series_row(f"list {kind}, {which} page", PAGE_P99_MS, PAGE_RATIO)
    for name in ("loadTable", "304 revalidation"):
        a, b = small.loads[name], large.loads[name]
        ok = b.rps >= LOAD_RATIO * a.rps and b.non_2xx == 0 and b.errors == 0
        rows.append((f"{name}, req/s (p99 ms, server us/req)",
                     f"{a.rps:,.0f} ({a.p99_ms:.2f}, {a.server_cpu_us or 0:,.0f})",
                     f"{b.rps:,.0f} ({b.p99_ms:.2f}, {b.server_cpu_us or 0:,.0f})", ratio(a.rps, b.rps),
                     target(ok, f"req/s within {100 - LOAD_RATIO * 100:.0f} % of 1k")))
    rows.append(("history: first request after start (catch-up), ms", f"{small.history_catch_up_ms:,.0f}",
                 f"{large.history_catch_up_ms:,.0f}", ratio(small.history_catch_up_ms, large.history_catch_up_ms),
                 ""))
    for name in ("history of one table", "warehouse history, first page", "warehouse history, page mid-log",
                 "Events API, page of 100, log start", "Events API, page of 100, mid-log",
                 "Events API, page of 100, log head"):
        series_row(name, HISTORY_P99_MS)
    for what in ("config", "list (first read)", "load (first read)"):
        name = f"as of a position, cold: {what}"
        a, b = small.series[name], large.series[name]
        ok = b.max <= AS_OF_P99_MS and a.max <= AS_OF_P99_MS
        rows.append((f"{name}, p50 / max ms ({len(b.samples)} positions)", f"{a.p50:,.1f} / {a.max:,.1f}",
                     f"{b.p50:,.1f} / {b.max:,.1f}", ratio(a.max, b.max),
                     target(ok, f"<= {AS_OF_P99_MS:g} ms") if what != "config" else ""))
    for what in ("list", "load"):
        series_row(f"as of a position, warm: {what}", AS_OF_P99_MS)
    series_row("recycle bin, page of 100", RECYCLE_P99_MS)
    for name in [n for n in large.series if n.startswith("console: ")]:
        series_row(name, console_pages.PAGE_MS)
    rows.append(("RSS of serve after the run, MB", f"{small.rss_mb:.0f}", f"{large.rss_mb:.0f}",
                 ratio(small.rss_mb, large.rss_mb), ""))
    for key, words in (("events_bytes", "events table + its indexes"), ("heap_bytes", "  of which the rows"),
                       ("index_bytes", "  of which the indexes"), ("database_bytes", "whole database"),
                       ("read_model_bytes", "read-model tables (ll_*)")):
        a, b = small.storage[key] / small.storage["events"], large.storage[key] / large.storage["events"]
        rows.append((f"bytes per event: {words}", f"{a:,.0f}", f"{b:,.0f}", ratio(a, b), ""))
    rows.append(("log length (events) / database size", f"{small.storage['events']:,.0f} / "
                 f"{small.storage['database_bytes'] / 2**20:,.0f} MB", f"{large.storage['events']:,.0f} / "
                 f"{large.storage['database_bytes'] / 2**20:,.0f} MB", "", ""))

    widths = [max(len(r[i]) for r in rows + [("what", "small", "large", "ratio", "target")]) for i in range(4)]
    head = ("what", small.size.label, large.size.label, "large/small")
    widths = [max(w, len(h)) for w, h in zip(widths, head, strict=True)]
    line = lambda cells, t: "  ".join(  # noqa: E731
        f"{c:<{w}}" if i == 0 else f"{c:>{w}}" for i, (c, w) in enumerate(zip(cells, widths, strict=True))) + f"  {t}"
    out = ["", "Scale: the read side at two catalog sizes, side by side",
           f"  list pages: {NAMESPACES_PAGE} namespaces or {TABLES_PAGE} tables of ns00000 per page "
           f"({small.pages['namespaces']} / {large.pages['namespaces']} namespace pages, "
           f"{small.pages['tables']} / {large.pages['tables']} table pages); each page's token from the page before",
           f"  sequential figures: {context['samples']} requests one at a time (httpx, keep-alive), p50 / p99 ms "
           f"and the server process's CPU per request",
           f"  loadTable and 304: {context['load_tool']}, {context['load_seconds']:g} s after "
           f"{context['warmup_seconds']:g} s of warm-up; bodies {small.body_bytes:,} / {large.body_bytes:,} bytes",
           f"  as of: {context['positions']} log positions in the second half of each log, each read once cold "
           f"(/config, then a list page or a loadTable, alternately), then warm",
           f"  load average after each size: {' '.join(f'{x:.2f}' for x in small.load_average)} / "
           f"{' '.join(f'{x:.2f}' for x in large.load_average)}",
           "", line(head, "target"), "-" * (sum(widths) + 2 * len(widths) + 40)]
    out += [line(r[:4], r[4]) for r in rows]
    ok = all(verdicts)
    out.append(f"SCALE SUMMARY: {sum(verdicts)}/{len(verdicts)} targets met [{_mark(ok)}]")
    return "\n".join(out), ok


# -- the run ------------------------------------------------------------------------------------------------


def add_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """The options, also under ``python -m bench`` (there with ``prefix="scale-"``)."""
    p.add_argument(f"--{prefix or 'scale-'}tables", dest="scale_tables", type=int, default=LARGE_TABLES,
                   help=f"tables of the large catalog (default {LARGE_TABLES:,}; the small one has {SMALL_TABLES:,})")
    p.add_argument(f"--{prefix or 'scale-'}events", dest="scale_events", type=int, default=LARGE_EVENTS,
                   help=f"log length of the large catalog (default {LARGE_EVENTS:,}; the small one: "
                        f"{SMALL_EVENTS:,})")
    p.add_argument(f"--{prefix}keep" if prefix else "--keep", dest="scale_keep", type=Path,
                   help="keep the seeded catalogs (Postgres, warehouse files) in this directory; a later run with "
                        "it measures them again without seeding")
    p.add_argument(f"--{prefix}pg-url" if prefix else "--pg-url", dest="scale_pg_url",
                   help="seed into databases of this Postgres server (kept; needs --keep for the files)")
    p.add_argument(f"--{prefix}samples" if prefix else "--samples", dest="scale_samples", type=int, default=200,
                   help="sequential requests per latency figure (default 200)")
    p.add_argument(f"--{prefix}positions" if prefix else "--positions", dest="scale_positions", type=int,
                   default=6, help="log positions read cold as of (default 6)")
    p.add_argument(f"--{prefix}startups" if prefix else "--startups", dest="scale_startups", type=int, default=3,
                   help="server starts timed per size (default 3)")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__.split("\n\n")[0])
    add_options(p)
    p.add_argument("--connections", type=int, default=16, help="loadTable connections (default 16)")
    p.add_argument("--load-seconds", type=float, default=5.0, help="each loadTable and 304 measurement (default 5)")
    p.add_argument("--warmup-seconds", type=float, default=1.0, help="unmeasured load before each (default 1)")
    p.add_argument("--loadgen", choices=("auto", "wrk", "python"), default="auto")
    p.add_argument("--strict", action="store_true", help="exit with status 1 when a target is missed")
    return p.parse_args(argv)


def check_options(args, error) -> None:
    if args.scale_tables < SMALL_TABLES or args.scale_events < SMALL_EVENTS:
        error(f"the large catalog must be at least the small one ({SMALL_TABLES:,} tables, {SMALL_EVENTS:,} events)")
    if args.scale_events < 3 * args.scale_tables:
        error("--scale-events must be at least 3x --scale-tables (each create appends two events)")
    if args.scale_pg_url and not args.scale_keep:
        error("--pg-url needs --keep (where the warehouses' files and the record of the seed stay)")
    if not 10 <= args.scale_samples <= 100_000 or not 2 <= args.scale_positions <= 1000 \
            or not 1 <= args.scale_startups <= 20:
        error("--samples must be in [10, 100000], --positions in [2, 1000], --startups in [1, 20]")


def run(args, tool: str, say) -> bool:
    """Seeds (or reuses) both catalogs, measures each, prints the table; answers whether every target was met."""
    sizes = (Size(SMALL_TABLES, SMALL_EVENTS), Size(args.scale_tables, args.scale_events))
    home = args.scale_keep.resolve() if args.scale_keep else Path(tempfile.mkdtemp(prefix="lakeledger-scale-"))
    home.mkdir(parents=True, exist_ok=True)
    work = home / "logs"
    work.mkdir(exist_ok=True)
    timing = argparse.Namespace(samples=args.scale_samples, positions=args.scale_positions,
                                startups=args.scale_startups, connections=args.connections,
                                load_seconds=args.load_seconds, warmup_seconds=args.warmup_seconds)
    pg = Postgres(home / "pg", args.scale_pg_url, keep=args.scale_keep is not None)
    try:
        catalogs = [prepare(pg, home, size, say) for size in sizes]
        small, large = (measure(c, timing, tool, work, say) for c in catalogs)
    finally:
        pg.stop()
        if not args.scale_keep:
            shutil.rmtree(home, ignore_errors=True)
    text, ok = render(small, large, {"samples": args.scale_samples, "positions": args.scale_positions,
                                     "load_tool": loadgen.describe(tool, args.connections, 1),
                                     "load_seconds": args.load_seconds, "warmup_seconds": args.warmup_seconds})
    for f in (small, large):
        if f.seed_minutes is not None:
            text += f"\nseeded {f.size.label} in {f.seed_minutes:.1f} min"
    print(text, flush=True)
    return ok


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    check_options(args, lambda message: sys.exit(f"bench.scale: {message}"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def say(message: str) -> None:
        print(f"[scale {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    tool = "wrk" if args.loadgen != "python" and loadgen.wrk_path() else "python"
    if args.loadgen == "wrk" and tool != "wrk":
        sys.exit("bench.scale: wrk is not installed (apt-get install -y wrk)")
    return 1 if run(args, tool, say) is False and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
