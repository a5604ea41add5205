"""Reading a warehouse as it was: instants resolved to log positions, and the catalog with validity ranges
(lakeledger/projections/catalog_versions.py) brought up to the position asked for before it is read.

Instant → position: the last event appended at or before the instant, by its append time (one indexed
query, lakeledger/eventstore/append_time.py). Append times follow log order, so the state served is always a prefix
of the log (a state the catalog really had), and once an instant is answered no later append can land at
or before it: the answer is final. An instant not yet past on the database's clock is refused.

Position → state: the versions projection is not applied inside appends (commits pay nothing for it); the
workers keep it near the head, and a read as of a position it has not reached yet first applies the rest, as
any process may advance a projection. Once this process has seen it at or past a position, reads at or before
it ask nothing more: a projection never moves back."""

import threading
from datetime import datetime

from lakeledger.domain.errors import BadRequest
from lakeledger.eventstore.append_time import FutureInstant
from lakeledger.eventstore.log import EventLog
from lakeledger.projections.driver import ProjectionDriver

_REMEMBERED_ENDS = 4096


class TimeTravel:
    def __init__(self, log: EventLog, versions: ProjectionDriver):
        self.log = log
        self.versions = versions
        self._reached = 0  # the versions projection was at or past this position when last looked at
        self._lock = threading.Lock()
        self._ends: dict[int, int] = {}  # position -> the end of its append (final once committed)

    def head(self) -> int:
        return self.log.head()

    def position_at(self, instant: datetime) -> int:
        """The log position of the last event appended at or before ``instant`` (0 when there is none)."""
        try:
            return self.log.position_at(instant)
        except FutureInstant as e:
            raise BadRequest(str(e)) from None

    def settled(self, position: int) -> int:
        """The position a read as of ``position`` is served at: the end of the append that wrote it (the events of
        one append, say a namespace move and its tables' moves, were never seen apart). 400 beyond the head."""
        if position > self._reached:  # else the projection is there, so the log is too
            head = self.log.head()
            if position > head:
                raise BadRequest(f"Log position {position} is beyond the head of the log ({head})")
        if position <= 0:
            return 0
        ends = self._ends.get(position)
        if ends is None:
            ends = self.log.end_of_append(position)
            with self._lock:
                if len(self._ends) >= _REMEMBERED_ENDS:
                    self._ends.clear()
                self._ends[position] = ends
        return ends

    def ready(self, position: int) -> None:
        """Returns once the versions projection has applied the log up to ``position`` (inclusive), applying
        what is missing itself, or waiting for the process applying it now."""
        if position <= self._reached:
            return
        reached = self.versions.caught_up(position)
        with self._lock:
            self._reached = max(self._reached, reached)
