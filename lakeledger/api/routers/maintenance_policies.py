"""Maintenance policies on warehouses, namespaces and tables (lakeledger/domain/maintenance_policy.py), under
Lakekeeper-style paths: ``…/maintenance-policies`` lists what the object sets itself, ``…/maintenance-policies/{type}``
sets (PUT, the type's settings whole) or removes (DELETE) it, and ``…/effective-maintenance-policies`` answers what
holds for the object, each setting with the object it comes from (or the defaults).

Setting and removing take ``can_set_maintenance_policy`` (the ``manage_maintenance`` right); reading takes what seeing
the object takes. An object the caller may not see, or that is not there (a dropped table), answers 404."""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Body, Depends, Path, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_warehouse, warehouse_row
from lakeledger.authz.objects import obj
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import CatalogError, NoSuchNamespace, NoSuchTable, NoSuchWarehouse
from lakeledger.domain.maintenance_policy import (
    NAMESPACE,
    TABLE,
    WAREHOUSE,
    DataCompaction,
    Level,
    MetadataCompaction,
    OrphanFileRemoval,
    SnapshotExpiry,
    effective,
)
from lakeledger.domain.provenance import Provenance
from lakeledger.projections.maintenance_policies_queries import PolicyRow

router = APIRouter(prefix="/management/v1", tags=["Maintenance policies"])

PolicyType = Literal["system.data-compaction", "system.metadata-compaction", "system.snapshot-expiry",
                     "system.orphan-file-removal"]
READ, SET = "can_read_maintenance_policy", "can_set_maintenance_policy"
_MISSING = {WAREHOUSE: NoSuchWarehouse, NAMESPACE: NoSuchNamespace, TABLE: NoSuchTable}


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class MaintenancePolicyModel(_Model):
    policy_type: PolicyType = Field(alias="policy-type")
    settings: dict[str, Any] = Field(description="Only what this object sets; the rest is inherited")
    set_at: datetime = Field(alias="set-at")
    set_by: str = Field(alias="set-by")
    request_id: str = Field(alias="request-id")


class ListMaintenancePoliciesResponse(_Model):
    policies: list[MaintenancePolicyModel]


class SettingSource(_Model):
    type: Literal["warehouse", "namespace", "table", "default"]
    id: UUID | None = Field(default=None, description="The object that sets it; absent for a default")
    name: list[str] | None = Field(default=None, description="Its name: a namespace's path, a table's namespace "
                                                             "and name, the warehouse's name")


class EffectiveSetting(_Model):
    value: Any
    source: SettingSource


class EffectivePolicy(_Model):
    policy_type: PolicyType = Field(alias="policy-type")
    settings: dict[str, EffectiveSetting]


class EffectiveMaintenancePoliciesResponse(_Model):
    target: dict[str, Any]
    policies: list[EffectivePolicy]


def _policy_json(row: PolicyRow) -> dict[str, Any]:
    return {"policy-type": row.policy_type, "settings": row.parameters, "set-at": row.set_at.isoformat(),
            "set-by": row.set_by, "request-id": row.request_id}


def effective_json(levels: list[Level]) -> list[dict[str, Any]]:
    return [{"policy-type": policy_type,
             "settings": {name: {"value": s.value, "source": s.source.json()} for name, s in settings.items()}}
            for policy_type, settings in effective(levels).items()]


async def _authorized(container: Container, az: Guard, kind: str, warehouse_id: UUID, target_id: UUID,
                      action: str) -> None:
    """``action`` on the object; one the caller may not see is missing."""
    if kind == WAREHOUSE:
        await authorize_warehouse(az, str(warehouse_id), action)
        await warehouse_row(container, str(warehouse_id))
        return
    await az.require(action, obj(kind, target_id), _missing(kind, warehouse_id, target_id))


def _missing(kind: str, warehouse_id: UUID, target_id: UUID) -> CatalogError:
    return _MISSING[kind](f"{kind.capitalize()} does not exist in warehouse {warehouse_id}: {target_id}")


async def _levels(container: Container, kind: str, warehouse_id: UUID, target_id: UUID) -> list[Level]:
    levels = await container.maintenance_policy_queries.levels(kind, target_id, warehouse_id)
    if not levels:
        raise _missing(kind, warehouse_id, target_id)
    return levels


# The body of a PUT: one type's settings. Which type is the path's, so the body is taken as a JSON object and checked
# against that type's model alone (lakeledger/domain/maintenance_policy.py), whose first errors name the setting; the
# document shows the four shapes.
def _documented(schema: Any) -> Any:
    """A model's JSON schema without pydantic's ``ge``/``le`` on durations, which JSON Schema has no word for (the
    descriptions and docs/maintenance-policies.md give the bounds)."""
    if isinstance(schema, dict):
        return {k: _documented(v) for k, v in schema.items() if k not in ("ge", "le")}
    if isinstance(schema, list):
        return [_documented(v) for v in schema]
    return schema


_BODY_SCHEMA = {"anyOf": [{**_documented(model.model_json_schema(by_alias=True)), "title": name}
                          for name, model in (("DataCompaction", DataCompaction),
                                              ("MetadataCompaction", MetadataCompaction),
                                              ("SnapshotExpiry", SnapshotExpiry),
                                              ("OrphanFileRemoval", OrphanFileRemoval))]}

_TARGET_ID: dict[str, Any] = {name: Path(alias=name) for name in ("warehouse_id", "namespace_id", "table_id")}


def _register(kind: str, path: str) -> None:
    id_param = f"{kind}_id"

    async def list_policies(container: ContainerDep, warehouse_id: UUID, target_id: UUID = _TARGET_ID[id_param],
                            az: Guard = Depends(guard)):
        await _authorized(container, az, kind, warehouse_id, target_id, READ)
        await _levels(container, kind, warehouse_id, target_id)
        rows = await container.maintenance_policy_queries.own(kind, target_id)
        return JSONResponse({"policies": [_policy_json(r) for r in rows]})

    async def effective_policies(container: ContainerDep, warehouse_id: UUID,
                                 target_id: UUID = _TARGET_ID[id_param], az: Guard = Depends(guard)):
        await _authorized(container, az, kind, warehouse_id, target_id, READ)
        levels = await _levels(container, kind, warehouse_id, target_id)
        return JSONResponse({"target": {"type": kind, "id": str(target_id), "warehouse-id": str(warehouse_id)},
                             "policies": effective_json(levels)})

    async def set_policy(container: ContainerDep, warehouse_id: UUID, policy_type: PolicyType,
                         body: dict[str, Any] = Body(), target_id: UUID = _TARGET_ID[id_param],
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
        await _authorized(container, az, kind, warehouse_id, target_id, SET)
        await run_in_threadpool(container.maintenance_policies.set, warehouse_id, kind, target_id, policy_type,
                                body, by)
        [row] = [r for r in await container.maintenance_policy_queries.own(kind, target_id)
                 if r.policy_type == policy_type]
        return JSONResponse(_policy_json(row))

    async def remove_policy(container: ContainerDep, warehouse_id: UUID, policy_type: PolicyType,
                            target_id: UUID = _TARGET_ID[id_param], by: Provenance = Depends(provenance),
                            az: Guard = Depends(guard)):
        await _authorized(container, az, kind, warehouse_id, target_id, SET)
        await _levels(container, kind, warehouse_id, target_id)
        await run_in_threadpool(container.maintenance_policies.remove, warehouse_id, kind, target_id, policy_type,
                                by)
        return Response(status_code=204)

    router.add_api_route(f"{path}/maintenance-policies", list_policies, methods=["GET"],
                         name=f"list_{kind}_maintenance_policies",
                         responses={**ok(ListMaintenancePoliciesResponse, f"What the {kind} sets itself"),
                                    **errors(400, 403, 404)})
    router.add_api_route(f"{path}/effective-maintenance-policies", effective_policies, methods=["GET"],
                         name=f"get_{kind}_effective_maintenance_policies",
                         responses={**ok(EffectiveMaintenancePoliciesResponse,
                                         f"What holds for the {kind}, each setting with where it comes from"),
                                    **errors(400, 403, 404)})
    router.add_api_route(f"{path}/maintenance-policies/{{policy_type}}", set_policy, methods=["PUT"],
                         name=f"set_{kind}_maintenance_policy",
                         openapi_extra={"requestBody": {"required": True, "content": {
                             "application/json": {"schema": _BODY_SCHEMA}}}},
                         description="Replaces the settings of this type the object sets itself (what it leaves "
                                     "out, it inherits). Durations are ISO-8601 (`P7D`, `PT6H`).",
                         responses={**ok(MaintenancePolicyModel, f"The {kind}'s settings of the type, as recorded"),
                                    **errors(400, 403, 404)})
    router.add_api_route(f"{path}/maintenance-policies/{{policy_type}}", remove_policy, methods=["DELETE"],
                         status_code=204, response_class=Response, name=f"remove_{kind}_maintenance_policy",
                         description="The object inherits every setting of the type again; removing what is not "
                                     "set records nothing.",
                         responses=errors(400, 403, 404))


for _kind, _path in ((WAREHOUSE, "/warehouse/{warehouse_id}"),
                     (NAMESPACE, "/warehouse/{warehouse_id}/namespace/{namespace_id}"),
                     (TABLE, "/warehouse/{warehouse_id}/table/{table_id}")):
    _register(_kind, _path)
