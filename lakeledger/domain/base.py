"""The base every catalog aggregate shares: its events say who made them and under which request."""

from copy import deepcopy
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, TAggregate

# values an aggregate's copy may share with it: nothing can change them in place
_IMMUTABLE = frozenset({str, int, float, bool, type(None), UUID, datetime})


class CatalogAggregate(Aggregate):
    class Event(Aggregate.Event):
        actor: str
        request_id: str

    class Created(Event, Aggregate.Created):
        pass

    def __deepcopy__(self, memo: dict[int, Any]) -> "CatalogAggregate":
        # The log hands out copies of its cached aggregates (commands change them) on every command: copying ids
        # and times through their reduce protocol made the generic deep copy a tenth of a commit's service time.
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        state = copied.__dict__
        for name, value in self.__dict__.items():
            state[name] = value if type(value) in _IMMUTABLE else deepcopy(value, memo)
        return copied


class OpensOrContinues(CatalogAggregate.Created):
    """An event that may open its aggregate's history or continue it: the aggregates made by the first of a change
    that repeats (a grant, a maintenance policy, a task queue's configuration). Outside CatalogAggregate's body, so
    that it is no created-event class of CatalogAggregate itself."""

    def mutate(self, aggregate: TAggregate | None) -> TAggregate | None:
        if aggregate is None:
            aggregate = CatalogAggregate.Created.mutate(self, None)
            self.apply(aggregate)
            return aggregate
        return CatalogAggregate.Event.mutate(self, aggregate)
