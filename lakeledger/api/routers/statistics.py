"""Lakekeeper's statistics: a warehouse's tables and views per hour, and the calls per endpoint and status per hour
(lakeledger/projections/statistics_queries.py)."""

from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal
from uuid import UUID

import isodate
from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api import authorization, pagination
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import errors, ok
from lakeledger.api.pagination import Page
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_project, authorize_warehouse, warehouse_row
from lakeledger.api.routers.projects import project_id_of
from lakeledger.domain.errors import BadRequest
from lakeledger.projections.statistics_queries import NO_WAREHOUSE

router = APIRouter(prefix="/management/v1", tags=["Statistics"])

DEFAULT_WINDOW = timedelta(days=1)  # Lakekeeper's: the last day
MAX_WINDOW = timedelta(days=366)


class _Shape(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class WarehouseStatistics(_Shape):
    timestamp: datetime = Field(description="The end of the hour these counts hold at")
    number_of_tables: int = Field(alias="number-of-tables")
    number_of_views: int = Field(alias="number-of-views")
    updated_at: datetime = Field(alias="updated-at", description="The last change of that hour")


class WarehouseStatisticsResponse(_Shape):
    warehouse_ident: UUID = Field(alias="warehouse-ident")
    stats: list[WarehouseStatistics] = Field(description="Newest first")
    next_page_token: str | None = Field(default=None, alias="next-page-token")


async def _page(request: Request, container: ContainerDep, page_token: str | None = Query(default=None),
                page_size: str | None = Query(default=None)) -> Page:
    """Lakekeeper's snake_case paging parameters, always paged."""
    return await pagination.page(request, container, page_token or "", page_size)


@router.get("/warehouse/{warehouse_id}/statistics",
            responses={**ok(WarehouseStatisticsResponse, "The warehouse's tables and views at the end of each hour "
                                                         "in which they changed, newest first"),
                       **errors(400, 403, 404)})
async def warehouse_statistics(container: ContainerDep, warehouse_id: str, page: Page = Depends(_page),
                               az: Guard = Depends(guard)):
    """As Lakekeeper counts: a table or view counts from its creation until it is gone for good (a soft-dropped
    one still counts until it expires); an hour without a change has no entry."""
    await authorize_warehouse(az, warehouse_id, "can_get_metadata")
    warehouse = await warehouse_row(container, warehouse_id)
    await run_in_threadpool(container.history_view.caught_up)  # counted from the history read model
    before = None
    if page.after is not None:
        try:
            before = datetime.fromisoformat(page.after)
        except (TypeError, ValueError):
            raise BadRequest(pagination.ANOTHER_LIST) from None
    size = page.size or container.settings.default_page_size
    rows = await container.statistics_queries.warehouse_counts(warehouse.id, before, size + 1)
    served = rows[:size]
    return JSONResponse({
        "warehouse-ident": str(warehouse.id),
        "stats": [{"timestamp": r.bucket.isoformat(), "number-of-tables": r.tables, "number-of-views": r.views,
                   "updated-at": r.updated_at.isoformat()} for r in served],
        "next-page-token": page.token(served[-1].bucket.isoformat()) if len(rows) > size else None,
    })


class WarehouseFilter(_Shape):
    type: Literal["warehouse-id", "unmapped", "all"]
    id: UUID | None = None


class TimeWindow(_Shape):
    type: Literal["window", "page-token"]
    end: datetime | None = None
    interval: str | None = Field(default=None, description="ISO 8601 duration, e.g. `P1D`")
    token: str | None = None


class EndpointStatisticsRequest(_Shape):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    warehouse: WarehouseFilter
    status_codes: list[Annotated[int, Field(ge=0, le=999)]] | None = Field(default=None, alias="status-codes")
    range_specifier: TimeWindow | None = Field(default=None, alias="range-specifier")


class EndpointStatistic(_Shape):
    count: int
    http_route: str = Field(alias="http-route", description="`METHOD /route/{template}`")
    status_code: int = Field(alias="status-code")
    warehouse_id: UUID | None = Field(alias="warehouse-id")
    warehouse_name: str | None = Field(alias="warehouse-name")
    created_at: datetime = Field(alias="created-at")
    updated_at: datetime | None = Field(alias="updated-at")


class EndpointStatisticsResponse(_Shape):
    timestamps: list[datetime]
    called_endpoints: list[list[EndpointStatistic]] = Field(alias="called-endpoints")
    previous_page_token: str = Field(alias="previous-page-token")
    next_page_token: str = Field(alias="next-page-token")


def _duration(text: str) -> timedelta:
    try:
        value = isodate.parse_duration(text)
    except (isodate.ISO8601Error, ValueError):
        raise BadRequest(f"interval must be an ISO 8601 duration such as P1D or PT1H, not {text!r}") from None
    if not isinstance(value, timedelta):  # years and months have no fixed length
        raise BadRequest(f"interval must be in weeks, days, hours, minutes or seconds, not {text!r}")
    if not timedelta(0) < value <= MAX_WINDOW:
        raise BadRequest(f"interval must be positive and at most {MAX_WINDOW.days} days, not {text!r}")
    return value


def _window_token(end: datetime, interval: timedelta) -> str:
    return f"{end.isoformat()}|{isodate.duration_isoformat(interval)}"


def _window(selector: TimeWindow | None) -> tuple[datetime, timedelta]:
    """The window's end and length: by default the last day; a page token is one a previous answer gave."""
    if selector is None:
        return datetime.now(UTC), DEFAULT_WINDOW
    if selector.type == "window":
        if selector.end is None or selector.interval is None:
            raise BadRequest("A range-specifier of type window needs end and interval")
        end = selector.end if selector.end.tzinfo else selector.end.replace(tzinfo=UTC)
        return end, _duration(selector.interval)
    if not selector.token:
        raise BadRequest("A range-specifier of type page-token needs token")
    end_text, _, interval_text = selector.token.partition("|")
    try:
        end = datetime.fromisoformat(end_text)
    except ValueError:
        raise BadRequest("Invalid page token: not one this server issued") from None
    if end.tzinfo is None or not interval_text:
        raise BadRequest("Invalid page token: not one this server issued")
    return end, _duration(interval_text)


@router.post("/endpoint-statistics",
             responses={**ok(EndpointStatisticsResponse, "Calls per endpoint, status and warehouse in each hour of "
                                                         "the window that had any, newest first"),
                        **errors(400, 403, 404)})
async def endpoint_statistics(container: ContainerDep, request: Request, body: EndpointStatisticsRequest,
                              x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    """Lakekeeper's endpoint statistics of the project of `x-project-id`: each API process counts its calls in
    memory and adds them to the table every `LAKELEDGER__ENDPOINT_STATISTICS_FLUSH_SECONDS`; this process's own
    are added before it answers. Paged by time: `previous-page-token` is the window before, `next-page-token`
    the window after."""
    project_id = project_id_of(x_project_id, container)
    filter_ = body.warehouse
    warehouse: UUID | None = None
    if filter_.type == "warehouse-id":
        if filter_.id is None:
            raise BadRequest("A warehouse filter of type warehouse-id needs id")
        await authorize_warehouse(az, str(filter_.id), "can_get_metadata")
        row = await warehouse_row(container, str(filter_.id))
        if row.project_id != project_id:
            raise BadRequest(f"Warehouse {filter_.id} is not of project {project_id}")
        warehouse = row.id
    else:
        await authorize_project(az, project_id, authorization.SEE)
        warehouse = NO_WAREHOUSE if filter_.type == "unmapped" else None
    end, interval = _window(body.range_specifier)
    # this process's counts first; if they cannot be written, those added before are still worth answering
    await request.app.state.flush_endpoint_calls()
    rows = await container.statistics_queries.endpoint_counts(project_id, warehouse, filter_.type == "all",
                                                              body.status_codes, end - interval, end)
    timestamps: list[datetime] = []
    called: list[list[dict]] = []
    for r in rows:
        if not timestamps or timestamps[-1] != r.bucket:
            timestamps.append(r.bucket)
            called.append([])
        called[-1].append({
            "count": r.count, "http-route": r.http_route, "status-code": r.status_code,
            "warehouse-id": str(r.warehouse_id) if r.warehouse_id else None, "warehouse-name": r.warehouse_name,
            "created-at": r.created_at.isoformat(), "updated-at": r.updated_at.isoformat() if r.updated_at else None})
    return JSONResponse({
        "timestamps": [t.isoformat() for t in timestamps],
        "called-endpoints": called,
        "previous-page-token": _window_token(end - interval, interval),
        "next-page-token": _window_token(end + interval, interval),
    })
