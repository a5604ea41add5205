"""The base every catalog aggregate shares: its events say who made them and under which request."""

from eventsourcing.domain import Aggregate


class CatalogAggregate(Aggregate):
    class Event(Aggregate.Event):
        actor: str
        request_id: str

    class Created(Event, Aggregate.Created):
        pass
