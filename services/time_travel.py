"""Reading a warehouse as it was: instants resolved to log positions, and warehouse states folded from
the log up to a position, kept in a small LRU because a client reading the past asks many questions
of the same state.

Instant → position. Event timestamps live inside the stored event state, not in a column, so they are
read by decoding events. They are taken when an aggregate method runs, before the append waits for
the events-table lock, so two concurrent appends can enter the log in the opposite order of their
timestamps; the log is ordered by timestamp only up to that skew. An instant therefore resolves to the
last position whose event is timestamped at or before it, found in two steps: a binary search over
positions (a few single-event reads, as if timestamps were monotonic), then a forward scan from that
position over the events timestamped before ``instant + APPEND_SKEW``, which holds every event that a
slow append could have put after its later-timestamped neighbours. The state served is always a
prefix of the log, i.e. a state the catalog really had."""

import threading
from collections import OrderedDict
from datetime import datetime, timedelta
from uuid import UUID

from lakeledger.domain.errors import BadRequest
from lakeledger.eventstore.log import EventLog
from lakeledger.projections.as_of import TOPICS, WarehouseAsOf

# An event is appended within this long of its timestamp: the log's lock timeout is 10 s, and
# what a request does between making its events and saving them takes far less than the rest.
APPEND_SKEW = timedelta(seconds=30)
_BATCH = 1000


class TimeTravel:
    def __init__(self, log: EventLog, capacity: int = 32):
        self.log = log
        self._capacity = capacity
        self._states: OrderedDict[tuple[UUID, int], WarehouseAsOf] = OrderedDict()
        self._lock = threading.Lock()

    def head(self) -> int:
        return self.log.head()

    def position_at(self, instant: datetime) -> int:
        """The log position of the last event at or before ``instant`` (0 when there is none)."""
        head = self.log.head()
        lo, hi = 0, head + 1  # the answer of the monotonic search lies in [lo, hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            found = self.log.read(after=mid - 1, limit=1, upto=hi - 1)
            if not found:  # positions [mid, hi) are gaps left by refused appends
                hi = mid
            elif found[0].event.timestamp <= instant:
                lo = found[0].position
            else:
                hi = mid
        best, after, horizon = lo, lo, instant + APPEND_SKEW
        while True:
            batch = self.log.read(after=after, limit=_BATCH, upto=head)
            for n in batch:
                if n.event.timestamp > horizon:
                    return best
                if n.event.timestamp <= instant:
                    best = n.position
            if len(batch) < _BATCH:
                return best
            after = batch[-1].position

    def warehouse_at(self, warehouse_id: UUID, position: int) -> WarehouseAsOf:
        """The warehouse as the log up to ``position`` (inclusive) shows it; the caller checks ``exists``."""
        key = (warehouse_id, position)
        with self._lock:
            cached = self._states.get(key)
            if cached is not None:
                self._states.move_to_end(key)
                return cached
            # Fold on from the latest cached earlier state of this warehouse rather than from the start.
            earlier = max((p for (w, p) in self._states if w == warehouse_id and p < position), default=None)
            start = self._states[(warehouse_id, earlier)].copy() if earlier is not None else None
        state = start or WarehouseAsOf(warehouse_id)
        after = state.position
        while after < position:
            batch = self.log.read(after=after, limit=_BATCH, upto=position, topics=TOPICS)
            for n in batch:
                state.apply(n.position, n.event)
            if len(batch) < _BATCH:
                break
            after = batch[-1].position
        state.position = position
        with self._lock:
            self._states[key] = state
            self._states.move_to_end(key)
            while len(self._states) > self._capacity:
                self._states.popitem(last=False)
        return state

    def check_position(self, position: int) -> None:
        head = self.log.head()
        if position > head:
            raise BadRequest(f"Log position {position} is beyond the head of the log ({head})")
