"""The event log, on eventsourcing's Postgres persistence.

Aggregates are saved atomically (all events of one save in one transaction, under the table lock
that keeps notification ids in commit order); each save returns the log position of its last event,
and can run a hook in the same transaction (the catalog projection uses it). The database gives each
event its append time under the same lock; ``position_at`` resolves an instant with it
(lakeledger/eventstore/append_time.py).
"""

from collections.abc import Callable, Iterable
from copy import deepcopy
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, cast
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate, MutableOrImmutableAggregate
from eventsourcing.persistence import IntegrityError, Notification, StoredEvent
from eventsourcing.utils import get_topic
from psycopg import Connection, Cursor

from lakeledger.eventstore import append_time
from lakeledger.eventstore.postgres_failures import BoundedConnection, bounded_connection, pool_connection_options
from lakeledger.eventstore.recorder import IN_ONE_ROUND_TRIP, IN_TRANSACTION, AppendRefused, EventLogRecorder
from lakeledger.eventstore.settings import PostgresSettings

A = TypeVar("A", bound=Aggregate)

EVENTS_TABLE = append_time.EVENTS


class ConcurrentChange(Exception):
    """Another writer appended to one of the aggregates first."""


@dataclass(frozen=True)
class StoredNotification:
    position: int
    originator_id: UUID
    originator_version: int
    topic: str
    event: Any


InTransaction = Callable[[Connection, list[StoredNotification]], None]
# writes that need neither the events' positions nor an answer from the database (lakeledger/eventstore/recorder.py)
Blind = Callable[[Cursor, list[Any]], None]


class _Stored:
    """What the library's mapper reads of a stored event."""

    __slots__ = ("originator_id", "originator_version", "topic", "state")

    def __init__(self, originator_id: UUID, originator_version: int, topic: str, state: bytes):
        self.originator_id = originator_id
        self.originator_version = originator_version
        self.topic = topic
        self.state = state


class _LogApplication(Application[UUID]):
    name = "Lakeledger"


class EventLog:
    def __init__(self, postgres: PostgresSettings, *, create_table: bool = False, cache_size: int = 20000,
                 pool_size: int = 8, pool_timeout_seconds: float = 10.0, statement_timeout_seconds: float = 0):
        self.postgres = postgres
        env = {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_DBNAME": postgres.dbname,
            "POSTGRES_HOST": postgres.host,
            "POSTGRES_PORT": str(postgres.port),
            "POSTGRES_USER": postgres.user,
            "POSTGRES_PASSWORD": postgres.password,
            "POSTGRES_POOL_SIZE": str(pool_size),
            "POSTGRES_MAX_OVERFLOW": str(pool_size),
            "POSTGRES_LOCK_TIMEOUT": "10",
            "CREATE_TABLE": "y" if create_table else "n",
            "AGGREGATE_CACHE_MAXSIZE": str(cache_size),
            "AGGREGATE_CACHE_FASTFORWARD": "y",
            "APPLICATION_RECORDER_TOPIC": "lakeledger.eventstore.recorder:EventLogRecorder",
        }
        self._app = _LogApplication(env=env)
        recorder = self._app.recorder
        assert isinstance(recorder, EventLogRecorder)  # APPLICATION_RECORDER_TOPIC
        self._recorder = recorder
        self._mapper = self._app.mapper
        # the library builds its pool with none of these (it opens it on first use, so they apply to every connection
        # it makes): how long a caller waits for a connection, and connections bounded as the other pools' are
        pool = self._recorder.datastore.pool
        pool.timeout = pool_timeout_seconds
        pool.connection_class = bounded_connection(BoundedConnection, statement_timeout_seconds)
        assert isinstance(pool.kwargs, dict)
        pool.kwargs.update(pool_connection_options(statement_timeout_seconds))

    def close(self, timeout: float = 5.0) -> None:
        """``timeout``: how long to wait for the pool's own threads (a stalled database can hold them)."""
        self._recorder.datastore.pool.close(timeout=timeout)
        self._app.close()

    def get(self, cls: type[A], aggregate_id: UUID, latest_version: int | None = None) -> A | None:
        """The aggregate as of the log's head. ``latest_version``: its last version in the log as the database
        said a moment ago; a cached copy at that version is then taken as it is, without reading the log again.
        Should the log have moved on since, the append that follows conflicts and the command runs again."""
        cached = self._cached(aggregate_id) if latest_version is not None else None
        if cached is not None and cached.version == latest_version:
            aggregate = deepcopy(cached)  # as the repository hands out cached aggregates: commands mutate them
            return aggregate if isinstance(aggregate, cls) else None
        try:
            aggregate = self._app.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None
        if not isinstance(aggregate, cls):
            return None
        return aggregate

    def _cached(self, aggregate_id: UUID) -> MutableOrImmutableAggregate[UUID] | None:
        cache = self._app.repository.cache
        try:
            return cache.get(aggregate_id) if cache is not None else None
        except KeyError:
            return None

    def save(self, *aggregates: Aggregate | None, in_transaction: InTransaction | None = None,
             one_trip: Blind | None = None) -> int | None:
        """Appends every pending event of the given aggregates in one transaction. Returns the log
        position of the last event appended (None when nothing was pending).

        ``in_transaction(conn, appended)`` runs inside that transaction with the appended events and
        their positions; if it raises, nothing is appended and its exception is raised here. ``one_trip(cur,
        events)``, when given, does the same work without positions or answers: the append is then tried in one
        round trip first, and ``in_transaction`` runs only if the database refuses that."""
        events = [e for a in aggregates if a is not None for e in a.collect_events()]
        if not events:
            return None
        kwargs: dict[str, Callable[..., None]] = {}
        if in_transaction is not None:
            def hook(conn: Connection, positions: list[int]) -> None:
                in_transaction(conn, [StoredNotification(p, e.originator_id, e.originator_version,
                                                         get_topic(type(e)), e)
                                      for p, e in zip(positions, events, strict=True)])
            kwargs[IN_TRANSACTION] = hook
        if one_trip is not None:
            kwargs[IN_ONE_ROUND_TRIP] = lambda cur: one_trip(cur, events)
        try:
            recordings = self._app.save(*events, **kwargs)
        except IntegrityError as e:
            raise ConcurrentChange(str(e)) from None
        except AppendRefused as refused:
            raise refused.error from None
        self._remember(aggregates)
        positions = [r.notification.id for r in recordings if r.notification.id is not None]
        return max(positions) if positions else None

    def _remember(self, aggregates: tuple[Aggregate | None, ...]) -> None:
        """Caches what was just saved, unless the cache holds a later version already: the library leaves the
        cache as it was when it fast-forwards on reads, and ``get`` with the latest version would then read the
        log once more after every save."""
        cache = self._app.repository.cache
        if cache is None:
            return
        for aggregate in aggregates:
            if aggregate is None:
                continue
            cached = self._cached(aggregate.id)
            if cached is None or cached.version < aggregate.version:
                cache.put(aggregate.id, deepcopy(aggregate))  # the caller may still hold and change its own

    def head(self) -> int:
        return self._recorder.max_notification_id() or 0

    def position_at(self, instant: datetime) -> int:
        """The last position appended at or before ``instant`` (0 for none); final once answered.
        ``append_time.FutureInstant`` when the instant is not in the past on the database's clock."""
        with self._recorder.datastore.get_connection() as conn:
            return append_time.position_at(conn, instant)

    def end_of_append(self, position: int) -> int:
        """The last position of the append that wrote ``position``; final once answered (an append is never
        extended)."""
        with self._recorder.datastore.get_connection() as conn:
            return append_time.end_of_append(conn, position)

    def read(self, after: int, limit: int, upto: int | None = None,
             topics: tuple[str, ...] = ()) -> list[StoredNotification]:
        notifications = self._recorder.select_notifications(
            start=after, limit=limit, stop=upto, topics=list(topics), inclusive_of_start=False)
        return [self.decode(n) for n in notifications]

    def event_of(self, originator_id: UUID, originator_version: int, topic: str, state: bytes) -> Any:
        """The domain event a stored row holds (upcast to its class's current version), for readers of the whole log
        (a rebuild decodes every event): the mapper reads only these four fields, so no library record is made."""
        return self._mapper.to_domain_event(cast(StoredEvent, _Stored(originator_id, originator_version, topic, state)))

    def decode(self, n: Notification) -> StoredNotification:
        return StoredNotification(position=n.id, originator_id=cast(UUID, n.originator_id),  # a uuid column
                                  originator_version=n.originator_version, topic=n.topic,
                                  event=self._mapper.to_domain_event(n))

    def events_of(self, aggregate_id: UUID) -> Iterable[Any]:
        return self._app.events.get(aggregate_id)
