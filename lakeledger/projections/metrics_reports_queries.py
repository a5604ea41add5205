"""Questions the metrics-reports read model (lakeledger/projections/metrics_reports.py) answers for the API: a table's
reports, newest first."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

COLUMNS = ("sequence, event_id, reported_at, actor, request_id, warehouse_id, table_id, kind, table_name, snapshot_id,"
           " sequence_number, operation, schema_id, filter, projected_field_names, metrics, metadata")
OF_TABLE = (f"SELECT {COLUMNS} FROM ll_metrics_reports WHERE table_id = %(table)s"
            " AND (%(kind)s::text IS NULL OR kind = %(kind)s) AND (%(before)s::bigint IS NULL OR sequence < %(before)s)"
            " ORDER BY sequence DESC LIMIT %(limit)s")


@dataclass(frozen=True)
class MetricsReportRow:
    """A report as the read model keeps it: where it stands in the log (``sequence``, ``event_id``, when and from
    whom), the figures taken out of it, and its ``metrics`` and ``metadata`` as sent."""
    sequence: int
    event_id: UUID
    reported_at: datetime
    actor: str
    request_id: str
    warehouse_id: UUID
    table_id: UUID
    kind: str
    table_name: str | None
    snapshot_id: int | None
    sequence_number: int | None
    operation: str | None
    schema_id: int | None
    filter: Any
    projected_field_names: list[str] | None
    metrics: dict[str, Any]
    metadata: dict[str, Any] | None


class MetricsReportsQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def of_table(self, table_id: UUID, kind: str | None, before: int | None,
                       limit: int | None) -> list[MetricsReportRow]:
        """The table's reports (of ``kind`` when given) older than the log position ``before``, newest first."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(MetricsReportRow))
            await cur.execute(OF_TABLE, {"table": table_id, "kind": kind, "before": before, "limit": limit})
            return await cur.fetchall()
