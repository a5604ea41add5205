"""The read-model questions of the Events API (lakeledger/api/routers/events.py): a warehouse's events after a log
position, in log order, from the history read model (lakeledger/projections/history.py).

Why the history and not the event log: every history row is one event of the log, keyed by the event's log position
(``sequence``) and carrying what the log's events do not all say themselves: the warehouse (a commit names none) and
the entity's name at that moment. A page is then one range walk of the ``(warehouse_id, sequence)`` index from the
token's position, in exactly the log's order, whatever the log's length; reading the log itself would walk every
warehouse's events and rebuild names from earlier events. The history is caught up with the log before each page
(``ProjectionDriver.caught_up``), by one writer in log order, so a page never skips an event that is committed later
at a lower position."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

# how many events the row's request appended: the warehouse's history rows of that request id (index
# ll_history_by_request); a client reusing its request ids in another warehouse does not add to the count
_COUNT = ("(SELECT count(*) FROM ll_history r WHERE r.request_id = h.request_id AND r.warehouse_id = h.warehouse_id)"
          " AS request_event_count")
COLUMNS = ("h.sequence, h.event_id, h.time, h.type, h.actor, h.request_id, h.entity_type, h.entity_id,"
           f" h.entity_name, h.change::text AS change, {_COUNT}")


@dataclass(frozen=True)
class EventFilters:
    """What the SQL narrows by; the name filter and the exact operation types are applied to the mapped events."""

    types: list[str] | None = None  # our event types (history's ``type``)
    entity_ids: list[UUID] | None = None
    entity_types: list[str] | None = None
    actor: str | None = None


@dataclass(frozen=True)
class EventRow:
    """One history row as the Events API serves it, in COLUMNS' order."""

    sequence: int
    event_id: UUID
    time: datetime
    type: str
    actor: str
    request_id: str
    entity_type: str
    entity_id: UUID
    entity_name: list[str]
    change: str  # the stored JSON document, as text
    request_event_count: int


def page_query(warehouse_id: UUID, filters: EventFilters, after: int, limit: int) -> tuple[str, dict[str, Any]]:
    where = ["h.warehouse_id = %(warehouse_id)s", "h.sequence > %(after)s"]
    params: dict[str, Any] = {"warehouse_id": warehouse_id, "after": after, "limit": limit}
    for column, value in (("type", filters.types), ("entity_id", filters.entity_ids),
                          ("entity_type", filters.entity_types)):
        if value is not None:
            where.append(f"h.{column} = ANY(%({column})s)")
            params[column] = value
    if filters.actor is not None:
        where.append("h.actor = %(actor)s")
        params["actor"] = filters.actor
    sql = f"SELECT {COLUMNS} FROM ll_history h WHERE {' AND '.join(where)} ORDER BY h.sequence LIMIT %(limit)s"
    return sql, params


class EventQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def events(self, warehouse_id: UUID, filters: EventFilters, after: int, limit: int) -> list[EventRow]:
        """Up to ``limit`` of the warehouse's events after position ``after``, in log order."""
        sql, params = page_query(warehouse_id, filters, after, limit)
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(EventRow))
            await cur.execute(sql, params)
            return await cur.fetchall()
