"""Roles of a project and their members, in Lakekeeper's shapes. The project is the `x-project-id` header's (or
the deprecated `project-id` of a body or `projectId` query), else the default project."""

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import errors, ok
from lakeledger.api.pagination import Page, always_paged, fetch, is_time_and_id
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_project
from lakeledger.api.routers.projects import project_id_of
from lakeledger.api.routers.users import SearchRequest, UserType, authorize_user, time_key, user_row
from lakeledger.bootstrap import Container
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.role import NoSuchRole, check_member
from lakeledger.projections.users_roles_queries import MemberRow, RoleRow

router = APIRouter(prefix="/management/v1", tags=["Roles"])

MemberType = Literal["user", "role"]


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class RoleModel(_Model):
    """A role. `ident` (`provider~source`) is unique in its project; roles made here have provider `lakekeeper`
    and their id as source id unless the request names both."""

    id: UUID
    ident: str
    provider_id: str = Field(alias="provider-id")
    source_id: str = Field(alias="source-id")
    name: str
    description: str | None
    project_id: UUID = Field(alias="project-id")
    created_at: datetime = Field(alias="created-at")
    updated_at: datetime | None = Field(alias="updated-at")


class ListRolesResponse(_Model):
    roles: list[RoleModel]
    next_page_token: str | None = Field(alias="next-page-token")


class SearchRoleResponse(_Model):
    roles: list[RoleModel]


class RoleMembership(_Model):
    id: UUID
    ident: str
    name: str


class ListRoleMembershipsResponse(_Model):
    roles: list[RoleMembership]
    next_page_token: str | None = Field(alias="next-page-token")


class RoleMemberUser(_Model):
    type: Literal["user"]
    id: str
    name: str | None
    email: str | None
    user_type: UserType | None = Field(alias="user-type")


class RoleMemberRole(RoleMembership):
    type: Literal["role"]


class ListRoleMembersResponse(_Model):
    members: list[Annotated[RoleMemberUser | RoleMemberRole, Field(discriminator="type")]]
    next_page_token: str | None = Field(alias="next-page-token")


class RoleMemberRef(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    type: MemberType
    id: str = Field(description="A user id (`oidc~1234`) or a role id (a UUID)")


class AddRoleMembersRequest(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    members: list[RoleMemberRef]


class AddRoleMembersResponse(_Model):
    members: list[RoleMemberRef]


class CreateRoleRequest(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    name: str
    description: str | None = None
    project_id: UUID | None = Field(default=None, alias="project-id", description="Deprecated: use x-project-id")
    provider_id: str | None = Field(default=None, alias="provider-id")
    source_id: str | None = Field(default=None, alias="source-id")


class UpdateRoleRequest(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    name: str
    description: str | None = Field(default=None, description="Absent: the description is removed")


class UpdateRoleSourceSystemRequest(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    provider_id: str = Field(alias="provider-id")
    source_id: str = Field(alias="source-id")


class RoleMetadata(_Model):
    """A role as any project may see it: no description, no times."""

    id: UUID
    ident: str
    provider_id: str = Field(alias="provider-id")
    source_id: str = Field(alias="source-id")
    name: str
    project_id: UUID = Field(alias="project-id")


class SearchRoleRequest(SearchRequest):
    project_id: UUID | None = Field(default=None, alias="project-id", description="Deprecated: use x-project-id")


def role_json(row: RoleRow) -> dict[str, Any]:
    return {"id": str(row.id), "ident": f"{row.provider_id}~{row.source_id}",
            "provider-id": row.provider_id, "source-id": row.source_id, "name": row.name,
            "description": row.description, "project-id": str(row.project_id),
            "created-at": row.created_at.isoformat(),
            "updated-at": row.updated_at.isoformat() if row.updated_at else None}


def membership_json(row: RoleRow) -> dict[str, Any]:
    return {"id": str(row.id), "ident": f"{row.provider_id}~{row.source_id}", "name": row.name}


def member_json(row: MemberRow) -> dict[str, Any]:
    if row.member_type == "user":
        return {"type": "user", "id": row.member_id, "name": row.user_name, "email": row.email,
                "user-type": row.user_type}
    return {"type": "role", "id": row.member_id, "ident": f"{row.provider_id}~{row.source_id}",
            "name": row.role_name}


async def role_row(container: Container, project_id: UUID, role_id: UUID) -> RoleRow:
    row = await container.users_roles_queries.role(project_id, role_id)
    if row is None:
        raise NoSuchRole(f"Role does not exist in project {project_id}: {role_id}")
    return row


async def authorize_role(az: Guard, project_id: UUID, role_id: UUID, action: str) -> None:
    """``action`` on the role; one the caller may not read is missing."""
    await az.require(action, authorization.role(role_id), NoSuchRole(f"Role does not exist in project {project_id}: "
                                                             f"{role_id}"), see="can_read")


def _is_member_key(key: Any) -> bool:
    return isinstance(key, list) and len(key) == 2 and key[0] in ("user", "role") and isinstance(key[1], str)




@router.post("/role", status_code=201,
             responses={**ok(RoleModel, "The role was created", 201), **errors(400, 404, 409)})
async def create_role(container: ContainerDep, body: CreateRoleRequest, x_project_id: str | None = Header(default=None),
                      by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    project_id = body.project_id or project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_create_role")
    role_id = await run_in_threadpool(container.roles.create, project_id, body.name, body.description, body.provider_id,
                                      body.source_id, by)
    return JSONResponse(role_json(await role_row(container, project_id, role_id)), status_code=201)


@router.get("/role", responses={**ok(ListRolesResponse, "The project's roles in the order they were created"),
                                **errors(400)})
async def list_roles(
    container: ContainerDep,
    paging: Page = Depends(always_paged),
    projectId: UUID | None = Query(default=None, description="Deprecated: use x-project-id"),
    roleIds: list[UUID] | None = Query(default=None),
    sourceIds: list[str] | None = Query(default=None),
    providerIds: list[str] | None = Query(default=None),
    x_project_id: str | None = Header(default=None),
    az: Guard = Depends(guard),
):
    project_id = projectId or project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_list_roles")
    queries = container.users_roles_queries
    found, next_token = await fetch(
        paging, lambda after, limit: queries.roles(project_id, roleIds, sourceIds, providerIds, after, limit),
        valid_key=is_time_and_id, key=time_key)
    return JSONResponse({"roles": [role_json(r) for r in found], "next-page-token": next_token})


@router.post("/search/role", responses={**ok(SearchRoleResponse, "Up to 10 roles of the project, best match first"),
                                        **errors(400)})
async def search_roles(container: ContainerDep, body: SearchRoleRequest,
                       x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    """An exact id first, then roles whose name or source id equals, starts with, or contains the search string."""
    project_id = body.project_id or project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_search_roles")
    found = await container.users_roles_queries.search_roles(project_id, body.search)
    return JSONResponse({"roles": [role_json(r) for r in found]})


@router.get("/role/{role_id}", responses={**ok(RoleModel, "The role"), **errors(400, 404)})
async def get_role(container: ContainerDep, role_id: UUID, x_project_id: str | None = Header(default=None),
                   az: Guard = Depends(guard)):
    await authorize_role(az, project_id_of(x_project_id, container), role_id, "can_read")
    return JSONResponse(role_json(await role_row(container, project_id_of(x_project_id, container), role_id)))


@router.post("/role/{role_id}", responses={**ok(RoleModel, "The role, updated"), **errors(400, 404)})
async def update_role(container: ContainerDep, role_id: UUID, body: UpdateRoleRequest,
                      x_project_id: str | None = Header(default=None), by: Provenance = Depends(provenance),
                      az: Guard = Depends(guard)):
    """Sets the name and the description (an absent description removes it), as Lakekeeper's update does."""
    project_id = project_id_of(x_project_id, container)
    await authorize_role(az, project_id, role_id, "can_update")
    await run_in_threadpool(container.roles.update, project_id, role_id, body.name, body.description, by)
    return JSONResponse(role_json(await role_row(container, project_id, role_id)))


@router.delete("/role/{role_id}", status_code=204, responses=errors(400, 404))
async def delete_role(container: ContainerDep, role_id: UUID, x_project_id: str | None = Header(default=None),
                      by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Deletes the role, removes its members from it and it from the roles it is a member of."""
    await authorize_role(az, project_id_of(x_project_id, container), role_id, "can_delete")
    await run_in_threadpool(container.roles.delete, project_id_of(x_project_id, container), role_id, by)
    return Response(status_code=204)


async def _members(container: Container, az: Guard, role_id: UUID, member_type: str | None, paging: Page,
                   x_project_id: str | None, transitive: bool) -> JSONResponse:
    await authorize_role(az, project_id_of(x_project_id, container), role_id, "can_read_assignments")
    await role_row(container, project_id_of(x_project_id, container), role_id)
    found, next_token = await fetch(
        paging, lambda after, limit: container.users_roles_queries.members(role_id, member_type, after, limit,
                                                                           transitive),
        valid_key=_is_member_key, key=lambda r: [r.member_type, r.member_id])
    return JSONResponse({"members": [member_json(r) for r in found], "next-page-token": next_token})


@router.get("/role/{role_id}/members",
            responses={**ok(ListRoleMembersResponse, "The role's direct members, users then roles"),
                       **errors(400, 404)})
async def list_role_members(container: ContainerDep, role_id: UUID, type: MemberType | None = Query(default=None),
                            paging: Page = Depends(always_paged),
                            x_project_id: str | None = Header(default=None),
                            az: Guard = Depends(guard)):
    return await _members(container, az, role_id, type, paging, x_project_id, transitive=False)


@router.get("/role/{role_id}/members/transitive",
            responses={**ok(ListRoleMembersResponse, "The role's members and those of every role in it, users then "
                                                     "roles"), **errors(400, 404)})
async def list_role_transitive_members(container: ContainerDep, role_id: UUID,
                                       type: MemberType | None = Query(default=None),
                                       paging: Page = Depends(always_paged),
                                       x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    """Users and roles holding the role directly or through nested roles (the nested roles themselves included),
    each once; from the users-and-roles read model, under either authorizer."""
    return await _members(container, az, role_id, type, paging, x_project_id, transitive=True)


@router.post("/role/{role_id}/members",
             responses={**ok(AddRoleMembersResponse, "The members asked for, all present now"),
                        **errors(400, 404)})
async def add_role_members(container: ContainerDep, role_id: UUID, body: AddRoleMembersRequest,
                           x_project_id: str | None = Header(default=None), by: Provenance = Depends(provenance),
                           az: Guard = Depends(guard)):
    """Adds users and roles, all or none; members already present are accepted. A user must exist (create it
    with `POST /management/v1/user` first), a role must be of the same project, and a role that already contains
    this one (directly or through nested roles) is refused with 400: it would make a membership loop."""
    members = [check_member(m.model_dump()) for m in body.members]
    await authorize_role(az, project_id_of(x_project_id, container), role_id, "can_grant_assignee")
    await run_in_threadpool(container.roles.add_members, project_id_of(x_project_id, container), role_id, members, by)
    return JSONResponse({"members": [{"type": t, "id": m} for t, m in members]})


@router.delete("/role/{role_id}/members/{member_type}/{member_id}", status_code=204, responses=errors(400, 404))
async def remove_role_member(container: ContainerDep, role_id: UUID, member_type: MemberType, member_id: str,
                             x_project_id: str | None = Header(default=None),
                             by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Idempotent: removing a member that is not there is answered 204 too."""
    member = check_member({"type": member_type, "id": member_id})
    await authorize_role(az, project_id_of(x_project_id, container), role_id, "can_grant_assignee")
    await run_in_threadpool(container.roles.remove_member, project_id_of(x_project_id, container), role_id, member, by)
    return Response(status_code=204)


@router.get("/role/{role_id}/member-of",
            responses={**ok(ListRoleMembershipsResponse, "The roles this role is a direct member of"),
                       **errors(400, 404)})
async def list_role_member_of(container: ContainerDep, role_id: UUID, paging: Page = Depends(always_paged),
                              x_project_id: str | None = Header(default=None),
                              az: Guard = Depends(guard)):
    return await _role_member_of(container, az, role_id, paging, x_project_id, transitive=False)


@router.get("/role/{role_id}/member-of/transitive",
            responses={**ok(ListRoleMembershipsResponse, "The roles this role is in, directly or through roles"),
                       **errors(400, 404)})
async def list_role_transitive_member_of(container: ContainerDep, role_id: UUID,
                                         paging: Page = Depends(always_paged),
                                         x_project_id: str | None = Header(default=None),
                                         az: Guard = Depends(guard)):
    return await _role_member_of(container, az, role_id, paging, x_project_id, transitive=True)


async def _role_member_of(container: Container, az: Guard, role_id: UUID, paging: Page, x_project_id: str | None,
                          transitive: bool) -> JSONResponse:
    project_id = project_id_of(x_project_id, container)
    await authorize_role(az, project_id, role_id, "can_read")
    await role_row(container, project_id, role_id)
    return await _memberships(container, project_id, "role", str(role_id), paging, transitive)


@router.get("/user/{user_id}/roles",
            responses={**ok(ListRoleMembershipsResponse, "The roles of the project the user is a direct member of"),
                       **errors(400, 404)})
async def list_user_roles(
    container: ContainerDep,
    user_id: str,
    paging: Page = Depends(always_paged),
    x_project_id: str | None = Header(default=None),
    az: Guard = Depends(guard),
):
    return await _user_roles(container, az, user_id, paging, x_project_id, transitive=False)


@router.get("/user/{user_id}/roles/transitive",
            responses={**ok(ListRoleMembershipsResponse, "Every role of the project the user holds, directly or "
                                                         "through roles"), **errors(400, 404)})
async def list_user_transitive_roles(container: ContainerDep, user_id: str, paging: Page = Depends(always_paged),
                                     x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    return await _user_roles(container, az, user_id, paging, x_project_id, transitive=True)


async def _user_roles(container: Container, az: Guard, user_id: str, paging: Page, x_project_id: str | None,
                      transitive: bool) -> JSONResponse:
    await authorize_user(az, user_id, "can_list_users")
    await user_row(container, user_id)
    return await _memberships(container, project_id_of(x_project_id, container), "user", user_id, paging,
                              transitive)


async def _memberships(container: Container, project_id: UUID, member_type: str, member_id: str,
                       paging: Page, transitive: bool) -> JSONResponse:
    queries = container.users_roles_queries
    found, next_token = await fetch(
        paging, lambda after, limit: queries.roles_of(project_id, member_type, member_id, after, limit, transitive),
        valid_key=is_time_and_id, key=time_key)
    return JSONResponse({"roles": [membership_json(r) for r in found], "next-page-token": next_token})


@router.get("/role/{role_id}/metadata", responses={**ok(RoleMetadata, "The role, as any project may see it"),
                                                   **errors(400, 404)})
async def get_role_metadata(container: ContainerDep, role_id: UUID, az: Guard = Depends(guard)):
    """The role whichever project it is in (a role of another project may be a member of one's own): its name and
    ident, to whoever may read the role."""
    missing = NoSuchRole(f"Role does not exist: {role_id}")
    await az.require("can_read", authorization.role(role_id), missing)
    row = await container.users_roles_queries.role_anywhere(role_id)
    if row is None:
        raise missing
    return JSONResponse({"id": str(row.id), "ident": f"{row.provider_id}~{row.source_id}",
                         "provider-id": row.provider_id, "source-id": row.source_id, "name": row.name,
                         "project-id": str(row.project_id)})


@router.put("/role/{role_id}/source-system", responses={**ok(RoleModel, "The role, with its new ident"),
                                                        **errors(400, 404, 409)})
async def update_role_source_system(container: ContainerDep, role_id: UUID, body: UpdateRoleSourceSystemRequest,
                                    x_project_id: str | None = Header(default=None),
                                    by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Moves the role to another provider and source id (its ``ident``, unique in the project: 409 when another
    role has it); setting the ident it has records nothing."""
    project_id = project_id_of(x_project_id, container)
    await authorize_role(az, project_id, role_id, "can_update")
    await run_in_threadpool(container.roles.change_source_system, project_id, role_id, body.provider_id,
                            body.source_id, by)
    return JSONResponse(role_json(await role_row(container, project_id, role_id)))
