"""Protection flags (Lakekeeper's endpoints): a protected warehouse, namespace, table or view is not dropped
without ``force=true``."""

from uuid import UUID

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, StrictBool

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import container
from lakeledger.api.openapi import ProtectionResponse, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_warehouse, warehouse_row
from lakeledger.domain.errors import NoSuchNamespace, NoSuchTable, NoSuchView
from lakeledger.domain.provenance import Provenance
from lakeledger.projections.catalog_queries import NAMESPACE_PROTECTION, TABULAR_PROTECTION

router = APIRouter(prefix="/management/v1", tags=["Management API"])

_MISSING = {"namespace": NoSuchNamespace, "table": NoSuchTable, "view": NoSuchView}


class SetProtectionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    protected: StrictBool


_SET = {**ok(ProtectionResponse, "The protection now in force"), **errors(400, 404)}
_GET = {**ok(ProtectionResponse, "Whether it is protected"), **errors(400, 404)}


@router.post("/warehouse/{warehouse_id}/protection", responses=_SET)
async def set_warehouse_protection(warehouse_id: str, body: SetProtectionRequest, ll=Depends(container),
                                   by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorize_warehouse(az, warehouse_id, "can_set_protection")
    row = await warehouse_row(ll, warehouse_id)
    await run_in_threadpool(ll.protection.set, warehouse_id, "warehouse", row["id"], body.protected, by)
    row = await warehouse_row(ll, warehouse_id)
    return _answer(row["protected"], row["updated_at"])


async def _authorize(az: Guard, kind: str, entity_id: UUID, action: str) -> None:
    await az.require(
        action,
        authorization.tabular(kind, entity_id) if kind != "namespace" else authorization.namespace(entity_id),
        _MISSING[kind](f"{kind.capitalize()} does not exist: {entity_id}"),
    )


async def _set(ll, warehouse_id: str, kind: str, entity_id: UUID, protected: bool, by: Provenance,
               az: Guard) -> JSONResponse:
    await warehouse_row(ll, warehouse_id)
    await _authorize(az, kind, entity_id, "can_set_protection")
    await run_in_threadpool(ll.protection.set, warehouse_id, kind, entity_id, protected, by)
    return await _get(ll, warehouse_id, kind, entity_id, az)


async def _get(ll, warehouse_id: str, kind: str, entity_id: UUID, az: Guard) -> JSONResponse:
    row = await warehouse_row(ll, warehouse_id)
    await _authorize(az, kind, entity_id, authorization.SEE)
    if kind == "namespace":
        found = await ll.queries.one(NAMESPACE_PROTECTION, {"id": entity_id, "warehouse_id": row["id"]})
    else:
        found = await ll.queries.one(TABULAR_PROTECTION, {"id": entity_id, "typ": kind, "warehouse_id": row["id"]})
    if found is None:
        raise _MISSING[kind](f"{kind.capitalize()} does not exist: {entity_id}")
    return _answer(found["protected"], found["updated_at"])


def _answer(protected: bool, updated_at) -> JSONResponse:
    return JSONResponse({"protected": protected, "updated_at": updated_at.isoformat() if updated_at else None})


@router.get("/warehouse/{warehouse_id}/namespace/{namespace_id}/protection", responses=_GET)
async def get_namespace_protection(warehouse_id: str, namespace_id: UUID, ll=Depends(container),
                                   az: Guard = Depends(guard)):
    return await _get(ll, warehouse_id, "namespace", namespace_id, az)


@router.post("/warehouse/{warehouse_id}/namespace/{namespace_id}/protection", responses=_SET)
async def set_namespace_protection(warehouse_id: str, namespace_id: UUID, body: SetProtectionRequest,
                                   ll=Depends(container), by: Provenance = Depends(provenance),
                                   az: Guard = Depends(guard)):
    return await _set(ll, warehouse_id, "namespace", namespace_id, body.protected, by, az)


@router.get("/warehouse/{warehouse_id}/table/{table_id}/protection", responses=_GET)
async def get_table_protection(warehouse_id: str, table_id: UUID, ll=Depends(container),
                               az: Guard = Depends(guard)):
    return await _get(ll, warehouse_id, "table", table_id, az)


@router.post("/warehouse/{warehouse_id}/table/{table_id}/protection", responses=_SET)
async def set_table_protection(warehouse_id: str, table_id: UUID, body: SetProtectionRequest,
                               ll=Depends(container), by: Provenance = Depends(provenance),
                               az: Guard = Depends(guard)):
    return await _set(ll, warehouse_id, "table", table_id, body.protected, by, az)


@router.get("/warehouse/{warehouse_id}/view/{view_id}/protection", responses=_GET)
async def get_view_protection(warehouse_id: str, view_id: UUID, ll=Depends(container),
                              az: Guard = Depends(guard)):
    return await _get(ll, warehouse_id, "view", view_id, az)


@router.post("/warehouse/{warehouse_id}/view/{view_id}/protection", responses=_SET)
async def set_view_protection(warehouse_id: str, view_id: UUID, body: SetProtectionRequest,
                              ll=Depends(container), by: Provenance = Depends(provenance),
                              az: Guard = Depends(guard)):
    return await _set(ll, warehouse_id, "view", view_id, body.protected, by, az)
