"""The audit history: every change to a warehouse, or to the server's projects and warehouses, as the event log
recorded it, with who made it, the entity's name at that moment and a sentence saying what changed."""

from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.dependencies import ContainerDep, uuid_param
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.openapi import HistoryPage, errors, ok
from lakeledger.api.pagination import Page, always_paged, fetch
from lakeledger.api.responses import JSONResponse
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest, NoSuchWarehouse
from lakeledger.domain.instants import parse_instant
from lakeledger.projections.history_queries import Filters, HistoryEvent, HistoryQueries

router = APIRouter(prefix="/management/v1", tags=["History"])

_PAGING = {"pageToken", "pageSize"}
_WAREHOUSE_FILTERS = {"namespace", "tabular-id", "actor", "type", "since", "until"}
_SERVER_FILTERS = {"actor", "type", "since", "until"}


@router.get("/warehouse/{warehouse_id}/history",
            responses={**ok(HistoryPage, "The warehouse's events, oldest first"), **errors(400, 404)})
async def warehouse_history(
        container: ContainerDep, request: Request, warehouse_id: str,
        namespace: str | None = Query(default=None, description="Levels joined by 0x1F: events of that namespace "
                                                                 "and of the tables and views in it"),
        tabular_id: str | None = Query(default=None, alias="tabular-id",
                                       description="A table's or view's id (its Iceberg uuid)"),
        actor: str | None = Query(default=None), type: str | None = Query(default=None),
        since: str | None = Query(default=None, description="RFC 3339; events at or after it"),
        until: str | None = Query(default=None, description="RFC 3339; events before it"),
        paging: Page = Depends(always_paged), az: Guard = Depends(guard)):
    _only(request, _WAREHOUSE_FILTERS)
    levels = parse_namespace(namespace) if namespace is not None else None
    tabular = uuid_param(tabular_id, "tabular-id") if tabular_id is not None else None
    start, end = _window(since, until)
    filters = Filters(namespace=levels, tabular_id=tabular, actor=actor, type=type, since=start, until=end)
    await _authorize(container, az, warehouse_id, filters)
    await run_in_threadpool(container.history_view.caught_up)
    queries = container.history_queries
    try:
        known = await queries.knows_warehouse(UUID(warehouse_id))
    except ValueError:
        known = False
    if not known:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
    return await _page(queries, UUID(warehouse_id), filters, paging)


@router.get("/history", responses={**ok(HistoryPage, "The server's events (bootstrap, projects, warehouses), "
                                                     "oldest first"), **errors(400)})
async def server_history(
        container: ContainerDep, request: Request, actor: str | None = Query(default=None),
        type: str | None = Query(default=None),
        since: str | None = Query(default=None, description="RFC 3339; events at or after it"),
        until: str | None = Query(default=None, description="RFC 3339; events before it"),
        paging: Page = Depends(always_paged), az: Guard = Depends(guard)):
    _only(request, _SERVER_FILTERS)
    await az.require_on_server("can_read_history")
    start, end = _window(since, until)
    filters = Filters(actor=actor, type=type, since=start, until=end)
    await run_in_threadpool(container.history_view.caught_up)
    return await _page(container.history_queries, None, filters, paging)


async def _authorize(container: Container, az: Guard, warehouse_id: str, filters: Filters) -> None:
    """can_read_history on the warehouse; or, for a history narrowed to a namespace or a table or view, on that.
    A warehouse the caller may not see is missing."""
    if az.off:
        return
    ident = authorization.as_uuid(warehouse_id)
    if ident is None:
        return
    warehouse = authorization.warehouse(ident)
    checks = [(authorization.SEE, warehouse), ("can_read_history", warehouse)]
    if filters.tabular_id is not None:
        checks += [("can_read_history", authorization.table(filters.tabular_id)),
                   ("can_read_history", authorization.view(filters.tabular_id))]
    if filters.namespace is not None:
        row = await container.queries.namespace(ident, filters.namespace)
        if row is not None:
            checks.append(("can_read_history", authorization.namespace(row.id)))
    answers = await az.allowed(checks)
    if any(answers[1:]):
        return
    if not answers[0]:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
    raise az.forbidden("can_read_history", warehouse)


async def _page(queries: HistoryQueries, warehouse_id: UUID | None, filters: Filters, paging: Page) -> JSONResponse:
    rows, next_token = await fetch(
        paging, lambda after, limit: queries.events(warehouse_id, filters, after, limit),
        valid_key=lambda key: isinstance(key, int) and not isinstance(key, bool) and key >= 0,
        key=lambda row: row.sequence)
    return JSONResponse({"events": [_entry(row) for row in rows], "next-page-token": next_token})


def _entry(row: HistoryEvent) -> dict[str, Any]:
    return {
        "id": str(row.event_id),
        "sequence": row.sequence,
        "time": row.time.isoformat(),
        "type": row.type,
        "actor": row.actor,
        "request-id": row.request_id,
        "warehouse-id": str(row.warehouse_id) if row.warehouse_id else None,
        "entity": {"type": row.entity_type, "id": str(row.entity_id), "name": row.entity_name},
        "summary": row.summary,
        # the stored JSON as is: a client's number may exceed what the encoder takes (64 bits)
        "change": orjson.Fragment(row.change),
    }


def _only(request: Request, filters: set[str]) -> None:
    unknown = sorted(set(request.query_params) - filters - _PAGING)
    if unknown:
        raise BadRequest(f"Unknown query parameter(s): {', '.join(unknown)}; "
                         f"this history filters by {', '.join(sorted(filters))}")


def _window(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    start = _instant(since, "since") if since is not None else None
    end = _instant(until, "until") if until is not None else None
    if start and end and start > end:
        raise BadRequest(f"since ({since}) is after until ({until})")
    return start, end


def _instant(value: str, name: str) -> datetime:
    try:
        return parse_instant(value)
    except ValueError:
        raise BadRequest(f"{name} must be an RFC 3339 date-time like 2026-11-01T00:00:00Z, not {value!r}") from None