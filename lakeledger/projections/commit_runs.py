"""A rebuild's writer for read models that change with every table commit (lakeledger/projections/rebuild.py).

At scale most of the log is commits, and applied one by one each is a statement of its own. Here a run of
consecutive commits is written with one statement (``write_run``, the rows as arrays), and every other event goes
to the projection's own ``apply`` after the run before it is written, so the read model sees the events in log
order as the per-event path does."""

from collections.abc import Callable
from typing import Any

from psycopg import Cursor

from lakeledger.projections import appended


class CommitRuns:
    def __init__(self, projection: Any, takes: Callable[[Any], bool], write_run: Callable[[list, Cursor], None]):
        self.projection = projection
        self.takes = takes
        self.write_run = write_run
        self.run: list = []  # the Logged commits not written yet

    def add(self, logged: Any, cur: Cursor) -> None:
        if self.takes(logged.event):
            self.run.append(logged)
            return
        self.flush(cur)
        appended.apply(self.projection, logged, cur)

    def flush(self, cur: Cursor) -> None:
        if self.run:
            self.write_run(self.run, cur)
            self.run = []
