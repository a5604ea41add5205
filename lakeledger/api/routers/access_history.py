"""Access history: who held which right on a table, view or namespace of a warehouse at an instant, and through
which grant or role (lakeledger/services/access_history.py), from the log, never from OpenFGA's current state."""

from datetime import datetime
from uuid import UUID

from fastapi import APIRouter, Query, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import warehouse_row
from lakeledger.api.routers.permissions import require
from lakeledger.api.time_travel import parse_instant
from lakeledger.authz.objects import obj
from lakeledger.domain.errors import BadRequest

router = APIRouter(prefix="/management/v1", tags=["Permissions"])


class ObjectRef(BaseModel):
    type: str
    id: str


class Through(BaseModel):
    relation: str
    on: ObjectRef
    source: str
    granted_by: str = Field(alias="granted-by")
    granted_at: datetime = Field(alias="granted-at")
    sequence: int
    roles: list[str]


class Holder(BaseModel):
    user: str
    rights: list[str]
    through: list[Through]


class AccessHistoryResponse(BaseModel):
    object: ObjectRef
    at: str | None
    position: int
    chain: list[ObjectRef]
    holders: list[Holder]


@router.get("/warehouse/{warehouse_id}/access-history",
            responses={**ok(AccessHistoryResponse, "Who held which right on the object at the instant, and through "
                                                   "what"), **errors(400, 403, 404)})
async def access_history_of(container: ContainerDep, request: Request, warehouse_id: str,
                            table: str | None = Query(default=None), view: str | None = Query(default=None),
                            namespace: str | None = Query(default=None),
                            at: str | None = Query(default=None, description="RFC 3339 instant; absent: now")):
    """Every user who held a right on the object (``table``, ``view`` or ``namespace``: its id; none: the
    warehouse itself) at ``at``, with the rights and each grant they came through (on the object or an
    ancestor, directly or by role)."""
    await warehouse_row(container, warehouse_id)
    named = [(k, v) for k, v in (("table", table), ("view", view), ("namespace", namespace)) if v is not None]
    if len(named) > 1:
        raise BadRequest("Name one of table, view or namespace")
    kind, id_ = named[0] if named else ("warehouse", warehouse_id)
    try:
        object_ = obj(kind, UUID(id_))
    except ValueError:
        raise BadRequest(f"{kind} must be a UUID, not {id_!r}") from None
    instant = parse_instant(at) if at is not None else None
    await require(container, request, "can_read_assignments", object_)
    position, found = await run_in_threadpool(container.holder_history.holders_at, object_, instant)
    return JSONResponse({"object": {"type": kind, "id": str(UUID(id_))}, "at": at, "position": position, **found})
