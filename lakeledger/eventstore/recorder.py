"""eventsourcing's Postgres recorder, with one addition: a hook that runs inside the append
transaction once the events have their log positions, while the events-table lock still orders
every append. The catalog read model is kept there, so it is never behind the log it comes from,
and conditions checked there cannot be raced. The inserted rows already carry their append times: the
database sets them in the insert, after the lock (lakeledger/migrations/0005_append_time.sql), so an append
time is as ordered as a position; the hook runs between that and the commit, which is why resolving a
recent instant waits for an append in flight (lakeledger/eventstore/append_time.py).

The library's private methods overridden or called here, and what is assumed of them, are named in
lakeledger/eventstore/compat.py (RELIED_ON, SUBCLASSES), which tests/unit/test_compat.py checks against the installed
library."""

import time
from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any, TypeVar

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Identifier

from lakeledger.eventstore.compat import without_library_retry
from lakeledger.eventstore.one_round_trip import one_round_trip
from lakeledger.eventstore.postgres_failures import connection_lost

IN_TRANSACTION = "in_transaction"
# The same hook's work when it needs no answer from the database: written after the insert in one pipeline, so
# the whole append (lock, insert, read model, commit) is one round trip and the lock is held for the server's
# time alone, never for this process's (a thread waiting for the GIL, or for a core, while other appends queue).
IN_ONE_ROUND_TRIP = "in_one_round_trip"
InOneRoundTrip = Callable[[Cursor[DictRow]], None]

# Raised by the database (lakeledger/migrations/0017_append_in_one_round_trip.sql) when a read model written in the
# append has not applied every event before it: the append is rolled back and made again with the full hook.
READ_MODEL_BEHIND = "LL001"

# Appends larger than this leave pipeline mode: psycopg (3.2 and 3.3, C and Python) can wait forever in a
# pipeline sync after sending a message of a megabyte or so, with the server waiting for the rest of it — and
# the append holds the events table's lock, so every other write of the catalog waits too. A 10,000-field
# table's creation is such an append. Below it, appends keep the pipeline's fewer round trips.
PIPELINED_APPEND_MAX_BYTES = 64 * 1024

# Appends of up to this many events send them as rows of parameters; larger ones as arrays, one per column.
VALUES_ROWS_MAX = 100


# Attempts of one read whose pooled connections turn out broken (a restarted server): the pool is checked after the
# first, so the next one gets a live connection or a new one.
ATTEMPTS_ON_LOST_CONNECTION = 3

F = TypeVar("F", bound=Callable[..., Any])


def on_lost_connection(method: F, attempts: int) -> F:
    """``method`` (the library's own, without the library's retry, which makes ten attempts on any operational
    error, each waiting up to a pool timeout for a connection: minutes with the database down), made again on a
    fresh connection when a pooled one was found broken, and only then (a timeout is not worth waiting for twice),
    up to ``attempts`` times in all. Whatever the attempts, a broken connection has the pool checked, so that the
    calls that follow do not find the other connections it holds broken one by one."""
    method = without_library_retry(method)

    @wraps(method)
    def attempted(self: "EventLogRecorder", *args: Any, **kwargs: Any) -> Any:
        for attempt in range(1, attempts + 1):
            try:
                return method(self, *args, **kwargs)
            except (InterfaceError, OperationalError) as e:
                if not connection_lost(e):
                    raise
                self.datastore.pool.check()
                if attempt == attempts:
                    raise
                time.sleep(0.05 * attempt)
        raise AssertionError("unreachable")

    return attempted  # type: ignore[return-value]


def read_again_on_lost_connection(method: F) -> F:
    return on_lost_connection(method, ATTEMPTS_ON_LOST_CONNECTION)


def appended_once(method: F) -> F:
    """An append is never made again: its connection may have broken after the commit reached the server, and the
    same events appended again would conflict with themselves, answering a write that happened as a conflict. Its
    outcome is unknown (a 503), which is what clients make of it; the log has it once or not at all."""
    return on_lost_connection(method, 1)


class AppendRefused(BaseException):
    """Carries the hook's exception out of the recorder. It derives from BaseException because the
    library's insert path catches ``Exception`` inside its transaction block and would commit the
    events anyway; a BaseException leaves the block, and the transaction rolls back."""

    def __init__(self, error: Exception):
        super().__init__(error)
        self.error = error


class EventLogRecorder(PostgresApplicationRecorder):
    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        # The library's insert, its rows sent as plain parameters instead of one array of a composite type, which
        # psycopg dumps in Python, escaping every byte of every event's state, at a tenth of an append's CPU. Same
        # columns, same order of rows, so the same positions.
        into = SQL("INSERT INTO {schema}.{table} AS t (originator_id, originator_version, topic, state)").format(
            schema=Identifier(self.datastore.schema), table=Identifier(self.events_table_name))
        self._insert_head = into + SQL(" VALUES ")
        self._inserts: dict[int, str] = {}
        self._insert_many = into + SQL(" SELECT * FROM unnest(%b::{id_type}[], %b::bigint[], %b::text[], %b::bytea[])"
                                       " RETURNING notification_id").format(
            id_type=Identifier(self.datastore.originator_id_type))
        # The library's three statements before the rows (its lock timeout, the table's lock, the notification) as
        # one function, made with the table: fewer messages in every append, and fewer between taking the lock and
        # the commit. Statements rendered once: psycopg renders a composed statement anew each time it runs.
        function = Identifier(self.datastore.schema, f"{self.events_table_name}_lock_for_append")
        self.sql_create_statements.append(SQL(
            "CREATE OR REPLACE FUNCTION {function}(lock_timeout text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN"
            " PERFORM set_config('lock_timeout', lock_timeout, true);"
            " LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;"
            " PERFORM pg_notify({channel}, '');"
            " END $$").format(function=function, schema=Identifier(self.datastore.schema),
                              table=Identifier(self.events_table_name), channel=self.channel_name))
        self._lock_and_notify = SQL("SELECT {function}(%s)").format(function=function).as_string()
        self._lock_timeout = (f"{self.datastore.lock_timeout}s",)

    def _insert_statement(self, rows: int) -> str:
        statement = self._inserts.get(rows)
        if statement is None:
            statement = self._inserts[rows] = (self._insert_head + SQL(", ".join(["(%s, %s, %s, %b)"] * rows)
                                                                       + " RETURNING notification_id")).as_string()
        return statement

    def _insert_stored_events(self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **_: Any) -> None:
        # overrides the library's (compat.RELIED_ON): the table's lock, the notification, then the rows
        curs.execute(self._lock_and_notify, self._lock_timeout, prepare=True)
        if len(stored_events) <= VALUES_ROWS_MAX:
            curs.execute(self._insert_statement(len(stored_events)),
                         [value for e in stored_events
                          for value in (e.originator_id, e.originator_version, e.topic, e.state)])
        else:  # one statement whatever the count, in the same order
            curs.execute(self._insert_many, ([e.originator_id for e in stored_events],
                                             [e.originator_version for e in stored_events],
                                             [e.topic for e in stored_events], [e.state for e in stored_events]))

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        one_trip = kwargs.pop(IN_ONE_ROUND_TRIP, None)
        small = sum(len(e.state) for e in stored_events) <= PIPELINED_APPEND_MAX_BYTES
        if one_trip is not None and small and stored_events and not self.datastore.enable_db_functions:
            ids = self._insert_in_one_round_trip(stored_events, one_trip)
            if ids is not None:
                return ids
        if self.datastore.enable_db_functions or small:
            return self._library_insert_events(stored_events, **kwargs)
        return self._insert_without_pipeline(stored_events, **kwargs)

    select_events = read_again_on_lost_connection(PostgresApplicationRecorder.select_events)
    select_notifications = read_again_on_lost_connection(PostgresApplicationRecorder.select_notifications)
    max_notification_id = read_again_on_lost_connection(PostgresApplicationRecorder.max_notification_id)
    # typed here: the library's retry decorator leaves its methods untyped
    _library_insert_events: Callable[..., Sequence[int] | None]
    _library_insert_events = appended_once(PostgresApplicationRecorder.insert_events)

    @appended_once
    def _insert_in_one_round_trip(self, stored_events: Sequence[StoredEvent],
                                  one_trip: InOneRoundTrip) -> Sequence[int] | None:
        """The library's statements, then ``one_trip``'s, then the commit, sent together; None when a read model
        written there turned out to be behind (nothing was appended)."""
        with self.datastore.get_connection() as conn:
            inserted = conn.cursor()
            try:
                with one_round_trip(conn), conn.cursor() as curs:
                    self._insert_events(curs, stored_events)
                    self._insert_stored_events(inserted, stored_events)
                    one_trip(curs)
            except psycopg.DatabaseError as e:
                if e.sqlstate == READ_MODEL_BEHIND:
                    return None
                raise
            return [row["notification_id"] for row in inserted.fetchall()]

    @appended_once
    def _insert_without_pipeline(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        # the library's statements, in the same order, in one transaction, one round trip each
        with self.datastore.get_connection() as conn, conn.transaction():
            with conn.cursor() as curs:
                self._insert_events(curs, stored_events, **kwargs)
            if not stored_events:
                return None
            with conn.cursor() as curs:
                self._insert_stored_events(curs, stored_events, **kwargs)
                return self._fetch_ids_after_insert_events(curs, stored_events, **kwargs)

    def _fetch_ids_after_insert_events(self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent],
                                       **kwargs: Any) -> Sequence[int] | None:
        # overrides the library's (compat.RELIED_ON), which its insert calls once the rows have their positions
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        hook = kwargs.get(IN_TRANSACTION)
        if hook is not None and ids:
            try:
                hook(curs.connection, list(ids))
            except Exception as e:
                raise AppendRefused(e) from e
        return ids
