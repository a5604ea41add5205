"""Questions the audit history answers: a warehouse's events, or the server's (projects, warehouses), filtered
and in log order, one keyset page at a time.

Before answering, the history projection is caught up with the log: it waits for any other process applying
it, then applies what is left, so an answer includes every change committed before the request (read your
writes, from any process) without making commits pay for the history."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

from lakeledger.projections.history import SERVER_LEVEL

COLUMNS = ("sequence, event_id, time, type, actor, request_id, warehouse_id, entity_type, entity_id, entity_name,"
           " summary, change::text AS change")  # as text: the API passes it through (numbers of any size)

KNOWN_WAREHOUSE = "SELECT EXISTS (SELECT 1 FROM ll_history_entities WHERE id = %(id)s AND entity_type = 'warehouse')"
# the position of the last event appended before a time bound (0: none)
_LAST_BEFORE = ("COALESCE((SELECT notification_id FROM lakeledger_events WHERE appended_at < %({bound})s"
                " ORDER BY appended_at DESC, notification_id DESC LIMIT 1), 0)")


@dataclass(frozen=True)
class Filters:
    namespace: list[str] | None = None
    tabular_id: UUID | None = None
    actor: str | None = None
    type: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive


def page_query(warehouse_id: UUID | None, filters: Filters, after: int | None,
               limit: int | None) -> tuple[str, dict[str, Any]]:
    """One page of the history (``warehouse_id`` None: the server-level history), in log order after ``after``."""
    where = ["sequence > %(after)s"]
    params: dict[str, Any] = {"after": after or 0, "limit": limit}
    if warehouse_id is None:
        where.append("entity_type = ANY(%(server_level)s)")
        params["server_level"] = list(SERVER_LEVEL)
    else:
        where.append("warehouse_id = %(warehouse_id)s")
        params["warehouse_id"] = warehouse_id
    if filters.namespace is not None:
        # a rename is listed under the namespace it leaves as well as the one it enters
        where.append("(namespace = %(namespace)s OR from_namespace = %(namespace)s)")
        params["namespace"] = filters.namespace
    for column, value in (("entity_id", filters.tabular_id), ("actor", filters.actor), ("type", filters.type)):
        if value is not None:
            where.append(f"{column} = %({column})s")
            params[column] = value
    # Append times follow log order, so a time bound is also a bound on the sequence, found by one probe of the
    # events' append-time index: the page's index walk then starts (or stops) there instead of at the log's
    # beginning, and a page deep in a long log costs what the first does.
    if filters.since is not None:
        where.append(f"time >= %(since)s AND sequence > {_LAST_BEFORE.format(bound='since')}")
        params["since"] = filters.since
    if filters.until is not None:
        where.append(f"time < %(until)s AND sequence <= {_LAST_BEFORE.format(bound='until')}")
        params["until"] = filters.until
    sql = f"SELECT {COLUMNS} FROM ll_history WHERE {' AND '.join(where)} ORDER BY sequence LIMIT %(limit)s"
    return sql, params


@dataclass(frozen=True)
class HistoryEvent:
    """One row of the history, in COLUMNS' order."""
    sequence: int
    event_id: UUID
    time: datetime
    type: str
    actor: str
    request_id: str
    warehouse_id: UUID | None
    entity_type: str
    entity_id: UUID
    entity_name: list[str]
    summary: str
    change: str  # the stored JSON document, as text


class HistoryQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def knows_warehouse(self, warehouse_id: UUID) -> bool:
        """Deleted warehouses included: their history outlives them."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(KNOWN_WAREHOUSE, {"id": warehouse_id})
            row = await cur.fetchone()
            return row is not None and bool(row[0])

    async def events(self, warehouse_id: UUID | None, filters: Filters, after: int | None,
                     limit: int | None) -> list[HistoryEvent]:
        """``warehouse_id`` None: the server-level history."""
        sql, params = page_query(warehouse_id, filters, after, limit)
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(HistoryEvent))
            await cur.execute(sql, params)
            return await cur.fetchall()
