"""Lakekeeper's dry runs of a warehouse's creation and of its storage changes
(lakeledger/services/storage_validation.py): 200 with each check's outcome whether or not the configuration would
work; nothing is recorded."""

from fastapi import APIRouter, Depends, Header
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api.authorization import Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.errors import for_catalog_error
from lakeledger.api.openapi import errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import (
    CreateWarehouseRequest,
    UpdateCredentialRequest,
    UpdateStorageRequest,
    authorize_project,
    authorize_warehouse,
    ensure_settings_mutable,
    may_manage_warehouses,
)
from lakeledger.api.routers.projects import project_id_of
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import CatalogError, NoSuchProject
from lakeledger.services.storage_validation import Report

router = APIRouter(prefix="/management/v1", tags=["Management API"])


class ValidationError(BaseModel):
    message: str
    type: str
    code: int


class ValidationCheck(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    name: str
    status: str = Field(description="passed, failed or skipped")
    duration_ms: int | None = Field(default=None, alias="duration-ms")
    error: ValidationError | None = None
    reason: str | None = None


class ValidateWarehouseResponse(BaseModel):
    valid: bool = Field(description="No check failed (skipped checks do not count)")
    checks: list[ValidationCheck]


_ANSWER = {**ok(ValidateWarehouseResponse, "The checks ran; `valid` and each check say how they went"),
           **errors(400, 403, 404)}


def _json(report: Report) -> JSONResponse:
    checks = []
    for c in report.checks:
        entry: dict = {"name": c.name, "status": c.status}
        if c.duration_ms is not None:
            entry["duration-ms"] = c.duration_ms
        if c.error is not None:
            code, type_ = for_catalog_error(c.error)
            entry["error"] = {"message": c.error.message, "type": type_, "code": code}
        if c.reason is not None:
            entry["reason"] = c.reason
        checks.append(entry)
    return JSONResponse({"valid": report.valid, "checks": checks})


@router.post("/warehouse-creation-validation", responses=_ANSWER)
async def validate_creation(container: ContainerDep, body: CreateWarehouseRequest,
                            x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    """The checks `POST /warehouse` makes, without creating the warehouse or keeping the credential."""
    project_id = body.project_id or project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_create_warehouse")
    if await container.queries.project(project_id) is None:
        raise NoSuchProject(f"Project does not exist: {project_id}")
    return _json(await run_in_threadpool(
        container.storage_validation.creation, project_id, body.warehouse_name, body.storage_profile,
        body.storage_credential, body.delete_profile, body.drop_purge_default, body.allowed_format_versions,
        body.default_format_version, body.managed_by, await may_manage_warehouses(az)))


@router.post("/warehouse/{warehouse_id}/storage/validate-profile", responses=_ANSWER)
async def validate_profile(container: ContainerDep, warehouse_id: str, body: UpdateStorageRequest,
                           az: Guard = Depends(guard)):
    """The checks `POST /warehouse/{id}/storage` makes, without changing the warehouse."""
    await authorize_warehouse(az, warehouse_id, "can_update_storage")
    return _json(await run_in_threadpool(container.storage_validation.new_profile, warehouse_id,
                                         body.storage_profile, body.storage_credential,
                                         await _locked(container, az, warehouse_id)))


@router.post("/warehouse/{warehouse_id}/storage/validate-credential", responses=_ANSWER)
async def validate_credential(container: ContainerDep, warehouse_id: str, body: UpdateCredentialRequest,
                              az: Guard = Depends(guard)):
    """The checks `POST /warehouse/{id}/storage-credential` makes: the stored profile with this credential."""
    await authorize_warehouse(az, warehouse_id, "can_update_storage")
    return _json(await run_in_threadpool(container.storage_validation.new_credential, warehouse_id,
                                         body.new_storage_credential, await _locked(container, az, warehouse_id)))


@router.post("/warehouse/{warehouse_id}/storage/validate-access", responses=_ANSWER)
async def validate_access(container: ContainerDep, warehouse_id: str, az: Guard = Depends(guard)):
    """Whether the warehouse's storage still works with its stored profile and credential (deactivated or not)."""
    await authorize_warehouse(az, warehouse_id, "can_update_storage")
    return _json(await run_in_threadpool(container.storage_validation.current, warehouse_id))


async def _locked(container: Container, az: Guard, warehouse_id: str) -> CatalogError | None:
    """Why the caller could not make the change being validated (a warehouse managed by instance-admin), if so: the
    dry run reports it as the failed ``spec-mutable`` check, not as a refusal."""
    try:
        await ensure_settings_mutable(container, az, warehouse_id)
    except CatalogError as e:
        return e
    return None
