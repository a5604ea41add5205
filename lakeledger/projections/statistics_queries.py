"""Lakekeeper's statistics: tables and views per warehouse over time, from the audit history read model
(``ll_history``), and calls per endpoint and status over time, from the counters the API processes keep
(``ll_endpoint_statistics``, lakeledger/operations/endpoint_statistics.py).

Both are in hourly buckets named by the hour's end, as Lakekeeper has them: a bucket exists only for an hour in which
something happened."""

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

NO_WAREHOUSE = UUID(int=0)

# What changes a warehouse's counts, as Lakekeeper counts: a table or view is counted from its creation (or its
# registration after a final drop) until it is gone for good (a final drop, or the expiry of a soft one); a
# soft-dropped table still counts, as Lakekeeper's soft-deleted rows do. The warehouse's creation opens the series
# at zero.
WAREHOUSE_STATISTICS = """
WITH changes AS (
    SELECT time,
           CASE WHEN entity_type <> 'table' THEN 0
                WHEN type IN ('table.created', 'table.registered') THEN 1
                WHEN type = 'table.expired' OR (type = 'table.dropped' AND change->>'expires_at' IS NULL) THEN -1
                ELSE 0 END AS tables,
           CASE WHEN entity_type <> 'view' THEN 0
                WHEN type = 'view.created' THEN 1
                WHEN type = 'view.expired' OR (type = 'view.dropped' AND change->>'expires_at' IS NULL) THEN -1
                ELSE 0 END AS views
      FROM ll_history
     WHERE warehouse_id = %(warehouse)s
       AND type IN ('warehouse.created', 'table.created', 'table.registered', 'table.dropped', 'table.expired',
                    'view.created', 'view.dropped', 'view.expired')  -- ll_history_counted's predicate, word for word
), buckets AS (
    SELECT date_trunc('hour', time) + interval '1 hour' AS bucket, sum(tables) AS tables, sum(views) AS views,
           max(time) AS updated_at
      FROM changes GROUP BY 1
), series AS (
    SELECT bucket, sum(tables) OVER (ORDER BY bucket) AS tables, sum(views) OVER (ORDER BY bucket) AS views,
           updated_at
      FROM buckets
)
SELECT bucket, tables::bigint AS tables, views::bigint AS views, updated_at FROM series
 WHERE %(before)s::timestamptz IS NULL OR bucket < %(before)s
 ORDER BY bucket DESC LIMIT %(limit)s
"""

ENDPOINT_STATISTICS = """
SELECT s.bucket, s.http_route, s.status_code, s.count,
       NULLIF(s.warehouse_id, %(none)s) AS warehouse_id, w.name AS warehouse_name, s.created_at, s.updated_at
  FROM ll_endpoint_statistics s LEFT JOIN ll_warehouses w ON w.id = s.warehouse_id
 WHERE s.project_id = %(project)s
   AND (%(all)s OR s.warehouse_id = %(warehouse)s)
   AND (%(statuses)s::integer[] IS NULL OR s.status_code = ANY(%(statuses)s))
   AND s.bucket > date_trunc('hour', %(start)s::timestamptz) + interval '1 hour'
   AND s.bucket <= date_trunc('hour', %(end)s::timestamptz) + interval '1 hour'
 ORDER BY s.bucket DESC, s.http_route, s.status_code, s.warehouse_id
"""

# A batch of counts added in one statement. A call on a warehouse counts for the warehouse's project; one that names
# no existing warehouse (an unknown id in a path) counts as a call on none, so that made-up ids add no rows. Grouped
# again after that, as two rows of one statement may not update the same row.
_ADD = """
INSERT INTO ll_endpoint_statistics AS s
       (bucket, http_route, status_code, project_id, warehouse_id, count, created_at, updated_at)
SELECT bucket, http_route, status_code, project_id, warehouse_id, sum(count), min(first_at),
       CASE WHEN sum(count) > 1 THEN max(last_at) END
  FROM (SELECT b.bucket, b.http_route, b.status_code, COALESCE(w.project_id, b.project_id) AS project_id,
               COALESCE(w.id, %(none)s) AS warehouse_id, b.count, b.first_at, b.last_at
          FROM unnest(%(bucket)s::timestamptz[], %(route)s::text[], %(status)s::integer[], %(project)s::uuid[],
                      %(warehouse)s::uuid[], %(count)s::bigint[], %(first_at)s::timestamptz[],
                      %(last_at)s::timestamptz[])
               AS b(bucket, http_route, status_code, project_id, warehouse_id, count, first_at, last_at)
          LEFT JOIN ll_warehouses w ON w.id = b.warehouse_id) AS calls
 GROUP BY bucket, http_route, status_code, project_id, warehouse_id
ON CONFLICT (project_id, bucket, warehouse_id, http_route, status_code) DO UPDATE
   SET count = s.count + EXCLUDED.count,
       updated_at = GREATEST(s.updated_at, EXCLUDED.updated_at, EXCLUDED.created_at)
"""


@dataclass(frozen=True)
class WarehouseCounts:
    bucket: datetime  # the end of the hour
    tables: int
    views: int
    updated_at: datetime  # the last change of the hour


@dataclass(frozen=True)
class EndpointCount:
    bucket: datetime
    http_route: str
    status_code: int
    count: int
    warehouse_id: UUID | None
    warehouse_name: str | None
    created_at: datetime
    updated_at: datetime | None


@dataclass(frozen=True)
class CallCount:
    """What one API process counted since its last flush, for one key."""
    bucket: datetime
    http_route: str
    status_code: int
    project_id: UUID
    warehouse_id: UUID  # NO_WAREHOUSE: the call was on no warehouse
    count: int
    first_at: datetime
    last_at: datetime


class StatisticsQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def warehouse_counts(self, warehouse_id: UUID, before: datetime | None, limit: int) -> list[WarehouseCounts]:
        """Newest first, from the bucket before ``before``."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(WarehouseCounts))
            await cur.execute(WAREHOUSE_STATISTICS, {"warehouse": warehouse_id, "before": before, "limit": limit})
            return await cur.fetchall()

    async def endpoint_counts(self, project_id: UUID, warehouse: UUID | None, all_warehouses: bool,
                              statuses: list[int] | None, start: datetime, end: datetime) -> list[EndpointCount]:
        """The buckets that end after ``start``'s hour and at most at ``end``'s; ``warehouse`` NO_WAREHOUSE: the
        calls on no warehouse."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(EndpointCount))
            await cur.execute(ENDPOINT_STATISTICS, {
                "none": NO_WAREHOUSE, "project": project_id, "all": all_warehouses, "warehouse": warehouse,
                "statuses": statuses, "start": start, "end": end})
            return await cur.fetchall()

    async def add_calls(self, counts: Iterable[CallCount]) -> None:
        counts = list(counts)
        if not counts:
            return
        async with self.pool.connection() as conn:
            await conn.execute(_ADD, {
                "none": NO_WAREHOUSE, "bucket": [c.bucket for c in counts], "route": [c.http_route for c in counts],
                "status": [c.status_code for c in counts], "project": [c.project_id for c in counts],
                "warehouse": [c.warehouse_id for c in counts], "count": [c.count for c in counts],
                "first_at": [c.first_at for c in counts], "last_at": [c.last_at for c in counts]})
