"""The Management API, in Lakekeeper's JSON shapes."""

from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, field_validator

from lakeledger import __version__
from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep, boolean_param
from lakeledger.api.lakekeeper_actions import LAKEKEEPER_VERSION
from lakeledger.api.openapi import (
    CreateProjectResponse,
    GetProjectResponse,
    GetWarehouseResponse,
    ListProjectsResponse,
    ListWarehousesResponse,
    ServerInfo,
    TestStorageResponse,
    TimeTravelRetention,
    bodiless,
    errors,
    ok,
)
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.projects import project_id_of
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import NoSuchProject, NoSuchWarehouse, WarehouseManaged
from lakeledger.domain.format_versions import FormatVersionPolicy, parse_format_version_policy
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.warehouse import INSTANCE_ADMIN, SELF_MANAGED
from lakeledger.projections.catalog_queries import WarehouseRow

router = APIRouter(prefix="/management/v1", tags=["Management API"])


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")


class BootstrapRequest(_Body):
    accept_terms_of_use: bool = Field(alias="accept-terms-of-use")
    is_operator: bool = Field(default=False, alias="is-operator")
    user_name: str | None = Field(default=None, alias="user-name")
    user_email: str | None = Field(default=None, alias="user-email")
    user_type: Literal["human", "application"] | None = Field(default=None, alias="user-type")


class CreateProjectRequest(_Body):
    project_name: str = Field(alias="project-name")
    project_id: UUID | None = Field(default=None, alias="project-id")


class RenameRequest(_Body):
    new_name: str = Field(alias="new-name")


class CreateWarehouseRequest(_Body):
    warehouse_name: str = Field(alias="warehouse-name")
    project_id: UUID | None = Field(default=None, alias="project-id")
    storage_profile: dict[str, Any] = Field(alias="storage-profile")
    storage_credential: dict[str, Any] | None = Field(default=None, alias="storage-credential")
    delete_profile: dict[str, Any] | None = Field(default=None, alias="delete-profile")
    drop_purge_default: Any = Field(default=None, alias="drop-purge-default")
    name_matching: Any = Field(default=None, alias="name-matching")
    allowed_format_versions: Any = Field(default=None, alias="allowed-format-versions")
    default_format_version: Any = Field(default=None, alias="default-format-version")
    managed_by: Any = Field(default=SELF_MANAGED, alias="managed-by")

    @field_validator("managed_by")
    @classmethod
    def _null_is_self_managed(cls, value: Any) -> Any:
        return SELF_MANAGED if value is None else value

    def format_versions(self) -> FormatVersionPolicy:
        return parse_format_version_policy(self.allowed_format_versions, self.default_format_version)


def _warehouse_json(row: WarehouseRow) -> dict:
    return {
        "id": str(row.id),
        "warehouse-id": str(row.id),
        "name": row.name,
        "project-id": str(row.project_id),
        "storage-profile": row.storage_profile,
        # never the credential itself: which one it is, by its keyed fingerprint
        "storage-credential-fingerprint": (row.storage_secret or {}).get("fingerprint"),
        "delete-profile": row.delete_profile,
        "drop-purge-default": row.drop_purge_default,
        "name-matching": row.name_matching,
        "status": row.status,
        "protected": row.protected,
        "updated-at": row.updated_at.isoformat() if row.updated_at else None,
        # the warehouse's format-version policy (required by Lakekeeper since 0.13.0)
        "managed-by": row.managed_by,
        "allowed-format-versions": list(row.allowed_format_versions),
        "default-format-version": row.default_format_version,
    }


async def warehouse_row(container: Container, warehouse_id: str) -> WarehouseRow:
    try:
        row = await container.queries.warehouse(UUID(warehouse_id))
    except ValueError:
        row = None
    if row is None:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
    return row


async def authorize_warehouse(az: Guard, warehouse_id: str, action: str) -> None:
    """``action`` on a warehouse named by id in a path; a malformed id is left to the route (404)."""
    if az.off:
        return
    ident = authorization.as_uuid(warehouse_id)
    if ident is not None:
        await az.require(
            action, authorization.warehouse(ident), NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
        )


async def authorize_warehouse_settings(container: Container, az: Guard, warehouse_id: str, action: str) -> None:
    """``action`` on the warehouse's own settings: also, when the warehouse is managed by instance-admin, only by the
    server's admins and operators (403 WarehouseManaged), as Lakekeeper 0.14 holds them."""
    await authorize_warehouse(az, warehouse_id, action)
    await ensure_settings_mutable(container, az, warehouse_id)


async def ensure_settings_mutable(container: Container, az: Guard, warehouse_id: str) -> None:
    if az.off:  # everyone may do everything, administering the server included
        return
    ident = authorization.as_uuid(warehouse_id)
    row = await container.queries.warehouse(ident) if ident is not None else None
    if row is not None and row.managed_by == INSTANCE_ADMIN and not await may_manage_warehouses(az):
        raise WarehouseManaged(f"Warehouse {row.name} is managed by instance-admin: its settings change only by the "
                               f"server's admins and operators")


async def may_manage_warehouses(az: Guard) -> bool:
    return az.off or (az.server is not None and await az.may("can_manage_warehouse_specs", az.server))


async def authorize_project(az: Guard, project_id: UUID, action: str) -> None:
    await az.require(action, authorization.project(project_id), NoSuchProject(f"Project does not exist: {project_id}"))


# Bootstrap stays open: before it nobody holds any right, and once done it is refused to everyone.
@router.post("/bootstrap", status_code=204, responses=errors(400))
async def bootstrap(container: ContainerDep, body: BootstrapRequest, by: Provenance = Depends(provenance)):
    await run_in_threadpool(container.management.bootstrap, body.accept_terms_of_use, body.is_operator, by,
                            container.settings.enable_default_project)
    return Response(status_code=204)


@router.get("/info", responses=ok(ServerInfo, "What this server is and whether it is bootstrapped"))
async def info(container: ContainerDep):
    server = await container.queries.server()
    return JSONResponse({
        "version": __version__,
        "lakeledger-version": __version__,
        # the Lakekeeper release whose management API this one answers in the shapes of (required since 0.12.1)
        "lakekeeper-version": LAKEKEEPER_VERSION,
        "license-status": {"license-type": "Apache-2.0", "valid": True},
        "bootstrapped": server is not None,
        "server-id": str(container.settings.server_id),
        "default-project-id": str(UUID(int=0)) if container.settings.enable_default_project else None,
        "authz-backend": container.settings.authz_backend.replace("allowall", "allow-all"),
        "aws-system-identities-enabled": False,
        "azure-system-identities-enabled": False,
        "gcp-system-identities-enabled": False,
        "queues": ["tabular_purge"],
    })


@router.post("/project", status_code=201,
             responses={**ok(CreateProjectResponse, "The project was created", 201), **errors(400, 409)})
async def create_project(container: ContainerDep, body: CreateProjectRequest, by: Provenance = Depends(provenance),
                         az: Guard = Depends(guard)):
    await az.require_on_server("can_create_project")
    project_id = await run_in_threadpool(container.management.create_project, body.project_name, body.project_id, by)
    return JSONResponse({"project-id": str(project_id)}, status_code=201)


@router.get("/project", responses={**ok(GetProjectResponse, "The project of `x-project-id`"), **errors(400, 404)})
async def get_project(container: ContainerDep, x_project_id: str | None = Header(default=None),
                      az: Guard = Depends(guard)):
    project_id = project_id_of(x_project_id, container)
    await authorize_project(az, project_id, authorization.SEE)
    row = await container.queries.project(project_id)
    if row is None:
        raise NoSuchProject(f"Project does not exist: {project_id}")
    return JSONResponse({"project-id": str(row.id), "project-name": row.name})


@router.post("/project/rename", response_class=Response,
             responses={**bodiless("The project was renamed"), **errors(400, 404)})
async def rename_project(container: ContainerDep, body: RenameRequest, x_project_id: str | None = Header(default=None),
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorize_project(az, project_id_of(x_project_id, container), "can_rename")
    await run_in_threadpool(container.management.rename_project, project_id_of(x_project_id, container), body.new_name,
                            by)
    return Response(status_code=200)


@router.delete("/project", status_code=204, responses=errors(400, 404, 409))
async def delete_project(container: ContainerDep, x_project_id: str | None = Header(default=None),
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """The project of `x-project-id`; 409 `ProjectNotEmpty` while it holds a warehouse."""
    await _delete_project(container, project_id_of(x_project_id, container), by, az)
    return Response(status_code=204)


@router.delete("/project/{project_id}", status_code=204, responses=errors(400, 404, 409))
async def delete_project_by_id(container: ContainerDep, project_id: str, by: Provenance = Depends(provenance),
                               az: Guard = Depends(guard)):
    """Lakekeeper's older form of `DELETE /project`."""
    await _delete_project(container, _project_id(project_id), by, az)
    return Response(status_code=204)


async def _delete_project(container: Container, project_id: UUID, by: Provenance, az: Guard) -> None:
    await authorize_project(az, project_id, "can_delete")
    await run_in_threadpool(container.management.delete_project, project_id, by)


def _project_id(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise NoSuchProject(f"Project does not exist: {text}") from None


@router.get("/project/{project_id}", responses={**ok(GetProjectResponse, "The project"), **errors(404)})
async def get_project_by_id(container: ContainerDep, project_id: str, az: Guard = Depends(guard)):
    """Lakekeeper's older form of `GET /project`."""
    return await get_project(container, project_id, az)


@router.post("/project/{project_id}/rename", response_class=Response,
             responses={**bodiless("The project was renamed"), **errors(400, 404)})
async def rename_project_by_id(container: ContainerDep, project_id: str, body: RenameRequest,
                               by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Lakekeeper's older form of `POST /project/rename`."""
    return await rename_project(container, body, str(_project_id(project_id)), by, az)


@router.get("/project-list", responses=ok(ListProjectsResponse, "Every project"))
async def list_projects(container: ContainerDep, az: Guard = Depends(guard)):
    rows = await container.queries.projects()
    if az.server is not None and not await az.may("can_list_all_projects", az.server):  # None: authorization off
        seen = await az.visible([authorization.project(r.id) for r in rows])
        rows = [r for r, yes in zip(rows, seen, strict=True) if yes]
    return JSONResponse({"projects": [{"project-id": str(r.id), "project-name": r.name} for r in rows]})


@router.post("/warehouse", status_code=201,
             responses={**ok(GetWarehouseResponse, "The warehouse was created", 201), **errors(400, 404, 409)})
async def create_warehouse(container: ContainerDep, body: CreateWarehouseRequest,
                           x_project_id: str | None = Header(default=None), by: Provenance = Depends(provenance),
                           az: Guard = Depends(guard)):
    project_id = body.project_id or project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_create_warehouse")
    if body.managed_by == INSTANCE_ADMIN and not await may_manage_warehouses(az):
        raise WarehouseManaged("Only the server's admins and operators may create a warehouse managed by "
                               "instance-admin")
    warehouse_id = await run_in_threadpool(
        container.management.create_warehouse, project_id, body.warehouse_name, body.storage_profile,
        body.storage_credential, body.delete_profile, by, body.drop_purge_default, body.name_matching,
        body.format_versions(), body.managed_by)
    row = await warehouse_row(container, str(warehouse_id))
    return JSONResponse(_warehouse_json(row), status_code=201)


class TestStorageRequest(_Body):
    storage_profile: dict[str, Any] = Field(alias="storage-profile")
    storage_credential: dict[str, Any] | None = Field(default=None, alias="storage-credential")
    project_id: UUID | None = Field(default=None, alias="project-id")


@router.post("/warehouse/test-storage",
             responses={**ok(TestStorageResponse, "The storage works as a warehouse's would"), **errors(400, 404)},
             summary="Prove a storage profile and credential work, as creating a warehouse on them would, without "
                     "creating one")
async def test_storage(container: ContainerDep, body: TestStorageRequest,
                       x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    project_id = body.project_id or project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_create_warehouse")
    await run_in_threadpool(container.management.test_storage, body.storage_profile, body.storage_credential)
    return JSONResponse({"ok": True, "message": "The catalog can write, read, list and delete under this location"})


@router.get("/warehouse",
            responses={**ok(ListWarehousesResponse, "The warehouses of the project (active ones unless "
                                                    "`warehouseStatus` says otherwise)"), **errors(400)})
async def list_warehouses(container: ContainerDep, projectId: UUID | None = Query(default=None),
                          warehouseStatus: list[Literal["active", "inactive"]] | None = Query(default=None),
                          x_project_id: str | None = Header(default=None),
                          az: Guard = Depends(guard)):
    project_id = projectId or project_id_of(x_project_id, container)
    statuses = set(warehouseStatus or ["active"])
    await authorize_project(az, project_id, "can_list_warehouses")
    rows = await container.queries.warehouses(project_id)
    if not az.off:
        seen = await az.visible([authorization.warehouse(r.id) for r in rows], "can_include_in_list")
        rows = [r for r, yes in zip(rows, seen, strict=True) if yes]
    return JSONResponse({"warehouses": [_warehouse_json(r) for r in rows if r.status in statuses]})


@router.get("/warehouse/{warehouse_id}", responses={**ok(GetWarehouseResponse, "The warehouse"), **errors(404)})
async def get_warehouse(container: ContainerDep, warehouse_id: str, az: Guard = Depends(guard)):
    await authorize_warehouse(az, warehouse_id, authorization.SEE)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


@router.delete("/warehouse/{warehouse_id}", status_code=204, responses=errors(400, 404, 409))
async def delete_warehouse(container: ContainerDep, warehouse_id: str,
                           force: str | None = Query(default=None, description="Delete it even " "if it is protected"),
                           by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorize_warehouse_settings(container, az, warehouse_id, "can_delete")
    await run_in_threadpool(container.management.delete_warehouse, warehouse_id, boolean_param(force, "force", False),
                            by)
    return Response(status_code=204)


class SetDeleteProfileRequest(_Body):
    delete_profile: dict[str, Any] = Field(alias="delete-profile")


@router.post("/warehouse/{warehouse_id}/delete-profile",
             responses={**ok(GetWarehouseResponse, "The warehouse, with the profile that later drops follow"),
                        **errors(400, 404)})
async def set_delete_profile(container: ContainerDep, warehouse_id: str, body: SetDeleteProfileRequest,
                             by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorize_warehouse_settings(container, az, warehouse_id, "can_modify_soft_deletion")
    await run_in_threadpool(container.management.set_delete_profile, warehouse_id, body.delete_profile, by)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


class ManagedByRequest(_Body):
    managed_by: Any = Field(alias="managed-by")


@router.post("/warehouse/{warehouse_id}/managed-by",
             responses={**ok(GetWarehouseResponse, "The warehouse, with its new managed-by"), **errors(400, 403, 404)})
async def set_managed_by(container: ContainerDep, warehouse_id: str, body: ManagedByRequest,
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """`instance-admin`: the warehouse's own settings (storage, credential, delete profile, purge default, name,
    status, protection, format-version policy, deletion) change only by the server's admins and operators;
    `self-managed` lifts it. Only they may set it (`can_manage_warehouse_specs` on the server)."""
    await authorize_warehouse(az, warehouse_id, authorization.SEE)
    await az.require_on_server("can_manage_warehouse_specs")
    await run_in_threadpool(container.management.set_managed_by, warehouse_id, body.managed_by, by)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


class FormatVersionPolicyRequest(_Body):
    allowed_format_versions: Any = Field(alias="allowed-format-versions")
    default_format_version: Any = Field(default=None, alias="default-format-version")


@router.post("/warehouse/{warehouse_id}/format-version-policy",
             responses={**ok(GetWarehouseResponse, "The warehouse, with its new format-version policy"),
                        **errors(400, 404)})
async def set_format_version_policy(container: ContainerDep, warehouse_id: str, body: FormatVersionPolicyRequest,
                                    by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Which Iceberg table format versions tables of the warehouse may be created with or upgraded to, and the
    version a create that names none gets (absent: v2 where allowed, else the highest allowed). Existing tables
    keep their versions and their writes."""
    await authorize_warehouse_settings(container, az, warehouse_id, "can_set_format_version_policy")
    policy = parse_format_version_policy(body.allowed_format_versions, body.default_format_version)
    await run_in_threadpool(container.management.set_format_version_policy, warehouse_id, policy, by)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


class SetDropPurgeDefaultRequest(_Body):
    drop_purge_default: Any = Field(alias="drop-purge-default")


@router.post("/warehouse/{warehouse_id}/drop-purge-default",
             responses={**ok(GetWarehouseResponse, "The warehouse, with the default that later table drops follow"),
                        **errors(400, 404)})
async def set_drop_purge_default(container: ContainerDep, warehouse_id: str, body: SetDropPurgeDefaultRequest,
                                 by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """What a table drop without `purgeRequested` does: `purge` its files (Lakekeeper's default for managed
    tables) or `keep` them (the REST spec's default)."""
    await authorize_warehouse_settings(container, az, warehouse_id, "can_modify_soft_deletion")
    await run_in_threadpool(container.management.set_drop_purge_default, warehouse_id, body.drop_purge_default, by)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


class SetTimeTravelRetentionRequest(_Body):
    time_travel_retention: Any = Field(alias="time-travel-retention")


def _retention_json(row: WarehouseRow) -> dict:
    return {"time-travel-retention": row.time_travel_retention}


@router.get("/warehouse/{warehouse_id}/time-travel-retention",
            responses={**ok(TimeTravelRetention, "The warehouse's time-travel retention"), **errors(404)})
async def get_time_travel_retention(container: ContainerDep, warehouse_id: str, az: Guard = Depends(guard)):
    """How long the past of the warehouse's tables stays readable: snapshot expiry keeps every snapshot younger."""
    await authorize_warehouse(az, warehouse_id, "can_get_metadata")
    return JSONResponse(_retention_json(await warehouse_row(container, warehouse_id)))


@router.post("/warehouse/{warehouse_id}/time-travel-retention",
             responses={**ok(TimeTravelRetention, "The warehouse's time-travel retention, as now recorded"),
                        **errors(400, 404)})
async def set_time_travel_retention(container: ContainerDep, warehouse_id: str, body: SetTimeTravelRetentionRequest,
                                    by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """An ISO-8601 duration, or null for none: the snapshot-expiry runs of the catalog's maintenance keep every
    snapshot younger than it, whatever the expiry policy says. The same value again records nothing."""
    await authorize_warehouse_settings(container, az, warehouse_id, "can_modify_soft_deletion")
    await run_in_threadpool(container.management.set_time_travel_retention, warehouse_id,
                            body.time_travel_retention, by)
    return JSONResponse(_retention_json(await warehouse_row(container, warehouse_id)))


class _StrictBody(_Body):
    # A misspelt credential field must not pass as "no credential given" on the endpoints that carry secrets
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class UpdateStorageRequest(_StrictBody):
    storage_profile: dict[str, Any] = Field(alias="storage-profile")
    storage_credential: dict[str, Any] | None = Field(default=None, alias="storage-credential")


class UpdateCredentialRequest(_StrictBody):
    new_storage_credential: dict[str, Any] | None = Field(default=None, alias="new-storage-credential")


@router.post("/warehouse/{warehouse_id}/storage",
             responses={**ok(GetWarehouseResponse, "The warehouse, with its new storage profile"),
                        **errors(400, 404)})
async def update_storage(container: ContainerDep, warehouse_id: str, body: UpdateStorageRequest,
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """A new storage profile and credential for the same location (bucket and key prefix, or path), proven to
    work before it is recorded; the history records the credential's fingerprint, never the credential."""
    await authorize_warehouse_settings(container, az, warehouse_id, "can_update_storage")
    await run_in_threadpool(container.management.change_storage, warehouse_id, body.storage_profile,
                            body.storage_credential, by)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


@router.post("/warehouse/{warehouse_id}/storage-credential",
             responses={**ok(GetWarehouseResponse, "The warehouse, with its new credential"), **errors(400, 404)})
async def update_storage_credential(container: ContainerDep, warehouse_id: str, body: UpdateCredentialRequest,
                                    by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Rotates the storage credential, proven to work before it is recorded; the old one is forgotten."""
    await authorize_warehouse_settings(container, az, warehouse_id, "can_update_storage_credential")
    await run_in_threadpool(container.management.rotate_credential, warehouse_id, body.new_storage_credential, by)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


@router.post("/warehouse/{warehouse_id}/rename",
             responses={**ok(GetWarehouseResponse, "The warehouse, renamed"), **errors(400, 404, 409)})
async def rename_warehouse(container: ContainerDep, warehouse_id: str, body: RenameRequest,
                           by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorize_warehouse_settings(container, az, warehouse_id, "can_rename")
    await run_in_threadpool(container.management.rename_warehouse, warehouse_id, body.new_name, by)
    return JSONResponse(_warehouse_json(await warehouse_row(container, warehouse_id)))


@router.post("/warehouse/{warehouse_id}/deactivate", response_class=Response,
             responses={**bodiless("The warehouse is deactivated"), **errors(404)})
async def deactivate_warehouse(container: ContainerDep, warehouse_id: str, by: Provenance = Depends(provenance),
                               az: Guard = Depends(guard)):
    await authorize_warehouse_settings(container, az, warehouse_id, "can_deactivate")
    await run_in_threadpool(container.management.set_active, warehouse_id, False, by)
    return Response(status_code=200)


@router.post("/warehouse/{warehouse_id}/activate", response_class=Response,
             responses={**bodiless("The warehouse is active"), **errors(404)})
async def activate_warehouse(container: ContainerDep, warehouse_id: str, by: Provenance = Depends(provenance),
                             az: Guard = Depends(guard)):
    await authorize_warehouse_settings(container, az, warehouse_id, "can_activate")
    await run_in_threadpool(container.management.set_active, warehouse_id, True, by)
    return Response(status_code=200)
