"""A table's metrics reports (docs/metrics-reports.md): who scanned or committed what and how much, newest first, from
the metrics-reports read model (lakeledger/projections/metrics_reports.py). Whoever may read the table's metadata may
read them."""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Query
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import errors, ok
from lakeledger.api.pagination import Page, always_paged, fetch
from lakeledger.api.responses import JSONResponse
from lakeledger.domain.errors import NoSuchTable
from lakeledger.domain.metrics_report import figures
from lakeledger.projections.metrics_reports_queries import MetricsReportRow

router = APIRouter(prefix="/management/v1", tags=["Metrics reports"])


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ReportFigures(_Model):
    files: int | None = Field(description="A scan's planned data and delete files; a commit's added ones")
    bytes: int | None = Field(description="Their size in bytes")
    records: int | None = Field(description="A commit's added records (a scan report has none)")
    duration_ms: float | None = Field(alias="duration-ms",
                                      description="A scan's planning time; a commit's whole duration")


class MetricsReportModel(_Model):
    sequence: int = Field(description="The report's event's log position (the page key)")
    event_id: UUID = Field(alias="event-id")
    reported_at: datetime = Field(alias="reported-at")
    actor: str
    request_id: str = Field(alias="request-id")
    report_type: Literal["scan-report", "commit-report"] = Field(alias="report-type")
    table_name: str | None = Field(alias="table-name", description="The name the engine gave")
    snapshot_id: int | None = Field(alias="snapshot-id")
    sequence_number: int | None = Field(default=None, alias="sequence-number")
    operation: str | None = None
    schema_id: int | None = Field(default=None, alias="schema-id")
    filter: Any = None
    projected_field_names: list[str] | None = Field(default=None, alias="projected-field-names")
    figures: ReportFigures
    metrics: dict[str, Any] = Field(description="The report's metrics as sent (CounterResult, TimerResult)")
    metadata: dict[str, Any] | None = None


class ListMetricsReportsResponse(_Model):
    reports: list[MetricsReportModel]
    next_page_token: str | None = Field(alias="next-page-token")


def report_json(row: MetricsReportRow) -> dict[str, Any]:
    return {"sequence": row.sequence, "event-id": str(row.event_id), "reported-at": row.reported_at.isoformat(),
            "actor": row.actor, "request-id": row.request_id, "report-type": row.kind, "table-name": row.table_name,
            "snapshot-id": row.snapshot_id, "sequence-number": row.sequence_number, "operation": row.operation,
            "schema-id": row.schema_id, "filter": row.filter, "projected-field-names": row.projected_field_names,
            "figures": figures(row.kind, row.metrics), "metrics": row.metrics, "metadata": row.metadata}


def _is_position(key: Any) -> bool:
    return isinstance(key, int) and not isinstance(key, bool)


@router.get("/warehouse/{warehouse_id}/table/{table_id}/metrics-reports",
            responses={**ok(ListMetricsReportsResponse, "The table's scan and commit reports, newest first"),
                       **errors(400, 404)})
async def list_metrics_reports(container: ContainerDep, warehouse_id: UUID, table_id: UUID,
                               report_type: Literal["scan-report", "commit-report"] | None = Query(
                                   default=None, alias="reportType", description="Only reports of this type"),
                               paging: Page = Depends(always_paged), az: Guard = Depends(guard)):
    missing = NoSuchTable(f"Table does not exist in warehouse {warehouse_id}: {table_id}")
    await az.require(authorization.SEE, authorization.table(table_id), missing)
    if (await container.queries.warehouse_of("table", table_id) != warehouse_id
            or not await container.queries.exists("table", table_id)):
        raise missing
    await run_in_threadpool(container.metrics_reports.caught_up)
    rows, token = await fetch(
        paging, lambda after, limit: container.metrics_report_queries.of_table(table_id, report_type, after, limit),
        _is_position, lambda row: row.sequence)
    return JSONResponse({"reports": [report_json(r) for r in rows], "next-page-token": token})
