"""Questions the maintenance workers (lakeledger/workers/maintainer.py) ask: which live tables need a look (those of
active warehouses where some policy is enabled, whose next look is due or whose warehouse's policies changed since
the last one), when each action was last looked at, which runs are due, and the
table a run works on as it is now (renamed or moved since it was scheduled). On a ``Cursor`` of the worker's own."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID

from psycopg import Cursor

from lakeledger.domain.table_maintenance import MAINTENANCE_QUEUES
from lakeledger.domain.warehouse import retention_of
from lakeledger.projections.catalog_queries import READ_ONLY


@dataclass(frozen=True)
class TableToCheck:
    id: UUID
    warehouse_id: UUID
    namespace: list[str]
    name: str
    metadata_location: str | None
    checks: dict[str, datetime]  # queue -> when it was last looked at
    time_travel_retention: timedelta | None  # its warehouse's
    time_travel_retention_set_at: datetime | None


@dataclass(frozen=True)
class LiveTable:
    warehouse_id: UUID
    warehouse_name: str
    namespace: list[str]
    name: str
    metadata_location: str | None
    time_travel_retention: timedelta | None  # its warehouse's


# An enabled setting anywhere in a warehouse may reach any of its tables (inherited downwards); the effective policy
# of each (maintenance_policies_queries.levels) says whether it does.
_TO_CHECK = (
    "SELECT t.id, t.warehouse_id, t.namespace, t.name, t.metadata_location, w.time_travel_retention,"
    " w.time_travel_retention_set_at,"
    " coalesce((SELECT jsonb_object_agg(c.queue, c.checked_at) FROM ll_maintenance_checks c WHERE c.table_id = t.id),"
    " '{}'::jsonb) AS checks"
    " FROM ll_tabulars t JOIN ll_warehouses w ON w.id = t.warehouse_id AND w.status = 'active'"
    " LEFT JOIN ll_maintenance_tables m ON m.table_id = t.id"
    " WHERE t.typ = 'table' AND t.dropped_at IS NULL AND t.id > %(after)s"
    " AND EXISTS (SELECT 1 FROM ll_maintenance_policies p WHERE p.warehouse_id = t.warehouse_id"
    " AND p.parameters @> '{\"enabled\": true}')"
    " AND (m.table_id IS NULL OR m.next_check_at <= now() OR m.checked_at < (SELECT max(p.set_at)"
    " FROM ll_maintenance_policies p WHERE p.warehouse_id = t.warehouse_id)"
    " OR m.checked_at < w.time_travel_retention_set_at)"
    " ORDER BY t.id LIMIT %(limit)s")
_CHECKED = ("INSERT INTO ll_maintenance_checks (table_id, queue, checked_at) VALUES (%(table)s, %(queue)s, %(at)s)"
            " ON CONFLICT (table_id, queue) DO UPDATE SET checked_at = EXCLUDED.checked_at")
_TABLE_CHECKED = ("INSERT INTO ll_maintenance_tables (table_id, checked_at, next_check_at)"
                  " VALUES (%(table)s, %(at)s, %(next)s) ON CONFLICT (table_id) DO UPDATE"
                  " SET checked_at = EXCLUDED.checked_at, next_check_at = EXCLUDED.next_check_at")
_DUE = ("SELECT entity_id, queue FROM ll_tasks WHERE queue = ANY(%(queues)s)"
        " AND status IN ('SCHEDULED', 'RUNNING', 'STOPPING')"
        " AND scheduled_for <= now() ORDER BY scheduled_for LIMIT %(limit)s")
_NEXT_DUE = ("SELECT extract(epoch FROM min(scheduled_for) - now()) FROM ll_tasks WHERE queue = ANY(%(queues)s)"
             " AND status = 'SCHEDULED'")
_LIVE = ("SELECT t.warehouse_id, w.name AS warehouse_name, t.namespace, t.name, t.metadata_location,"
         " w.time_travel_retention FROM ll_tabulars t"
         " JOIN ll_warehouses w ON w.id = t.warehouse_id AND w.status = 'active'"
         " WHERE t.id = %(id)s AND t.typ = 'table' AND t.dropped_at IS NULL")


def _datetimes(checks: dict[str, str]) -> dict[str, datetime]:
    return {queue: datetime.fromisoformat(at) for queue, at in checks.items()}


def tables_to_check(cur: Cursor, after: UUID, limit: int) -> list[TableToCheck]:
    """Live tables after ``after`` (by id) in warehouses where some policy is enabled."""
    cur.execute(_TO_CHECK, {"after": after, "limit": limit})
    return [TableToCheck(i, w, list(ns), n, m, _datetimes(c), retention_of(r), r_at)
            for i, w, ns, n, m, r, r_at, c in cur.fetchall()]


def read_only(cur: Cursor) -> bool:
    """Whether the server is in read-only maintenance mode: a job's commits would be refused (503)."""
    cur.execute(READ_ONLY)
    row = cur.fetchone()
    return bool(row and row[0])


def record_check(cur: Cursor, table_id: UUID, queue: str, at: datetime) -> None:
    cur.execute(_CHECKED, {"table": table_id, "queue": queue, "at": at})


def record_table_check(cur: Cursor, table_id: UUID, at: datetime, next_at: datetime) -> None:
    cur.execute(_TABLE_CHECKED, {"table": table_id, "at": at, "next": next_at})


def due_runs(cur: Cursor, limit: int) -> list[tuple[UUID, str]]:
    """(table, queue) of the runs due by now, earliest first: waiting ones, and running ones (whose worker may have
    died; the run's claim tells)."""
    cur.execute(_DUE, {"queues": list(MAINTENANCE_QUEUES), "limit": limit})
    return [(table, queue) for table, queue in cur.fetchall()]


def stop_requested(cur: Cursor, task_id: UUID) -> bool:
    """Whether a task control asked the running run to stop (Lakekeeper's ``stop``)."""
    cur.execute("SELECT status = 'STOPPING' FROM ll_tasks WHERE task_id = %(task)s", {"task": task_id})
    row = cur.fetchone()
    return bool(row and row[0])


def seconds_until_next_run(cur: Cursor) -> float | None:
    cur.execute(_NEXT_DUE, {"queues": list(MAINTENANCE_QUEUES)})
    row = cur.fetchone()
    return None if row is None or row[0] is None else float(row[0])


def live_table(cur: Cursor, table_id: UUID) -> LiveTable | None:
    cur.execute(_LIVE, {"id": table_id})
    row = cur.fetchone()
    if row is None:
        return None
    warehouse_id, warehouse_name, namespace, name, metadata_location, retention = row
    return LiveTable(warehouse_id, warehouse_name, list(namespace), name, metadata_location, retention_of(retention))
