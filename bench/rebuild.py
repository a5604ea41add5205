"""``python -m bench.rebuild``: how fast the read models are rebuilt from a seeded log (bench/seed.py), before and
after the blue/green batched rebuild, side by side in one run.

* before: the old path, kept here only to be measured: per read model, one transaction that holds its position
  row, empties its tables and applies the log event by event through ``ProjectionDriver._apply_after``.
* after: ``lakeledger/projections/rebuild.py``, per read model alone and then all of them in one pass (what
  ``lakeledger rebuild`` runs).

Each measurement runs on its own copy of the seeded database (``CREATE DATABASE ... TEMPLATE``), so every one
starts from the same live read models. Events/s is the log's length over the seconds taken (a read model that
reads only some topics still covers the whole log). ``--pg-url`` measures an existing seeded database (its files
need not exist: a rebuild reads only the log); without it a log of ``--events`` is seeded first into an embedded
Postgres."""

import argparse
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from psycopg import sql


def _copy(url: str, template: str) -> str:
    """A fresh copy of the database ``template`` on the same server; its URL."""
    name = f"rebuild_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
    return _with_db(url, name)


def _drop(url: str, name: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _with_db(url: str, name: str) -> str:
    from urllib.parse import urlparse, urlunparse

    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def _db_name(url: str) -> str:
    from urllib.parse import urlparse

    return urlparse(url).path.lstrip("/")


def _log_length(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def _old_rebuild(runner) -> int:
    """The rebuild as it was before blue/green: empties the live tables and replays under the position row."""
    with runner.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
        cur.execute("SELECT position FROM ll_projection_positions WHERE name = %s FOR UPDATE", (runner.name,))
        for table in runner.projection.tables:
            cur.execute(f"DELETE FROM {table}")
        position = runner._apply_after(0, cur)
        cur.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now() WHERE name = %s",
                    (position, runner.name))
    return position


def _timed(url: str, template: str, data_dir: Path, work) -> tuple[float, object]:
    from bench.seed import _container

    copy = _copy(url, template)
    container = _container(copy, data_dir)
    try:
        started = time.perf_counter()
        result = work(container)
        return time.perf_counter() - started, result
    finally:
        container.close()
        _drop(url, _db_name(copy))


def measure(url: str, data_dir: Path, say=lambda m: None, before: bool = True) -> list[tuple[str, float | None, float]]:
    """(read model, seconds before, seconds after) for each read model and for all of them together."""
    from lakeledger.projections.rebuild import Rebuild

    template = _db_name(url)
    names = [r.name for r in _runners_of(url, data_dir)]
    rows = []
    for name in names:
        old = None
        if before:
            old, _ = _timed(url, template, data_dir, lambda c: _old_rebuild(_runner(c, name)))
            say(f"{name}: before {old:.1f} s")
        new, _ = _timed(url, template, data_dir,
                        lambda c: Rebuild([_runner(c, name)], c.log, c.conninfo).run())
        say(f"{name}: after {new:.1f} s")
        rows.append((name, old, new))
    old_all = sum(r[1] for r in rows) if before else None  # the old command rebuilt them one after another
    new_all, _ = _timed(url, template, data_dir, lambda c: Rebuild(c.read_models, c.log, c.conninfo).run())
    say(f"all: after {new_all:.1f} s")
    rows.append(("all (lakeledger rebuild)", old_all, new_all))
    return rows


def _runners_of(url: str, data_dir: Path):
    from bench.seed import _container

    container = _container(url, data_dir)
    try:
        return list(container.read_models)
    finally:
        container.close()


def _runner(container, name: str):
    return next(r for r in container.read_models if r.name == name)


def table(rows, events: int) -> str:
    lines = [f"rebuild of {events:,} events (events/s = log length / seconds; load average "
             f"{' '.join(f'{x:.1f}' for x in os.getloadavg())})",
             f"{'read model':<26} {'before s':>9} {'events/s':>10} {'after s':>9} {'events/s':>10} {'ratio':>6}"]
    for name, old, new in rows:
        before = f"{old:>9.1f} {events / old:>10,.0f}" if old else f"{'-':>9} {'-':>10}"
        ratio = f"{old / new:>5.1f}x" if old else f"{'-':>6}"
        lines.append(f"{name:<26} {before} {new:>9.2f} {events / new:>10,.0f} {ratio}")
    return "\n".join(lines)


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m bench.rebuild", description=__doc__.split("\n\n")[0])
    p.add_argument("--pg-url", help="an already seeded database (default: seed one into an embedded Postgres)")
    p.add_argument("--events", type=int, default=100_000, help="log length to seed (default 100,000)")
    p.add_argument("--tables", type=int, default=10_000, help="tables to seed (default 10,000)")
    p.add_argument("--namespaces", type=int, default=100, help="namespaces to seed (default 100)")
    p.add_argument("--no-before", action="store_true", help="measure only the new rebuild")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)

    def say(message: str) -> None:
        print(f"[rebuild {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="lakeledger-rebuild-") as tmp:
        postgres, url = None, args.pg_url
        data_dir = Path(tmp) / "data"
        try:
            if url is None:
                from bench.procs import EmbeddedPostgres
                from bench.seed import Plan, seed

                postgres = EmbeddedPostgres(Path(tmp) / "pg")
                with psycopg.connect(postgres.url, autocommit=True) as conn:
                    conn.execute("CREATE DATABASE rebuild_seed")
                url = _with_db(postgres.url, "rebuild_seed")
                say(f"seeding {args.events:,} events")
                seed(url, Plan(args.namespaces, args.tables, max(args.tables // 100, 0), args.events), data_dir, say)
            events = _log_length(url)
            print(table(measure(url, data_dir, say, before=not args.no_before), events))
        finally:
            if postgres is not None:
                postgres.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
