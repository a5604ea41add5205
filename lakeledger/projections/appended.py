"""Where an event stands in the log: its position and its append time, which some read models store.

The projection interface hands a projection the event alone. Applied by a runner that read it from the log, the
event's place is then looked up by its key (originator, version): one round trip. A rebuild reads the place with
the event and names it here for the length of the ``apply``, so the lookup costs nothing."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from psycopg import Cursor

_known: ContextVar[tuple[Any, int, datetime] | None] = ContextVar("lakeledger_appended", default=None)

LOOKUP = ("SELECT notification_id, appended_at FROM lakeledger_events"
          " WHERE originator_id = %s AND originator_version = %s")


@contextmanager
def known(event: Any, position: int, appended_at: datetime) -> Iterator[None]:
    token = _known.set((event, position, appended_at))
    try:
        yield
    finally:
        _known.reset(token)


def apply(projection: Any, logged: Any, cur: Cursor) -> None:
    """``projection.apply`` of a logged event (``position``, ``appended_at``, ``event``) with its place known."""
    with known(logged.event, logged.position, logged.appended_at):
        projection.apply(logged.event, cur)


def lookup(event: Any, cur: Cursor) -> tuple[int, datetime]:
    """(position, append time) of ``event``."""
    found = _known.get()
    if found is not None and found[0] is event:
        return found[1], found[2]
    cur.execute(LOOKUP, (event.originator_id, event.originator_version))
    row = cur.fetchone()
    assert row is not None  # the event was read from the log
    position, appended_at = row
    return position, appended_at
