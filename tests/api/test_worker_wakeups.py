"""The workers sleep until Postgres notifies an append: an idle server makes no passes, a NOTIFY makes one, a lost
notification connection is made again and wakes them (what was appended meanwhile is not missed), and stop()
ends every thread at once, without waiting for a poll interval."""

import threading
import time

import psycopg

from lakeledger.eventstore.log import EVENTS_TABLE
from lakeledger.workers.runner import Workers


class CountingRunner:
    name = "counting"

    def __init__(self):
        self.passes = 0
        self.changed = threading.Condition()

    def advance(self):
        with self.changed:
            self.passes += 1
            self.changed.notify_all()

    def wait_for(self, passes: int, seconds: float = 10.0) -> int:
        with self.changed:
            self.changed.wait_for(lambda: self.passes >= passes, seconds)
            return self.passes


def _listening(conn) -> list[int]:
    return [r[0] for r in conn.execute("SELECT pid FROM pg_stat_activity WHERE query ILIKE 'LISTEN%%'"
                                       " AND datname = current_database()")]


def test_workers_pass_on_notify_only_and_stop_at_once(database):
    runner = CountingRunner()
    workers = Workers([runner], database, poll_seconds=600, batch_seconds=0)
    workers.start()
    try:
        assert runner.wait_for(1) == 1  # the pass after LISTEN: whatever came before it
        time.sleep(1.5)
        assert runner.passes == 1, "an idle worker made passes with no NOTIFY"
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(f"NOTIFY {EVENTS_TABLE}")
            assert runner.wait_for(2) == 2
            time.sleep(0.5)
            assert runner.passes == 2

            # the server drops the notification connection: it is made again, and that wakes the runner
            listeners = _listening(conn)
            assert len(listeners) == 1
            conn.execute("SELECT pg_terminate_backend(%s)", (listeners[0],))
            assert runner.wait_for(3) == 3
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and len(_listening(conn)) != 1:
                time.sleep(0.1)
            assert len(_listening(conn)) == 1
            conn.execute(f"NOTIFY {EVENTS_TABLE}")
            assert runner.wait_for(4) == 4
    finally:
        workers.stop()
    assert [t.name for t in workers._threads if t.is_alive()] == []
