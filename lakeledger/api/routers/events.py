"""Iceberg's Events API (``POST /v1/{prefix}/events``, apache/iceberg PR #12584): a warehouse's changes as the event
log recorded them, in the log's order, from the first event on, resumable from a continuation token.

The page is read from the history read model (why: lakeledger/projections/events_queries.py); our events become the
PR's operations in lakeledger/domain/event_operations.py; the token is lakeledger/domain/event_tokens.py. A page
walks at most ``SCAN_LIMIT`` events past what the filters and the caller's rights leave out; it may then be short
or empty, and its token resumes after the last event walked, so a selective filter never makes one request long."""

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization
from lakeledger.api.authorization import SEE, Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.models import QueryEventsRequest
from lakeledger.api.openapi import QueryEventsResponse, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.bootstrap import Container
from lakeledger.domain import event_operations, event_tokens
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.event_operations import StoredEvent
from lakeledger.projections.events_queries import EventFilters, EventQueries, EventRow

router = APIRouter(tags=["Catalog API"])

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000
SCAN_LIMIT = 10_000  # events walked per request at most, served or not
CUSTOM_FILTERS = ("actor",)


@router.post("/{prefix}/events", summary="Get events for changes to catalog objects",
             responses={**ok(QueryEventsResponse, "The warehouse's events after the token, in log order"),
                        **errors(400, 403, 404)})
async def get_events(prefix: str, body: QueryEventsRequest, container: ContainerDep,
                     az: Guard = Depends(guard)) -> JSONResponse:
    wh = await active_warehouse(container, prefix)
    await az.require(SEE, authorization.warehouse(wh.id), authorization.no_warehouse(prefix))
    # who may read the warehouse's history sees every event, those of objects dropped since included (a hard drop
    # forgets the object's tuples, so no per-object decision could show them); others, object by object
    everything = az.off or await az.may("can_read_history", authorization.warehouse(wh.id))
    filters = _filters(body)
    digest = event_tokens.filter_digest(body.model_dump(by_alias=True, mode="json", exclude_none=True,
                                                        exclude={"continuation_token", "page_size",
                                                                 "since_timestamp_ms"}))
    if body.continuation_token is not None:
        try:
            after = event_tokens.decode(body.continuation_token, wh.id, digest)
        except event_tokens.BadToken as e:
            raise BadRequest(str(e)) from None
    elif body.since_timestamp_ms is not None:
        after = await run_in_threadpool(_position_before, container, body.since_timestamp_ms)
    else:
        after = 0
    await run_in_threadpool(container.history_view.caught_up)
    size = min(body.page_size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)
    served, after = await _page(container.event_queries, None if everything else az, wh.id, wh.name_matching,
                                filters, body, after, size)
    return JSONResponse({"continuation-token": event_tokens.encode(wh.id, after, digest),
                         "events": [_event(row, operation) for row, operation in served]})


def _filters(body: QueryEventsRequest) -> EventFilters:
    custom = body.custom_filters or {}
    unknown = sorted(set(custom) - set(CUSTOM_FILTERS))
    if unknown:
        raise BadRequest(f"Unknown custom-filters: {', '.join(unknown)}; this server knows {', '.join(CUSTOM_FILTERS)}")
    types = None
    if body.operation_types is not None:
        types = event_operations.history_types_of(body.operation_types)
    return EventFilters(types=types, entity_ids=body.catalog_objects_by_uuid,
                        entity_types=list(body.object_types) if body.object_types is not None else None,
                        actor=custom.get("actor"))


def _position_before(container: Container, since_ms: int) -> int:
    """The position of the last event appended before the instant: the walk starts at the first one at or after it."""
    return container.time_travel.position_at(datetime.fromtimestamp(since_ms / 1000, UTC) - timedelta(microseconds=1))


async def _page(queries: EventQueries, az: Guard | None, warehouse_id: UUID, matching: str, filters: EventFilters,
                body: QueryEventsRequest, after: int, size: int) -> tuple[list[tuple[EventRow, dict]], int]:
    """Up to ``size`` events after ``after`` that pass every filter and the caller may see, and the position
    the next page starts after. ``az`` None: every event may be seen."""
    served: list[tuple[EventRow, dict]] = []
    walked = 0
    while walked < SCAN_LIMIT:
        want = size - len(served) + 1  # one more, to know whether a full page ends the log
        batch = await queries.events(warehouse_id, filters, after, max(want, 50))
        walked += len(batch)
        kept = await _visible(az, warehouse_id, _kept(batch, body, matching))
        for row, operation in kept:
            if len(served) == size:
                return served, served[-1][0].sequence
            served.append((row, operation))
        if len(served) == size:  # every event of the batch was walked
            return served, batch[-1].sequence
        if len(batch) < max(want, 50):  # the end of the log
            return served, batch[-1].sequence if batch else after
        after = batch[-1].sequence
    return served, after


def _kept(batch: list[EventRow], body: QueryEventsRequest, matching: str) -> list[tuple[EventRow, dict]]:
    kept = []
    for row in batch:
        stored = StoredEvent(row.type, row.entity_type, row.entity_id, row.entity_name, _change(row.change))
        if body.catalog_objects_by_name is not None and not event_operations.matches_name(
                stored, body.catalog_objects_by_name, matching):
            continue
        operation = event_operations.operation(stored)
        if body.operation_types is not None and operation["operation-type"] not in body.operation_types:
            continue
        kept.append((row, operation))
    return kept


def _change(text: str) -> dict[str, Any]:
    try:
        loaded = orjson.loads(text)
    except orjson.JSONDecodeError:  # an integer beyond 64 bits
        loaded = json.loads(text)
    return loaded if isinstance(loaded, dict) else {}


_OBJECTS = {"namespace": authorization.namespace, "table": authorization.table, "view": authorization.view}


async def _visible(az: Guard | None, warehouse_id: UUID,
                   kept: list[tuple[EventRow, dict]]) -> list[tuple[EventRow, dict]]:
    """The events of objects the caller may see, as lists show them; an event of the warehouse itself (or of
    what has no object of its own) is seen with the warehouse."""
    if az is None or not kept:
        return kept
    objects = []
    for row, _ in kept:
        make = _OBJECTS.get(row.entity_type)
        if make is not None:
            objects.append(make(row.entity_id))
        elif row.entity_type == "generic-table":
            objects.append(authorization.tabular(row.entity_type, row.entity_id))
        else:
            objects.append(authorization.warehouse(warehouse_id))
    answers = await az.visible(objects)
    return [pair for pair, yes in zip(kept, answers, strict=True) if yes]


def _event(row: EventRow, operation: dict[str, Any]) -> dict[str, Any]:
    return {
        "event-id": str(row.event_id),
        "request-id": row.request_id,
        "request-event-count": row.request_event_count,
        "timestamp-ms": int(row.time.timestamp() * 1000),
        "actor": {"id": row.actor},
        "operation": operation,
    }
