"""``python -m bench.seed``: a catalog of N namespaces, T tables, V views and E events, built through the
application's own command path.

Every object is made by the services the API calls (``Lakeledger.namespaces.create``, ``.tables.create``,
``.views.create``, ``.tables.commit``), so the events are the ones a client's requests would append and the read
models are the projections' work, as in production; nothing is written into a read-model table directly. The
events beyond the creations are commits: a ``set-properties`` update each, spread round-robin over the tables,
each writing its metadata file to the file warehouse, as any commit does.

Several worker processes (``--workers``) each build their own container against the same database and take their
share of the namespaces, tables, views and commits; a command that loses a race is retried by the services, as it
would be for concurrent API requests. Progress (objects/s and events/s) is printed every couple of seconds.

Used by ``tests/api/test_seed.py`` at small sizes; ``--pg-url`` points it at an existing database (else it starts
an embedded Postgres in a temporary directory and removes it at the end, which only measures the rate).
"""

import argparse
import cProfile
import io
import multiprocessing
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ACTOR = "bench-seed"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": True},
    {"id": 2, "name": "data", "type": "string", "required": False},
]}
PROGRESS_EVERY_S = 2.0


@dataclass(frozen=True)
class Plan:
    namespaces: int
    tables: int
    views: int = 0
    events: int = 0  # the log's length to reach with commits once everything is created (0: no commits)
    workers: int = 2
    threads: int = 2  # per worker process: one waits on Postgres while another runs Python
    # commits per append: one commit transaction of this many tables (Iceberg's commitTransaction), one event each.
    # Every append holds the event table's lock, so fewer, larger appends are the lever. (Tables are created one
    # createTable each: a create transaction of many tables measured no faster, its cost being per table.)
    batch: int = 50
    # False: the workers' own sessions commit without waiting for the WAL flush (synchronous_commit=off): the same
    # events and read models, ~1.5x the creates per second; a crash of Postgres mid-seed loses the last few appends
    # of a fixture, and nothing else the database serves changes
    durable: bool = False

    def __post_init__(self):
        if self.namespaces < 1 or self.tables < 0 or self.views < 0 or self.events < 0:
            raise ValueError("namespaces must be at least 1; tables, views and events not negative")
        if self.workers < 1 or self.threads < 1 or self.batch < 1:
            raise ValueError("workers, threads and batch must be at least 1")


@dataclass
class Seeded:
    warehouse_id: str
    warehouse_name: str
    namespaces: list[str]
    tables: int
    views: int
    commits: int
    events: int  # the log's length at the end (the whole database, not only this warehouse)
    phases: dict[str, tuple[int, float]] = field(default_factory=dict)  # phase: (operations, seconds)


def namespace_name(i: int) -> str:
    return f"ns{i:05d}"


def table_name(j: int) -> str:
    return f"t{j:06d}"


def view_name(j: int) -> str:
    return f"v{j:05d}"


def _settings(url: str, data_dir: Path):
    from lakeledger.settings import Settings

    # explicit, so that LAKELEDGER__* of the calling shell (a default warehouse, OpenFGA) do not change what is built
    return Settings(pg_url=url, data_dir=data_dir, default_warehouse=None, auto_migrate=False, workers="off",
                    authz_backend="allowall", pg_pool_size=4)


def _container(url: str, data_dir: Path):
    from lakeledger.bootstrap import Container

    return Container(_settings(url, data_dir), url)


def _by(what: str):
    from lakeledger.domain.provenance import Provenance

    return Provenance(ACTOR, f"seed-{what}-{uuid.uuid4().hex[:12]}")


def _table_request(name: str):
    from lakeledger.api.models import CreateTableRequest

    raw = {"name": name, "schema": SCHEMA}
    return CreateTableRequest.model_validate(raw), raw


def _view_request(name: str, namespace: str):
    from lakeledger.api.models import CreateViewRequest

    raw = {"name": name, "schema": SCHEMA, "view-version": {
        "version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {},
        "default-namespace": [namespace],
        "representations": [{"type": "sql", "sql": f"SELECT id FROM {namespace}.t000000", "dialect": "spark"}]}}
    return CreateViewRequest.model_validate(raw), raw


# -- the work of one phase, split into shares ---------------------------------------------------------------


def _namespace_ops(plan: Plan) -> list[tuple]:
    return [("namespace", namespace_name(i)) for i in range(plan.namespaces)]


def _table_ops(plan: Plan) -> list[tuple]:
    # table j lives in namespace j mod N: every namespace gets its share, and neighbouring creates go to different
    # namespaces (no two workers wait on the same namespace's rows)
    return [("table", namespace_name(j % plan.namespaces), table_name(j)) for j in range(plan.tables)]


def _view_ops(plan: Plan) -> list[tuple]:
    return [("view", namespace_name(j % plan.namespaces), view_name(j)) for j in range(plan.views)]


def _commit_ops(plan: Plan, count: int) -> list[tuple]:
    """``count`` commits in groups of ``batch`` tables: each operation commits to its group in rounds, one
    transaction (one append, one event per table) a round, so a group's metadata stays in its process's cache and
    no two operations touch the same table."""
    if plan.tables == 0 or count == 0:
        return []
    batch = min(plan.batch, plan.tables)
    rounds = -(-count // plan.tables)
    tables = [(namespace_name(j % plan.namespaces), table_name(j)) for j in range(plan.tables)]
    ops, left = [], count
    for i in range(0, plan.tables, batch):
        group = tables[i:i + batch]
        made = min(left, rounds * len(group))
        if made:
            ops.append(("commit-rounds", group, made))
        left -= made
    return ops


def _run(container, warehouse_id: str, op: tuple, done: Callable[[int], None]) -> int:
    """Runs one operation; returns how many objects or commits it made (or reports them to ``done`` as it goes)."""
    from lakeledger.services.tables import TableChange

    kind = op[0]
    if kind == "namespace":
        container.namespaces.create(warehouse_id, [op[1]], {"owner": ACTOR}, _by("ns"))
    elif kind == "table":
        request, raw = _table_request(op[2])
        container.tables.create(warehouse_id, [op[1]], request, raw, _by("table"))
    elif kind == "view":
        request, raw = _view_request(op[2], op[1])
        container.views.create(warehouse_id, [op[1]], request, raw, _by("view"))
    else:
        group, made = op[1], op[2]
        for start in range(0, made, len(group)):
            round_ = group[:made - start]
            container.tables.commit(warehouse_id, [TableChange((ns,), name, [], [
                {"action": "set-properties", "updates": {"seed.commit": str(start)}}]) for ns, name in round_],
                _by("commit"))
            done(len(round_))
        return 0
    return 1


def _work(url: str, data_dir: str, warehouse_id: str, ops: list[tuple], threads: int, plan_durable: bool, done,
          profile_to: str | None):
    """One worker process: its own container (pools, caches), ``threads`` threads over its share of ``ops``; with
    ``profile_to`` each thread is profiled apart (cProfile sees only the thread that enabled it)."""
    import os
    import threading

    if not plan_durable:  # this process only (forked): libpq reads PGOPTIONS for every connection it opens
        os.environ["PGOPTIONS"] = f"{os.environ.get('PGOPTIONS', '')} -c synchronous_commit=off".strip()
    container = _container(url, Path(data_dir))
    failures: list[BaseException] = []

    def count(made: int) -> None:
        with done.get_lock():
            done.value += made

    def run(chunk, thread: int):
        profiler = cProfile.Profile() if profile_to else None
        if profiler:
            profiler.enable()
        try:
            for op in chunk:
                count(_run(container, warehouse_id, op, count))
        except BaseException as e:  # the process's exit status says so, below
            failures.append(e)
        finally:
            if profiler:
                profiler.disable()
                profiler.dump_stats(f"{profile_to}-{thread}.prof")

    try:
        pool = [threading.Thread(target=run, args=(ops[i::threads], i)) for i in range(threads)]
        [t.start() for t in pool]
        [t.join() for t in pool]
    finally:
        container.close()
    if failures:
        raise failures[0]


def _head(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]


def _phase(name: str, url: str, data_dir: Path, warehouse_id: str, ops: list[tuple], plan: Plan,
           say: Callable[[str], None], profile_dir: Path | None) -> tuple[int, float]:
    if not ops:
        return 0, 0.0
    # fork: this process holds no pool or connection while the workers start (each builds its own container), and
    # spawn's shared counter would leave a resource-tracker process running after the seed returns
    context = multiprocessing.get_context("fork")
    done = context.Value("q", 0)
    total = sum(op[2] if op[0] == "commit-rounds" else 1 for op in ops)
    workers = min(plan.workers, len(ops))
    shares = [ops[i::workers] for i in range(workers)]
    started, head0 = time.monotonic(), _head(url)
    processes = [context.Process(target=_work, name=f"seed-{name}-{i}", args=(
        url, str(data_dir), warehouse_id, share, plan.threads, plan.durable, done,
        str(profile_dir / f"{name}-{i}") if profile_dir else None)) for i, share in enumerate(shares)]
    for p in processes:
        p.start()
    last = started
    try:
        while any(p.is_alive() for p in processes):
            for p in processes:
                p.join(timeout=0.1)
            if time.monotonic() - last >= PROGRESS_EVERY_S:
                last = time.monotonic()
                elapsed = last - started
                say(f"{name}: {done.value:,}/{total:,} ({done.value / elapsed:,.0f}/s, "
                    f"{(_head(url) - head0) / elapsed:,.0f} events/s)")
    finally:
        for p in processes:
            if p.is_alive():
                p.terminate()
                p.join()
    failed = [p.name for p in processes if p.exitcode != 0]
    if failed:
        raise RuntimeError(f"seed {name}: worker(s) {', '.join(failed)} failed (see their traceback above)")
    seconds = time.monotonic() - started
    say(f"{name}: {total:,} in {seconds:.1f} s ({total / seconds:,.0f}/s, "
        f"{(_head(url) - head0) / seconds:,.0f} events/s)")
    return total, seconds


def seed(url: str, plan: Plan, data_dir: Path, say: Callable[[str], None] = lambda m: None,
         profile_dir: Path | None = None, warehouse_name: str | None = None) -> Seeded:
    """Builds the catalog ``plan`` describes in a new file warehouse under ``data_dir`` of the database at ``url``
    (migrated here if it is not yet). Returns what it made and how long each phase took."""
    from lakeledger.bootstrap import migrate
    from lakeledger.domain.project import DEFAULT_PROJECT_ID

    migrate(_settings(url, data_dir), url)
    name = warehouse_name or f"seed-{uuid.uuid4().hex[:8]}"
    location = (data_dir / "warehouses" / name).resolve()
    location.mkdir(parents=True, exist_ok=True)
    container = _container(url, data_dir)
    try:
        container.management.ensure_default_project(_by("project"))
        warehouse_id = str(container.management.create_warehouse(
            DEFAULT_PROJECT_ID, name, {"type": "file", "location": f"file://{location}"}, None, None, _by("warehouse")))
    finally:
        container.close()
    phases = {}
    for phase, ops in (("namespaces", _namespace_ops(plan)), ("tables", _table_ops(plan)),
                       ("views", _view_ops(plan))):
        phases[phase] = _phase(phase, url, data_dir, warehouse_id, ops, plan, say, profile_dir)
    commits = max(0, plan.events - _head(url)) if plan.tables else 0
    phases["commits"] = _phase("commits", url, data_dir, warehouse_id, _commit_ops(plan, commits), plan, say,
                               profile_dir)
    return Seeded(warehouse_id, name, [namespace_name(i) for i in range(plan.namespaces)], plan.tables, plan.views,
                  commits, _head(url), phases)


def top_of_profiles(profile_dir: Path, phase: str, entries: int = 25) -> str:
    files = sorted(str(p) for p in profile_dir.glob(f"{phase}-*.prof"))
    if not files:
        return ""
    out = io.StringIO()
    stats = pstats.Stats(*files, stream=out)
    stats.sort_stats("tottime").print_stats(entries)
    return out.getvalue()


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.seed", description=__doc__.split("\n\n")[0])
    p.add_argument("--namespaces", type=int, default=100, help="namespaces (default 100)")
    p.add_argument("--tables", type=int, default=10_000, help="tables, spread evenly over the namespaces")
    p.add_argument("--views", type=int, default=100, help="views, spread evenly over the namespaces")
    p.add_argument("--events", type=int, default=100_000,
                   help="length of the log to reach with commits after the creations (default 100,000)")
    p.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--threads", type=int, default=2, help="threads per worker process (default 2)")
    p.add_argument("--batch", type=int, default=50,
                   help="tables committed to per commit transaction (one append, one event each); 1: single-table "
                        "commits (default 50)")
    p.add_argument("--durable", action="store_true",
                   help="commit every append with the WAL flushed (default: synchronous_commit=off for the seed's "
                        "own sessions, ~1.5x faster creates; the events are the same)")
    p.add_argument("--pg-url", help="the database to seed (default: an embedded Postgres, removed afterwards)")
    p.add_argument("--data-dir", type=Path,
                   help="where the warehouse's files go (default: a temporary directory, removed afterwards; "
                        "required with --pg-url)")
    p.add_argument("--profile", action="store_true",
                   help="cProfile every worker; print each phase's top entries by own time")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        plan = Plan(args.namespaces, args.tables, args.views, args.events, args.workers, args.threads, args.batch,
                    args.durable)
    except ValueError as e:
        raise SystemExit(f"bench.seed: {e}") from None
    if args.pg_url and not args.data_dir:
        # the database would outlive the temporary directory and name metadata files that no longer exist
        raise SystemExit("bench.seed: --pg-url needs --data-dir (where the warehouse's files stay)")

    def say(message: str) -> None:
        print(f"[seed {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="lakeledger-seed-") as tmp:
        postgres = None
        url = args.pg_url
        if url is None:
            from bench.procs import EmbeddedPostgres

            say("starting embedded Postgres (pgserver)")
            postgres = EmbeddedPostgres(Path(tmp) / "pg")
            url = postgres.url
        data_dir = args.data_dir or Path(tmp) / "data"
        profile_dir = Path(tmp) / "profiles" if args.profile else None
        if profile_dir:
            profile_dir.mkdir()
        try:
            seeded = seed(url, plan, data_dir, say, profile_dir)
            print(f"{'phase':<12} {'operations':>10} {'seconds':>8} {'per s':>8}")
            for phase, (count, seconds) in seeded.phases.items():
                print(f"{phase:<12} {count:>10,} {seconds:>8.1f} {count / seconds if seconds else 0:>8,.0f}")
            print(f"warehouse {seeded.warehouse_name} ({seeded.warehouse_id}): {plan.namespaces:,} namespaces, "
                  f"{seeded.tables:,} tables, {seeded.views:,} views, {seeded.commits:,} commits; "
                  f"log length {seeded.events:,}")
            if profile_dir:
                for phase in seeded.phases:
                    top = top_of_profiles(profile_dir, phase)
                    if top:
                        print(f"\n== profile of the {phase} phase (all workers, by own time) ==\n{top}")
        finally:
            if postgres is not None:
                postgres.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
