"""The loop shared by the workers that run work when it falls due (expiry timers, purge retries): take what is due
in batches, sleep until the next item is due (at most ``poll_seconds``), and start again.

Each item is claimed so that it runs once however many `lakeledger workers` take part (the expirer: the aggregate
records one expiry per drop; purge retries: rows held ``FOR UPDATE SKIP LOCKED``), so this loop needs no lock of its
own, and a process killed mid-pass leaves its items due for the next pass of any process."""

import logging
import threading
import time
from abc import ABC, abstractmethod

from lakeledger.domain.errors import ReadModelStuck
from lakeledger.workers.alarm import Alarm

# after a pass that failed, the next one starts this much later
RETRY_SECONDS = 1.0


class TimedWork(ABC):
    """One kind of due work. Subclasses say how to take one batch (``run_batch``) and when the next item is due
    (``seconds_until_next_due``); the class attributes below are the rest of what differs."""

    name: str
    logger: logging.Logger
    batch: int
    failure_message: str  # logged with the traceback when a pass fails, before the retry
    shortest_pause_seconds: float  # the least sleep before an item said to be due
    least_pause_seconds: float = 0.0  # the least sleep whatever ``poll_seconds`` says (0: the poll wins)
    # Woken by appends (which may bring new due items) as well as by its own timer; passes then start at least
    # ``min_gap_seconds`` apart, so a stream of appends does not cost a pass each.
    wakes_on_append: bool = False
    # the read model a pass first catches up, if any: one it cannot advance is an Alarm (workers/alarm.py)
    # rather than a failed pass
    read_model: str | None = None

    def __init__(self, poll_seconds: float, min_gap_seconds: float = 0.0):
        self.poll_seconds = poll_seconds
        self.min_gap_seconds = min_gap_seconds

    @abstractmethod
    def run_batch(self) -> tuple[int, int]:
        """Takes up to ``batch`` due items and runs them: (how many were taken, how many were done)."""

    @abstractmethod
    def seconds_until_next_due(self) -> float | None:
        """How long until the earliest item not yet due falls due; None when nothing is waiting."""

    def batch_was_last(self, taken: int, done_in_pass: int) -> bool:
        """Whether a pass stops after a batch of ``taken`` items (``done_in_pass``: done so far in this pass,
        that batch included): a short batch leaves nothing due."""
        return taken < self.batch

    def run_due(self) -> int:
        """One pass: every due item, batch after batch; returns how many were done."""
        total = 0
        while True:
            taken, done = self.run_batch()
            total += done
            if self.batch_was_last(taken, total):
                return total

    def until_next_due(self) -> float:
        seconds = self.seconds_until_next_due()
        if seconds is None:
            return self.poll_seconds
        return max(self.least_pause_seconds, min(self.poll_seconds, max(self.shortest_pause_seconds, seconds)))

    def run(self, stop: threading.Event, wake: threading.Event) -> None:
        alarm = Alarm(self.read_model) if self.read_model is not None else None
        sleep = wake if self.wakes_on_append else stop
        while not stop.is_set():
            started = time.monotonic()
            try:
                self.run_due()
                pause = self.until_next_due()
            except ReadModelStuck as stuck:
                if alarm is None:
                    self.logger.exception(self.failure_message)
                    pause = RETRY_SECONDS
                else:  # said once, retried with a growing pause
                    stop.wait(alarm.failed(stuck))
                    continue
            except Exception:
                self.logger.exception(self.failure_message)
                pause = RETRY_SECONDS
            else:
                if alarm is not None:
                    alarm.advanced()
            sleep.wait(pause)
            stop.wait(max(0.0, started + self.min_gap_seconds - time.monotonic()))
            wake.clear()
