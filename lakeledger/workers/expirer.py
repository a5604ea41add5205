"""Fires the expiry timers: every soft-deleted object whose time is up gets its final deletion recorded.

The schedule is a projection of the log (lakeledger/projections/expiry_schedule.py), so it survives any restart and a
timer that fell due while everything was down fires on the first pass after start. Several workers may run
this at once: the aggregate records at most one expiry per drop, and the loser of a race finds it done."""

import logging
import threading
import time
from datetime import UTC, datetime

from lakeledger.domain.errors import ReadModelStuck
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.expiry_schedule import ExpirySchedule
from lakeledger.services.recycle_bin import RecycleBin
from lakeledger.workers.alarm import Alarm

logger = logging.getLogger("lakeledger.expiry")

BATCH = 100


class Expirer:
    name = "expiry"

    def __init__(self, schedule: ProjectionDriver, recycle_bin: RecycleBin, poll_seconds: float = 30.0,
                 min_gap_seconds: float = 1.0):
        self.schedule = schedule
        self.recycle_bin = recycle_bin
        self.poll_seconds = poll_seconds
        self.min_gap_seconds = min_gap_seconds

    def run(self, stop: threading.Event, wake: threading.Event) -> None:
        # Asleep until the next timer is due or an append (which may set a new timer) wakes it. Under a stream of
        # commits a pass per NOTIFY would be a round of queries per commit, so passes are at least
        # ``min_gap_seconds`` apart: a new timer's lag stays within that gap, and an idle server does nothing.
        alarm = Alarm(self.schedule.name)
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.fire_due()
                pause = self._until_next_due()
            except ReadModelStuck as stuck:  # the schedule cannot advance: said once, retried with a growing pause
                stop.wait(alarm.failed(stuck))
                continue
            except Exception:
                logger.exception("Expiry pass failed; retrying")
                pause = 1.0
            else:
                alarm.advanced()
            wake.wait(pause)
            stop.wait(max(0.0, started + self.min_gap_seconds - time.monotonic()))
            wake.clear()

    def fire_due(self) -> int:
        """One pass: the schedule caught up with the log, then every due timer fired. Returns how many expired."""
        self.schedule.advance()
        fired = 0
        while True:
            with self.schedule.pool.connection() as conn, conn.cursor() as cur:
                due = ExpirySchedule.due(cur, datetime.now(UTC), BATCH)
            for entity_id, entity_type in due:
                if self.recycle_bin.expire(entity_id, entity_type):
                    fired += 1
                    logger.info("Expired %s %s", entity_type, entity_id)
            self.schedule.advance()  # takes the expiries just recorded off the schedule
            if len(due) < BATCH or not fired:
                return fired

    def _until_next_due(self) -> float:
        with self.schedule.pool.connection() as conn, conn.cursor() as cur:
            next_due = ExpirySchedule.next_due(cur)
        if next_due is None:
            return self.poll_seconds
        return max(0.05, min(self.poll_seconds, (next_due - datetime.now(UTC)).total_seconds()))
