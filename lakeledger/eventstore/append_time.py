"""Instants resolved to log positions by append time, with answers that never change afterwards.

Every event has an append time (``appended_at``, lakeledger/migrations/0005_append_time.sql): the database's clock at
the insert, taken under the events-table lock that orders positions and raised to the latest append time when the clock
steps back, so it never decreases along the log. "The log as of T" is therefore the prefix of the events appended at or
before T, and its last position is one backward probe of the (appended_at, notification_id) index.

What the probe cannot see is an append in flight: it holds the lock, has its append time, and has not
committed. Such an append was given its time after every committed append, so it can only land at or before T
when T is at or after the latest committed append time. Otherwise (T is before some committed append, the usual
case for the past) the answer is final as read. In that one case the resolution briefly takes a lock that
conflicts with the appenders' (SHARE against their EXCLUSIVE): it waits for the append in flight to commit or
roll back, reads what is then committed, and reads the database clock while no append can start. An append after
that takes its time from the same clock, later: after T, as long as T is before the clock then (an instant not
yet past is refused) and the clock is not set back behind T in the meantime (the one case this cannot cover).
Comparing with the database clock alone could not do this: nothing bounds how long a taken append time waits for
its commit (the catalog projection runs in between)."""

from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.rows import tuple_row

from lakeledger.eventstore.one_round_trip import one_round_trip

EVENTS = "lakeledger_events"
_LAST_AT_OR_BEFORE = (f"SELECT notification_id FROM {EVENTS} WHERE appended_at <= %(t)s"
                      " ORDER BY appended_at DESC, notification_id DESC LIMIT 1")
_RESOLVE = (f"SELECT ({_LAST_AT_OR_BEFORE}) AS position,"
            # the latest append time, not EXISTS (... > t): the planner would look for that row by a sequential
            # scan, which walks the whole past since the log is stored in append order
            f" (SELECT max(appended_at) FROM {EVENTS}) > %(t)s AS passed")
LOCK_TIMEOUT = "10s"  # as long as an appender waits for the same lock (lakeledger/eventstore/log.py)


_END_OF_APPEND = (f"SELECT max(notification_id) FROM {EVENTS}"
                  f" WHERE appended_at = (SELECT appended_at FROM {EVENTS} WHERE notification_id = %(p)s)")


def end_of_append(conn: Connection[Any], position: int) -> int:
    """The last position of the append that wrote ``position`` (migration 0028: one append time per append), so
    that a read as of a position sees every event of its append, as every reader saw them; ``position`` itself when
    no event has it (0, a gap)."""
    found = conn.cursor(row_factory=tuple_row).execute(_END_OF_APPEND, {"p": position}).fetchone()
    return found[0] if found is not None and found[0] is not None else position


class FutureInstant(ValueError):
    """The instant is not in the past on the database's clock: events may still be appended at or before it."""


def position_at(conn: Connection[Any], instant: datetime) -> int:
    """The position of the last event appended at or before ``instant`` (0 when none was); the same whenever it
    is asked again. ``conn`` is in autocommit mode; FutureInstant when the instant is not past yet."""
    cur = conn.cursor(row_factory=tuple_row)
    resolved = cur.execute(_RESOLVE, {"t": instant}).fetchone()
    assert resolved is not None  # aggregates only: always one row
    position, passed = resolved
    if passed:
        return position or 0
    answer = conn.cursor(row_factory=tuple_row)
    with one_round_trip(conn):  # the lock is held for the server's work alone, never across a round trip
        cur.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        cur.execute(f"LOCK TABLE {EVENTS} IN SHARE MODE")
        answer.execute(f"SELECT clock_timestamp(), ({_LAST_AT_OR_BEFORE})", {"t": instant})
    clock = answer.fetchone()
    assert clock is not None  # no FROM: always one row
    now, position = clock
    if instant >= now:
        raise FutureInstant(f"The instant {instant.isoformat()} is in the future (the log's clock reads "
                            f"{now.isoformat()})")
    return position or 0
