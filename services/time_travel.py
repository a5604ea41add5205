"""Reading a warehouse as it was: instants resolved to log positions, and warehouse states folded from
the log up to a position, kept in a small LRU because a client reading the past asks many questions
of the same state.

Instant → position: the last event appended at or before the instant, by its append time (one indexed
query, eventstore/append_time.py). Append times follow log order, so the state served is always a prefix
of the log (a state the catalog really had), and once an instant is answered no later append can land at
or before it: the answer is final. An instant not yet past on the database's clock is refused."""

import threading
from collections import OrderedDict
from datetime import datetime
from uuid import UUID

from lakeledger.domain.errors import BadRequest
from lakeledger.eventstore.append_time import FutureInstant
from lakeledger.eventstore.log import EventLog
from lakeledger.projections.as_of import TOPICS, WarehouseAsOf

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
        """The log position of the last event appended at or before ``instant`` (0 when there is none)."""
        try:
            return self.log.position_at(instant)
        except FutureInstant as e:
            raise BadRequest(str(e)) from None

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
