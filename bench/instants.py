"""``python -m bench.instants``: how long resolving an instant to a log position takes as the log grows.

It starts an embedded Postgres, creates the schema, appends events through the event log (in saves of
``--batch``, as a busy catalog appends them: the whole log lands within seconds) and, at each ``--sizes``
step, resolves instants with

* ``append-time``: the resolver in use (lakeledger/eventstore/append_time.py): one indexed query; for an instant at or
  after the last append ("now") it also takes the SHARE lock that makes the answer final;
* ``skew-scan``: the resolver it replaced, kept here only to compare: a binary search over positions by the
  events' own timestamps, then a forward scan decoding every event up to 30 s after the instant.

It prints one table (milliseconds per resolution, in this process) and checks nothing: figures, not a test.
"""

import argparse
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

from bench.procs import EmbeddedPostgres
from lakeledger.bootstrap import migrate
from lakeledger.domain.project import Project
from lakeledger.domain.provenance import SYSTEM, Provenance
from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.settings import PostgresSettings
from lakeledger.settings import Settings

SKEW = timedelta(seconds=30)


def skew_scan_position_at(log: EventLog, instant: datetime) -> int:
    """The resolver before append times (lakeledger/services/time_travel.py until issue 11), for comparison only."""
    head = log.head()
    lo, hi = 0, head + 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        found = log.read(after=mid - 1, limit=1, upto=hi - 1)
        if not found:
            hi = mid
        elif found[0].event.timestamp <= instant:
            lo = found[0].position
        else:
            hi = mid
    best, after, horizon = lo, lo, instant + SKEW
    while True:
        batch = log.read(after=after, limit=1000, upto=head)
        for n in batch:
            if n.event.timestamp > horizon:
                return best
            if n.event.timestamp <= instant:
                best = n.position
        if len(batch) < 1000:
            return best
        after = batch[-1].position


def _append(log: EventLog, count: int, batch: int) -> None:
    by = Provenance(SYSTEM, "bench")
    for start in range(0, count, batch):
        log.save(*[Project.create(uuid4(), f"p-{uuid4().hex[:12]}", by) for _ in range(min(batch, count - start))])


def _times(resolve, instants: list[datetime]) -> list[float]:
    out = []
    for instant in instants:
        t0 = time.perf_counter()
        resolve(instant)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _row(size: int, resolver: str, which: str, ms: list[float]) -> str:
    ms = sorted(ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return (f"| {size:>9,} | {resolver:<11} | {which:<7} | {len(ms):>4} | {statistics.median(ms):>8.2f} | "
            f"{p99:>8.2f} | {ms[-1]:>8.2f} |")


def run(sizes: list[int], batch: int, samples: int, old_samples: int) -> str:
    work = Path(tempfile.mkdtemp(prefix="lakeledger-instants-"))
    pg = EmbeddedPostgres(work / "pg")
    try:
        migrate(Settings(data_dir=work / "data"), pg.url)
        log = EventLog(PostgresSettings.from_url(pg.url), pool_size=2)
        lines = ["| events    | resolver    | instant | n    | p50 ms   | p99 ms   | max ms   |",
                 "| ---: | --- | --- | ---: | ---: | ---: | ---: |"]
        have = 0
        rng = random.Random(11)
        for size in sizes:
            t0 = time.perf_counter()
            _append(log, size - have, batch)
            have = size
            print(f"[instants] {size:,} events ({time.perf_counter() - t0:.1f} s to append)", file=sys.stderr)
            with log._recorder.datastore.get_connection() as conn:  # noqa: SLF001 - the bench reads the column
                stamps = [r["appended_at"] for r in conn.execute(
                    "SELECT appended_at FROM lakeledger_events ORDER BY notification_id").fetchall()]
            past = [stamps[rng.randrange(len(stamps) - 1)] for _ in range(samples)]
            now = [datetime.now(UTC) for _ in range(samples)]
            _times(log.position_at, past[:10])  # warm the pool and the plans
            lines.append(_row(size, "append-time", "past", _times(log.position_at, past)))
            lines.append(_row(size, "append-time", "now", _times(log.position_at, [datetime.now(UTC)] * samples)))
            lines.append(_row(size, "skew-scan", "past", _times(lambda t: skew_scan_position_at(log, t),
                                                                   past[:old_samples])))
            lines.append(_row(size, "skew-scan", "now", _times(lambda t: skew_scan_position_at(log, t),
                                                                  now[:old_samples])))
        log.close()
        return "\n".join(lines)
    finally:
        pg.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.instants", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,30000", help="log sizes to measure at (default 1000,10000,30000)")
    p.add_argument("--batch", type=int, default=100, help="events per save (default 100)")
    p.add_argument("--samples", type=int, default=300, help="instants resolved per row (default 300)")
    p.add_argument("--old-samples", type=int, default=20, help="instants for the slow skew-scan rows (default 20)")
    args = p.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    if not sizes or sizes[0] < 2 or sizes[-1] > 1_000_000 or not 1 <= args.batch <= 10_000:
        p.error("sizes must be in [2, 1000000], batch in [1, 10000]")
    print(run(sizes, args.batch, args.samples, args.old_samples), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
