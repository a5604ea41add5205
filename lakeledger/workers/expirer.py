"""Fires the expiry timers: every soft-deleted object whose time is up gets its final deletion recorded.

The schedule is a projection of the log (lakeledger/projections/expiry_schedule.py), so it survives any restart and a
timer that fell due while everything was down fires on the first pass after start. Several workers may run
this at once: the aggregate records at most one expiry per drop, and the loser of a race finds it done."""

import logging
from datetime import UTC, datetime

from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.expiry_schedule import ExpirySchedule
from lakeledger.services.recycle_bin import RecycleBin
from lakeledger.workers.timed_work import TimedWork

logger = logging.getLogger("lakeledger.expiry")

BATCH = 100


class Expirer(TimedWork):
    # Asleep until the next timer is due or an append (which may set a new timer) wakes it. Under a stream of
    # commits a pass per NOTIFY would be a round of queries per commit, so passes are at least
    # ``min_gap_seconds`` apart: a new timer's lag stays within that gap, and an idle server does nothing.
    name = "expiry"
    logger = logger
    batch = BATCH
    failure_message = "Expiry pass failed; retrying"
    shortest_pause_seconds = least_pause_seconds = 0.05
    wakes_on_append = True

    def __init__(self, schedule: ProjectionDriver, recycle_bin: RecycleBin, poll_seconds: float = 30.0,
                 min_gap_seconds: float = 1.0):
        super().__init__(poll_seconds, min_gap_seconds)
        self.schedule = schedule
        self.recycle_bin = recycle_bin
        self.read_model = schedule.name  # the schedule cannot advance: said once, retried with a growing pause

    def run_due(self) -> int:
        """One pass: the schedule caught up with the log, then every due timer fired. Returns how many expired."""
        self.schedule.advance()
        return super().run_due()

    def run_batch(self) -> tuple[int, int]:
        with self.schedule.pool.connection() as conn, conn.cursor() as cur:
            due = ExpirySchedule.due(cur, datetime.now(UTC), BATCH)
        fired = 0
        for entity_id, entity_type in due:
            if self.recycle_bin.expire(entity_id, entity_type):
                fired += 1
                logger.info("Expired %s %s", entity_type, entity_id)
        self.schedule.advance()  # takes the expiries just recorded off the schedule
        return len(due), fired

    def batch_was_last(self, taken: int, done_in_pass: int) -> bool:
        # a full batch while nothing has fired yet (each lost a race with another worker) stops the pass too
        return taken < BATCH or not done_in_pass

    def seconds_until_next_due(self) -> float | None:
        with self.schedule.pool.connection() as conn, conn.cursor() as cur:
            next_due = ExpirySchedule.next_due(cur)
        return None if next_due is None else (next_due - datetime.now(UTC)).total_seconds()
