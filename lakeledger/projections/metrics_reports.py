"""The metrics-reports read model: the scan and commit reports engines sent about each table
(lakeledger/domain/metrics_report.py), the newest ``per_table`` of each (``LAKELEDGER__METRICS_REPORTS_PER_TABLE``).

Run by the workers, never inside an append: a report's request pays for its event alone; the reports endpoint
catches it up before it answers. Every value comes from the event and its place in the log, and the bound drops the
oldest rows of a table as each report arrives, so a rebuild with the same bound writes the same rows. The figures a
person asks for first are taken out of the report into columns, whatever the report holds: a value of the wrong
type (the log may hold anything an older version or another writer recorded) is NULL there and kept in the report."""

from typing import Any

from eventsourcing.utils import get_topic
from psycopg import Cursor
from psycopg.types.json import Jsonb

from lakeledger.domain.metrics_report import MetricsReport
from lakeledger.eventstore.identity import event_id
from lakeledger.projections import appended

DEFAULT_PER_TABLE = 1000

_INT64 = range(-(2**63), 2**63)
_INT32 = range(-(2**31), 2**31)

INSERT = ("INSERT INTO ll_metrics_reports (sequence, event_id, reported_at, actor, request_id, warehouse_id, table_id,"
          " kind, table_name, snapshot_id, sequence_number, operation, schema_id, filter, projected_field_names,"
          " metrics, metadata) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)")
# the table's rows beyond the newest ``per_table``: one walk down its index from the newest
PRUNE = ("DELETE FROM ll_metrics_reports WHERE table_id = %(table)s AND sequence <= ("
         " SELECT sequence FROM ll_metrics_reports WHERE table_id = %(table)s ORDER BY sequence DESC"
         " OFFSET %(keep)s LIMIT 1)")


def _int(value: Any, bounds: range = _INT64) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value in bounds else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _json(value: Any) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def row_of(e: MetricsReport.Received, sequence: int, reported_at: Any) -> tuple:
    report = e.report if isinstance(e.report, dict) else {}
    names = report.get("projected-field-names")
    metrics = report.get("metrics")
    return (sequence, event_id(e.originator_id, e.originator_version), reported_at, e.actor, e.request_id,
            e.warehouse_id, e.table_id, e.kind, _text(report.get("table-name")), _int(report.get("snapshot-id")),
            _int(report.get("sequence-number")), _text(report.get("operation")),
            _int(report.get("schema-id"), _INT32), _json(report.get("filter")),
            [n for n in names if isinstance(n, str)] if isinstance(names, list) else None,
            Jsonb(metrics if isinstance(metrics, dict) else {}), _json(report.get("metadata")))


class MetricsReportsProjection:
    name = "metrics-reports"
    tables = ("ll_metrics_reports",)
    topics: tuple[str, ...] = (get_topic(MetricsReport.Received),)

    def __init__(self, per_table: int = DEFAULT_PER_TABLE):
        self.per_table = per_table

    def apply(self, event: Any, cur: Cursor) -> None:
        if not isinstance(event, MetricsReport.Received):
            return
        sequence, reported_at = appended.lookup(event, cur)
        cur.execute(INSERT, row_of(event, sequence, reported_at))
        cur.execute(PRUNE, {"table": event.table_id, "keep": self.per_table})
