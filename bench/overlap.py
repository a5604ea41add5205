"""The location-overlap check every create, register, rename and undrop runs, at growing catalog sizes:
``python -m bench.overlap`` (about a minute). It times the query itself on the schema ``lakeledger migrate`` makes,
against the plain ``starts_with`` form it replaced, which reads every table of the warehouse. The rows are
copied straight into the read model: only the query's cost is measured here, not a create's (the scale fixture,
bench/seed.py, builds real catalogs)."""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from lakeledger.projections.catalog_queries import OVERLAPPING_TABULAR, overlap_params

from . import procs

PLAIN_RULE = (
    "SELECT id, location FROM ll_tabulars WHERE warehouse_id = %(warehouse_id)s AND id <> %(exclude)s"
    " AND (location = %(location)s OR starts_with(%(location)s, location || '/')"
    "      OR starts_with(location, %(location)s || '/'))"
    " AND (dropped_at IS NULL OR deleted_at IS NULL OR (purge_requested AND purged_at IS NULL)) LIMIT 1")
BASE = "s3://bucket/warehouse"
NOBODY = uuid.UUID(int=0)


def _fill(conn: psycopg.Connection, warehouse_id: uuid.UUID, start: int, end: int) -> None:
    now = datetime.now(UTC)
    with conn.cursor() as cur, cur.copy(
            "COPY ll_tabulars (id, typ, warehouse_id, namespace_id, namespace, name, location, created_at)"
            " FROM STDIN") as copy:
        namespace_id = uuid.uuid4()
        for i in range(start, end):
            table_id = uuid.uuid4()
            copy.write_row((table_id, "table", warehouse_id, namespace_id, ["ns"], f"t{i}",
                            f"{BASE}/{namespace_id}/{table_id}", now))
    conn.execute("ANALYZE ll_tabulars")


def _p50_ms(conn: psycopg.Connection, sql: str, params, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        p = params(f"{BASE}/{uuid.uuid4()}/{uuid.uuid4()}")
        start = time.perf_counter()
        conn.execute(sql, p).fetchall()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def run(sizes: list[int], rounds: int) -> list[tuple[int, float, float]]:
    with tempfile.TemporaryDirectory(prefix="bench-overlap-") as home:
        postgres = procs.EmbeddedPostgres(Path(home) / "postgres")
        try:
            subprocess.run([sys.executable, "-m", "lakeledger.cli", "migrate"], check=True,
                           env=procs.lakeledger_env(postgres.url, Path(home)))
            rows = []
            with psycopg.connect(postgres.url, autocommit=True) as conn:
                warehouse_id, have = uuid.uuid4(), 0
                for size in sizes:
                    _fill(conn, warehouse_id, have, size)
                    have = size
                    plain = _p50_ms(conn, PLAIN_RULE, lambda loc: {"warehouse_id": warehouse_id, "location": loc,
                                                                    "exclude": NOBODY}, rounds)
                    indexed = _p50_ms(conn, OVERLAPPING_TABULAR,
                                      lambda loc: overlap_params(warehouse_id, loc, NOBODY), rounds)
                    rows.append((size, plain, indexed))
            return rows
        finally:
            postgres.stop()


def render(rows: list[tuple[int, float, float]]) -> str:
    first = rows[0][2]
    lines = ["location-overlap check, p50 per query (one warehouse)",
             f"{'tables':>8} {'starts_with ms':>15} {'indexed ms':>11} {'indexed / first':>16}"]
    lines += [f"{size:>8} {plain:>15.2f} {indexed:>11.2f} {indexed / first:>16.2f}" for size, plain, indexed in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,20000,100000", help="catalog sizes, ascending")
    parser.add_argument("--rounds", type=int, default=200, help="queries per size and form")
    args = parser.parse_args()
    print(render(run([int(s) for s in args.sizes.split(",")], args.rounds)))


if __name__ == "__main__":
    main()
