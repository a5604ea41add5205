"""Events as read models read them: in log order, with their position and append time, decoded once, and the
writers that turn batches of them into a read model's rows.

Both the runners that follow the log (lakeledger/projections/driver.py) and a rebuild
(lakeledger/projections/rebuild.py) read through ``read`` and write through a ``BatchWriter``: a projection's own batch
writer when it offers one, otherwise its ``apply`` one event at a time (``EachEvent``)."""

from datetime import datetime
from typing import Any, NamedTuple, Protocol

from psycopg import Connection, Cursor
from psycopg.rows import tuple_row

from lakeledger.eventstore.append_time import EVENTS
from lakeledger.eventstore.log import EventLog
from lakeledger.projections import appended
from lakeledger.projections.storable import storable


class Logged(NamedTuple):
    """An event with its position and its append time (which history rows show). A tuple: made for every event a
    rebuild reads, where a frozen dataclass's constructor cost a tenth of the reading."""

    position: int
    topic: str
    event: Any
    appended_at: datetime


class BatchWriter(Protocol):
    """Writes a read model from batches of events: ``add`` each, then ``flush``. It may also offer ``settle(cur)``:
    writes it holds back until the writing pauses (an entity's last state, written once rather than once per
    batch)."""

    def add(self, logged: Logged, cur: Cursor) -> None: ...

    def flush(self, cur: Cursor) -> None: ...


class EachEvent:
    """The generic writer: the projection's own ``apply``, one event at a time."""

    def __init__(self, projection):
        self.projection = projection

    def add(self, logged: Logged, cur: Cursor) -> None:
        appended.apply(self.projection, logged, cur)

    def flush(self, cur: Cursor) -> None:
        pass


def read(conn: Connection, log_: EventLog, after: int, upto: int | None, limit: int,
         topics: frozenset[str] | tuple[str, ...] | None = None) -> list[Logged]:
    """Events after ``after`` (up to ``upto`` when given), decoded by the log's own mapper (upcasting included)."""
    return decode(log_, fetch(conn, after, upto, limit, topics))


def fetch(conn: Connection, after: int, upto: int | None, limit: int,
          topics: frozenset[str] | tuple[str, ...] | None = None) -> list[tuple]:
    """``read``'s rows, not decoded yet: (position, originator id, version, topic, state, append time)."""
    query = (f"SELECT notification_id, originator_id, originator_version, topic, state, appended_at FROM {EVENTS}"
             " WHERE notification_id > %s")
    params: list = [after]
    if upto is not None:
        query += " AND notification_id <= %s"
        params.append(upto)
    if topics:
        query += " AND topic = ANY(%s)"
        params.append(list(topics))
    query += " ORDER BY notification_id LIMIT %s"
    params.append(limit)
    # the states as they are stored, not hex text (half the cost); rows as tuples whatever the connection's default
    with conn.cursor(binary=True, row_factory=tuple_row) as cur:
        return cur.execute(query, params).fetchall()


def decode(log_: EventLog, rows: list[tuple]) -> list[Logged]:
    """The events as read models store them: escaped where Postgres could not hold a value
    (lakeledger/projections/storable.py), for the runners and a rebuild alike, so both write the same rows."""
    event_of = log_.event_of
    return [Logged(position, topic, storable(event_of(originator_id, version, topic, state), state), appended_at)
            for position, originator_id, version, topic, state, appended_at in rows]


def head(conn: Connection) -> int:
    """The log's last position (0 for an empty log)."""
    with conn.cursor(row_factory=tuple_row) as cur:
        row = cur.execute(f"SELECT coalesce(max(notification_id), 0) FROM {EVENTS}").fetchone()
    assert row is not None  # an aggregate's one row
    position: int = row[0]
    return position


def write(writer: BatchWriter, batch: list[Logged], cur: Cursor) -> None:
    """A batch through a writer, what it holds back included."""
    for logged in batch:
        writer.add(logged, cur)
    writer.flush(cur)
    settle = getattr(writer, "settle", None)
    if settle is not None:
        settle(cur)
