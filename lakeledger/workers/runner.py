"""Runs projection runners in background threads, woken by the log's NOTIFY.

An idle server does nothing: every thread sleeps until Postgres notifies an append, its own timer falls due, or
the long safety poll (``poll_seconds``, LAKELEDGER__WORKER_POLL_SECONDS) runs out. The safety poll only matters
if a notification could be missed; a lost LISTEN connection already wakes everything once it is back."""

import logging
import os
import select
import threading
import time
from collections.abc import Sequence
from typing import Protocol

import psycopg
from psycopg import sql

from lakeledger.eventstore.log import EVENTS_TABLE
from lakeledger.eventstore.postgres_failures import CONNECT_TIMEOUT_SECONDS
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.workers.alarm import Alarm

logger = logging.getLogger("lakeledger.workers")

# How long stop() waits for the threads, all together.
STOP_SECONDS = 0.3


class Follower(Protocol):
    """A worker that keeps its own loop (the CloudEvents publisher): it runs in a thread of its own until
    ``stop`` is set, and ``wake`` is set whenever the log grows."""

    name: str

    def run(self, stop: threading.Event, wake: threading.Event) -> None: ...


class Workers:
    def __init__(self, runners: list[ProjectionDriver], conninfo: str, poll_seconds: float = 30.0,
                 batch_seconds: float = 0.25, followers: Sequence[Follower] = ()):
        self.runners = runners
        self.followers = list(followers)
        self.conninfo = conninfo
        self.poll_seconds = poll_seconds
        self.batch_seconds = batch_seconds
        self._stop = threading.Event()
        self._wake = [threading.Event() for _ in [*runners, *self.followers]]
        self._threads: list[threading.Thread] = []
        self.alarms: dict[str, Alarm] = {}
        # written to by stop(): the LISTEN thread sleeps in select() on it and on the connection, with no timeout
        self._stop_r, self._stop_w = os.pipe()

    def start(self) -> None:
        self.alarms = {runner.name: Alarm(runner.name) for runner in self.runners}
        self._threads = [threading.Thread(target=self._listen, name="lakeledger-listen", daemon=True)]
        for runner, wake in zip(self.runners, self._wake, strict=False):
            self._threads.append(threading.Thread(target=self._run, args=(runner, wake),
                                                  name=f"lakeledger-{runner.name}", daemon=True))
        for follower, wake in zip(self.followers, self._wake[len(self.runners):], strict=True):
            self._threads.append(threading.Thread(target=follower.run, args=(self._stop, wake),
                                                  name=f"lakeledger-{follower.name}", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        os.write(self._stop_w, b"x")
        for wake in self._wake:
            wake.set()
        # one deadline for all: a thread waiting on a stalled database must not hold up the process's stop (they
        # are daemons; what they were doing is redone from the log's positions at the next start)
        deadline = time.monotonic() + STOP_SECONDS
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        if not any(thread.is_alive() for thread in self._threads):  # else the LISTEN thread may still read it
            os.close(self._stop_r)
            os.close(self._stop_w)

    def run_forever(self) -> None:
        self.start()
        try:
            # a signal handler (SIGTERM: stop()) or Ctrl-C interrupts the wait
            while not self._stop.wait(3600):
                pass
        finally:
            self.stop()

    def _wake_all(self) -> None:
        for wake in self._wake:
            wake.set()

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                # connect_timeout: a stalled server accepts the connection and never answers
                with psycopg.connect(self.conninfo, autocommit=True,
                                     connect_timeout=CONNECT_TIMEOUT_SECONDS) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(EVENTS_TABLE)))
                    self._wake_all()  # whatever was appended while we were not listening
                    while not self._stop.is_set():
                        readable, _, _ = select.select([conn.fileno(), self._stop_r], [], [], self.poll_seconds)
                        if self._stop_r in readable:
                            return
                        if not readable:
                            # a connection that died quietly shows it here; a NOTIFY arriving meanwhile is kept
                            # for the notifies() below
                            conn.execute("SELECT 1")
                        # timeout 0: takes what arrived and returns; a connection the server closed raises here
                        # (at the latest on the next pass: the first reads the server's last words)
                        if any(True for _ in conn.notifies(timeout=0)):
                            self._wake_all()
            except psycopg.Error:
                logger.warning("Lost the notification connection; reconnecting", exc_info=True)
                self._stop.wait(1.0)

    def _run(self, runner: ProjectionDriver, wake: threading.Event) -> None:
        alarm = self.alarms[runner.name]
        failed = False
        while not self._stop.is_set():
            if not failed:  # after a failure, the alarm's pause has passed: the next attempt needs no append
                wake.wait(self.poll_seconds)
                # Under a burst of appends, one pass per interval takes them all in one batch instead of
                # paying a round of queries for every NOTIFY. Readers that need a read model at the head catch it
                # up themselves, so the interval costs them nothing in freshness.
                self._stop.wait(self.batch_seconds)
            wake.clear()
            if self._stop.is_set():
                return
            try:
                runner.advance()
            except Exception as error:
                failed = True
                self._stop.wait(alarm.failed(error))
            else:
                failed = False
                alarm.advanced()
