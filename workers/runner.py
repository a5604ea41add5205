"""Runs projection runners in background threads, woken by the log's NOTIFY and by a poll timer."""

import logging
import threading
from collections.abc import Sequence
from typing import Protocol

import psycopg
from psycopg import sql

from lakeledger.eventstore.log import EVENTS_TABLE
from lakeledger.projections.runner import ProjectionRunner

log = logging.getLogger("lakeledger.workers")


class Follower(Protocol):
    """A worker that keeps its own loop (the CloudEvents publisher): it runs in a thread of its own until
    ``stop`` is set, and ``wake`` is set whenever the log grows."""

    name: str

    def run(self, stop: threading.Event, wake: threading.Event) -> None: ...


class Workers:
    def __init__(self, runners: list[ProjectionRunner], conninfo: str, poll_seconds: float = 1.0,
                 batch_seconds: float = 0.05, followers: Sequence[Follower] = ()):
        self.runners = runners
        self.followers = list(followers)
        self.conninfo = conninfo
        self.poll_seconds = poll_seconds
        self.batch_seconds = batch_seconds
        self._stop = threading.Event()
        self._wake = [threading.Event() for _ in [*runners, *self.followers]]
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._listen, name="lakeledger-listen", daemon=True)]
        for runner, wake in zip(self.runners, self._wake):
            self._threads.append(threading.Thread(target=self._run, args=(runner, wake),
                                                  name=f"lakeledger-{runner.name}", daemon=True))
        for follower, wake in zip(self.followers, self._wake[len(self.runners):]):
            self._threads.append(threading.Thread(target=follower.run, args=(self._stop, wake),
                                                  name=f"lakeledger-{follower.name}", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for wake in self._wake:
            wake.set()
        for thread in self._threads:
            thread.join(timeout=5)

    def run_forever(self) -> None:
        self.start()
        try:
            while not self._stop.wait(1.0):
                pass
        finally:
            self.stop()

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(EVENTS_TABLE)))
                    while not self._stop.is_set():
                        for _ in conn.notifies(timeout=self.poll_seconds, stop_after=1):
                            for wake in self._wake:
                                wake.set()
            except psycopg.Error:
                log.warning("Lost the notification connection; reconnecting", exc_info=True)
                self._stop.wait(1.0)

    def _run(self, runner: ProjectionRunner, wake: threading.Event) -> None:
        while not self._stop.is_set():
            wake.wait(self.poll_seconds)
            # Under a burst of appends, one pass per interval takes them all in one batch instead of
            # paying a round of queries for every NOTIFY.
            self._stop.wait(self.batch_seconds)
            wake.clear()
            if self._stop.is_set():
                return
            try:
                runner.advance()
            except Exception:
                log.exception("Projection %s failed to advance; retrying", runner.name)
                self._stop.wait(1.0)
