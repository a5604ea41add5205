"""Protection flags (Lakekeeper's endpoints): a protected warehouse, namespace, table, view or generic table is not
dropped without ``force=true``."""

from datetime import datetime
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Depends, Path
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, StrictBool

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import ProtectionResponse, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_warehouse_settings, warehouse_row
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import NoSuchGenericTable, NoSuchNamespace, NoSuchTable, NoSuchView
from lakeledger.domain.provenance import Provenance

router = APIRouter(prefix="/management/v1", tags=["Management API"])

_MISSING = {"namespace": NoSuchNamespace, "table": NoSuchTable, "view": NoSuchView,
            "generic-table": NoSuchGenericTable}


class SetProtectionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    protected: StrictBool


_SET = {**ok(ProtectionResponse, "The protection now in force"), **errors(400, 404)}
_GET = {**ok(ProtectionResponse, "Whether it is protected"), **errors(400, 404)}


@router.post("/warehouse/{warehouse_id}/protection", responses=_SET)
async def set_warehouse_protection(container: ContainerDep, warehouse_id: str, body: SetProtectionRequest,
                                   by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorize_warehouse_settings(container, az, warehouse_id, "can_set_protection")
    row = await warehouse_row(container, warehouse_id)
    await run_in_threadpool(container.protection.set, warehouse_id, "warehouse", row.id, body.protected, by)
    row = await warehouse_row(container, warehouse_id)
    return _answer(row.protected, row.updated_at)


async def _authorize(az: Guard, kind: str, entity_id: UUID, action: str) -> None:
    await az.require(
        action,
        authorization.tabular(kind, entity_id) if kind != "namespace" else authorization.namespace(entity_id),
        _MISSING[kind](f"{kind.capitalize()} does not exist: {entity_id}"),
    )


async def _set(container: Container, warehouse_id: str, kind: str, entity_id: UUID, protected: bool, by: Provenance,
               az: Guard) -> JSONResponse:
    await warehouse_row(container, warehouse_id)
    await _authorize(az, kind, entity_id, "can_set_protection")
    await run_in_threadpool(container.protection.set, warehouse_id, kind, entity_id, protected, by)
    return await _get(container, warehouse_id, kind, entity_id, az)


async def _get(container: Container, warehouse_id: str, kind: str, entity_id: UUID, az: Guard) -> JSONResponse:
    row = await warehouse_row(container, warehouse_id)
    await _authorize(az, kind, entity_id, authorization.SEE)
    found = await container.queries.protection(row.id, kind, entity_id)
    if found is None:
        raise _MISSING[kind](f"{kind.capitalize()} does not exist: {entity_id}")
    return _answer(found.protected, found.updated_at)


def _answer(protected: bool, updated_at: datetime | None) -> JSONResponse:
    return JSONResponse({"protected": protected, "updated_at": updated_at.isoformat() if updated_at else None})


def _route(kind: str) -> None:
    """GET and POST ``.../{kind}/{<kind>_id}/protection`` of a namespace, table, view or generic table: the kind is all
    that differs, down to the name of the path parameter (generic_table_id for the generic-table)."""
    word = kind.replace("-", "_")
    entity = Path(alias=f"{word}_id")

    async def get_protection(container: ContainerDep, warehouse_id: str, entity_id: Annotated[UUID, entity],
                             az: Guard = Depends(guard)) -> JSONResponse:
        return await _get(container, warehouse_id, kind, entity_id, az)

    async def set_protection(container: ContainerDep, warehouse_id: str, entity_id: Annotated[UUID, entity],
                             body: SetProtectionRequest, by: Provenance = Depends(provenance),
                             az: Guard = Depends(guard)) -> JSONResponse:
        return await _set(container, warehouse_id, kind, entity_id, body.protected, by, az)

    path = f"/warehouse/{{warehouse_id}}/{kind}/{{{word}_id}}/protection"
    router.add_api_route(path, get_protection, methods=["GET"], name=f"get_{word}_protection", responses=_GET)
    router.add_api_route(path, set_protection, methods=["POST"], name=f"set_{word}_protection", responses=_SET)


for _kind in ("namespace", "table", "view", "generic-table"):
    _route(_kind)
