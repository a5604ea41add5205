"""The recycle bin of a warehouse with a soft delete profile: soft-deleted tables and views, and undrop."""

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, fetch_visible, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep, uuid_param
from lakeledger.api.openapi import ListDeletedTabularsResponse, errors, ok
from lakeledger.api.pagination import Page, always_paged, is_time_and_id
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_warehouse, warehouse_row
from lakeledger.domain.errors import NoSuchGenericTable, NoSuchNamespace, NoSuchTable, NoSuchView
from lakeledger.domain.provenance import Provenance
from lakeledger.projections.catalog_queries import DeletedTabular
from lakeledger.services.recycle_bin import UndropTarget

router = APIRouter(prefix="/management/v1", tags=["Management API"])


class Target(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["table", "view", "generic-table", "namespace"]
    id: UUID


class UndropRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    targets: list[Target]


@router.get("/warehouse/{warehouse_id}/deleted-tabulars",
            responses={**ok(ListDeletedTabularsResponse, "Soft-deleted tables and views, in the order they were "
                                                         "dropped"), **errors(400, 404)})
async def list_deleted_tabulars(container: ContainerDep, warehouse_id: str,
                                namespaceId: str | None = Query(default=None), paging: Page = Depends(always_paged),
                                az: Guard = Depends(guard)):
    await authorize_warehouse(az, warehouse_id, "can_list_deleted_tabulars")
    row = await warehouse_row(container, warehouse_id)
    namespace_id = uuid_param(namespaceId, "namespaceId") if namespaceId is not None else None

    async def rows(after: Any, limit: int | None) -> list[DeletedTabular]:
        return await container.queries.deleted_tabulars(
            row.id, namespace_id, (datetime.fromisoformat(after[0]), after[1]) if after else None, limit)

    async def objects(found: Sequence[DeletedTabular]) -> list[str | None]:
        return [authorization.tabular(r.typ, r.id) for r in found]

    found, next_token = await fetch_visible(az, paging, rows, is_time_and_id,
                                            lambda r: [r.dropped_at.isoformat(), str(r.id)], objects,
                                            "can_include_in_list")
    return JSONResponse({"tabulars": [_entry(r) for r in found], "next-page-token": next_token})


@router.post("/warehouse/{warehouse_id}/deleted-tabulars/undrop", status_code=204,
             responses=errors(400, 404, 409))
async def undrop(container: ContainerDep, warehouse_id: str, body: UndropRequest, by: Provenance = Depends(provenance),
                 az: Guard = Depends(guard)):
    targets = [UndropTarget(t.type, t.id) for t in body.targets]
    if not az.off:
        await warehouse_row(container, warehouse_id)
        for t in body.targets:
            # a namespace has no undrop of its own: bringing it back is a change to it, as dropping it was
            action = "can_delete" if t.type == "namespace" else "can_undrop"
            missing = _MISSING[t.type](f"{t.type.capitalize()} does not exist: {t.id}")
            await az.require(
                action,
                authorization.tabular(t.type, t.id) if t.type != "namespace" else authorization.namespace(t.id),
                missing,
            )
    await run_in_threadpool(container.recycle_bin.undrop, warehouse_id, targets, by)
    return Response(status_code=204)


_MISSING = {"namespace": NoSuchNamespace, "table": NoSuchTable, "view": NoSuchView,
            "generic-table": NoSuchGenericTable}


def _entry(row: DeletedTabular) -> dict[str, Any]:
    return {"id": str(row.id), "name": row.name, "namespace": list(row.namespace),
            "namespace-id": str(row.namespace_id), "typ": row.typ, "warehouse-id": str(row.warehouse_id),
            "created-at": row.created_at.isoformat(), "deleted-at": row.dropped_at.isoformat(),
            "expiration-date": row.expires_at.isoformat(),
            "dropped-with": str(row.dropped_with) if row.dropped_with else None}


