"""The loop the expirer and the purge retries share (lakeledger/workers/timed_work.py): how a pass walks its
batches, how long it sleeps, what wakes it, and what a failed pass does. The work itself (expiring, purging) is
driven end to end by tests/e2e/test_expiry_workers.py and tests/e2e/test_s3_purge_*.py."""

import logging
import threading
import time
from contextlib import contextmanager

import pytest

from lakeledger.domain.errors import ReadModelStuck
from lakeledger.operations.metrics import PROJECTION_STUCK
from lakeledger.workers.expirer import Expirer
from lakeledger.workers.purger import PurgeRetries
from lakeledger.workers.timed_work import TimedWork


class Scripted(TimedWork):
    """Due work whose batches are given up front: each pass takes the next batches until one is the last."""

    name = "scripted"
    logger = logging.getLogger("lakeledger.tests.scripted")
    batch = 3
    failure_message = "Scripted pass failed"
    shortest_pause_seconds = 0.5

    def __init__(self, batches: list, next_due: float | None = None, poll_seconds: float = 600.0, **attributes):
        super().__init__(poll_seconds)
        self.batches = list(batches)
        self.next_due = next_due
        self.passes = 0
        self.changed = threading.Condition()
        for key, value in attributes.items():
            setattr(self, key, value)

    def run_due(self) -> int:
        with self.changed:
            self.passes += 1
            self.changed.notify_all()
        return super().run_due()

    def run_batch(self) -> tuple[int, int]:
        step = self.batches.pop(0) if self.batches else (0, 0)
        if isinstance(step, Exception):
            raise step
        return step

    def seconds_until_next_due(self) -> float | None:
        return self.next_due

    def wait_for(self, passes: int, seconds: float = 10.0) -> int:
        with self.changed:
            self.changed.wait_for(lambda: self.passes >= passes, seconds)
            return self.passes


def _eventually(predicate, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()


@contextmanager
def _running(work: TimedWork):
    """``work`` running in a thread as the workers run it; at the end stopped as Workers.stop does (the stop, then
    every wake, for work asleep on its wake), and checked to have ended."""
    stop, wake = threading.Event(), threading.Event()
    thread = threading.Thread(target=work.run, args=(stop, wake), daemon=True)
    thread.start()
    try:
        yield wake
    finally:
        stop.set()
        wake.set()
        thread.join(5)
    assert not thread.is_alive()


def test_a_pass_takes_batches_until_a_short_one():
    work = Scripted([(3, 3), (3, 1), (2, 2), (3, 3)])
    assert work.run_due() == 6
    assert work.batches == [(3, 3)]


def test_the_expirer_also_stops_at_a_full_batch_when_nothing_fired_in_the_pass():
    expirer, retries = Expirer.__new__(Expirer), PurgeRetries.__new__(PurgeRetries)  # the rule needs no database
    assert expirer.batch_was_last(100, 0)
    assert not expirer.batch_was_last(100, 1)
    assert expirer.batch_was_last(99, 5)
    assert not retries.batch_was_last(20, 0)
    assert retries.batch_was_last(19, 19)


@pytest.mark.parametrize("poll, next_due, expirer, retries", [
    (30.0, None, 30.0, 30.0),     # nothing waiting: the poll
    (30.0, 10.0, 10.0, 10.0),     # the next item's time
    (30.0, 0.2, 0.2, 0.5),        # but never sooner than the shortest pause
    (30.0, -5.0, 0.05, 0.5),      # an item overdue
    (0.2, 10.0, 0.2, 0.2),        # a short poll wins over a later item
    (0.2, -5.0, 0.05, 0.2),       # and over the purge retries' shortest pause
    (0.01, 10.0, 0.05, 0.01),     # the expirer never sleeps under 0.05 s, whatever the poll
])
def test_the_sleep_until_the_next_due_item(poll, next_due, expirer, retries):
    """The two formulas the workers had before they shared a loop: the expirer's max(0.05, min(poll, due)),
    the retries' min(poll, max(0.5, due))."""
    as_expirer = Scripted([], next_due, poll, shortest_pause_seconds=Expirer.shortest_pause_seconds,
                          least_pause_seconds=Expirer.least_pause_seconds)
    as_retries = Scripted([], next_due, poll, shortest_pause_seconds=PurgeRetries.shortest_pause_seconds,
                          least_pause_seconds=PurgeRetries.least_pause_seconds)
    assert as_expirer.until_next_due() == pytest.approx(expirer)
    assert as_retries.until_next_due() == pytest.approx(retries)


@pytest.mark.parametrize("wakes_on_append", [True, False])
def test_an_append_wakes_only_the_work_that_asks_for_it(wakes_on_append):
    work = Scripted([], wakes_on_append=wakes_on_append)
    with _running(work) as wake:
        assert work.wait_for(1) == 1
        wake.set()
        if wakes_on_append:
            assert work.wait_for(2) == 2
        else:
            time.sleep(0.5)
            assert work.passes == 1, "the purge retries made a pass on an append"


@pytest.mark.parametrize("error", [RuntimeError("storage down"),
                                   ReadModelStuck("elsewhere", 7, "Table.Dropped", "boom")],
                         ids=["an error", "a read model stuck, for work that follows none"])
def test_a_failed_pass_is_logged_on_the_work_s_logger_and_retried(caplog, error):
    work = Scripted([error])
    with caplog.at_level(logging.ERROR, logger=work.logger.name), _running(work):
        assert work.wait_for(2) == 2
    failures = [r for r in caplog.records if r.name == work.logger.name]
    assert [r.getMessage() for r in failures] == ["Scripted pass failed"]
    assert failures[0].exc_info[1] is error


def test_a_stuck_read_model_raises_its_alarm_instead_of_a_failure(caplog):
    stuck = ReadModelStuck("scripted-schedule", 7, "Table.Dropped", "boom")
    work = Scripted([stuck], read_model="scripted-schedule")
    gauge = PROJECTION_STUCK.labels("scripted-schedule")
    with caplog.at_level(logging.ERROR), _running(work):
        assert _eventually(lambda: gauge._value.get() == 1)
        assert work.wait_for(2) == 2  # retried after the alarm's first pause
        assert _eventually(lambda: gauge._value.get() == 0)  # and it advanced
    assert "Scripted pass failed" not in caplog.text
    assert "Projection scripted-schedule cannot advance: the event at position 7" in caplog.text
