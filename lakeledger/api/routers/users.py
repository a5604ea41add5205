"""Users of the Management API, in Lakekeeper's shapes: create (or provision oneself), list, get, replace,
delete, search, and whoami."""

from datetime import datetime
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.errors import error_response
from lakeledger.api.openapi import IcebergErrorResponse, errors, ok
from lakeledger.api.pagination import Page, always_paged, fetch
from lakeledger.api.responses import JSONResponse
from lakeledger.bootstrap import Container
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.user import NoSuchUser
from lakeledger.identity.principal import ANONYMOUS_PRINCIPAL, Principal
from lakeledger.projections.users_roles_queries import RoleRow, UserRow
from lakeledger.services.users import UserFields

router = APIRouter(prefix="/management/v1", tags=["Users"])

UserType = Literal["human", "application"]
LastUpdatedWith = Literal["create-endpoint", "config-call-creation", "update-endpoint", "role-provider"]


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class UserModel(_Model):
    """A user of the catalog. `id` is `<idp>~<subject>` (`oidc~1234`)."""

    id: str
    name: str
    email: str | None
    user_type: UserType = Field(alias="user-type")
    last_updated_with: LastUpdatedWith = Field(
        alias="last-updated-with", description="How the user was last written: `config-call-creation` when it "
                                               "was provisioned on its first authenticated request")
    created_at: datetime = Field(alias="created-at")
    updated_at: datetime | None = Field(alias="updated-at")


class ListUsersResponse(_Model):
    users: list[UserModel]
    next_page_token: str | None = Field(alias="next-page-token")


class SearchUser(_Model):
    id: str
    name: str
    email: str | None
    user_type: UserType = Field(alias="user-type")


class SearchUserResponse(_Model):
    users: list[SearchUser]


class WhoamiResponse(UserModel):
    is_instance_admin: bool = Field(alias="is-instance-admin")


class CreateUserRequest(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    id: str | None = Field(default=None, description="`<idp>~<subject>`; omitted: the caller's own (from its token)")
    name: str | None = None
    email: str | None = None
    user_type: UserType | None = Field(default=None, alias="user-type")
    update_if_exists: bool = Field(default=False, alias="update-if-exists")


class UpdateUserRequest(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    name: str
    email: str | None = None
    user_type: UserType = Field(alias="user-type")


class SearchRequest(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    search: str = Field(description="Matched against id, name and email (and a role's source id); cut to 64 "
                                    "characters")


_UNAUTHENTICATED: dict[int | str, dict[str, Any]] = {
    401: {"model": IcebergErrorResponse, "description": "No token: the caller is anonymous"}}


def caller(request: Request) -> Principal:
    """Put in the request's state by authentication; anonymous when authentication is off."""
    return getattr(request.state, "principal", ANONYMOUS_PRINCIPAL)


async def authorize_user(az: Guard, user_id: str | None, action: str) -> None:
    """A caller acts on its own user freely; on another's it needs ``action`` on the server."""
    if az.off or user_id is None or user_id == az.principal.id:
        return
    await az.require_on_server(action)


def user_json(row: UserRow) -> dict[str, Any]:
    return {"id": row.id, "name": row.name, "email": row.email, "user-type": row.user_type,
            "last-updated-with": row.last_updated_with, "created-at": row.created_at.isoformat(),
            "updated-at": row.updated_at.isoformat() if row.updated_at else None}


async def user_row(container: Container, user_id: str) -> UserRow:
    row = await container.users_roles_queries.user(user_id)
    if row is None:
        raise NoSuchUser(f"User with id {user_id} not found")
    return row


def is_time_key(key: Any) -> bool:
    """A page key of (created-at, id)."""
    if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)):
        return False
    try:
        datetime.fromisoformat(key[0])
    except ValueError:
        return False
    return True


def time_key(row: UserRow | RoleRow) -> list[str]:
    return [row.created_at.isoformat(), str(row.id)]


@router.post("/user", status_code=201,
             responses={**ok(UserModel, "The user was created", 201),
                        **ok(UserModel, "The user existed and was updated (`update-if-exists`)"),
                        **errors(400, 409)})
async def create_user(container: ContainerDep, body: CreateUserRequest, request: Request,
                      by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Creates a user, or updates one with `update-if-exists`. Without `id`, or with the caller's own, the caller
    provisions itself and what its token says fills in name, email and type; otherwise `name` and `user-type` are
    required (anonymous callers, when authentication is off, always name the id)."""
    await authorize_user(az, body.id, "can_provision_users")
    fields = UserFields(body.id, body.name, body.email, body.user_type)
    user_id, created = await run_in_threadpool(container.users.create, fields, body.update_if_exists, caller(request),
                                               by)
    return JSONResponse(user_json(await user_row(container, user_id)), status_code=201 if created else 200)


@router.get("/user", responses={**ok(ListUsersResponse, "Users in the order they were created"), **errors(400)})
async def list_users(container: ContainerDep,
                     name: str | None = Query(default=None, description="A part of the name, any case"),
                     paging: Page = Depends(always_paged), az: Guard = Depends(guard)):
    await az.require_on_server("can_list_users")
    queries = container.users_roles_queries
    found, next_token = await fetch(paging, lambda after, limit: queries.users(name or None, after, limit),
                                    valid_key=is_time_key, key=time_key)
    return JSONResponse({"users": [user_json(r) for r in found], "next-page-token": next_token})


@router.get("/whoami", responses={**ok(WhoamiResponse, "The caller's own user"), **_UNAUTHENTICATED})
async def whoami(container: ContainerDep, request: Request):
    """The user the caller's token names, provisioned if this is its first request. Anonymous callers (no token,
    or authentication off) are answered 401, as Lakekeeper does."""
    principal = caller(request)
    if not principal.authenticated:
        return error_response(401, "NotAuthorizedException", "No token provided: the caller is anonymous")
    if not container.users.is_known(principal):
        await run_in_threadpool(container.users.provision, principal, request.state.request_id)
    return JSONResponse({**user_json(await user_row(container, principal.id)), "is-instance-admin": False})


@router.post("/search/user", responses={**ok(SearchUserResponse, "Up to 10 users, best match first"),
                                        **errors(400)})
async def search_users(container: ContainerDep, body: SearchRequest):
    """An exact id first, then users whose name or email equals, starts with, or contains the search string."""
    rows = await container.users_roles_queries.search_users(body.search)
    return JSONResponse({"users": [{"id": r.id, "name": r.name, "email": r.email, "user-type": r.user_type}
                                   for r in rows]})


@router.get("/user/{user_id}", responses={**ok(UserModel, "The user"), **errors(404)})
async def get_user(container: ContainerDep, user_id: str, az: Guard = Depends(guard)):
    await authorize_user(az, user_id, "can_list_users")
    return JSONResponse(user_json(await user_row(container, user_id)))


async def _update_user(user_id: str, body: UpdateUserRequest, container: Container, by: Provenance) -> JSONResponse:
    await run_in_threadpool(container.users.update, user_id, body.name, body.email, body.user_type, by)
    return JSONResponse(user_json(await user_row(container, user_id)))


@router.put("/user/{user_id}", responses={**ok(UserModel, "The user, replaced"), **errors(400, 404)})
async def replace_user(container: ContainerDep, user_id: str, body: UpdateUserRequest,
                       by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Lakekeeper's update: name, email and type are replaced (an absent email removes it)."""
    await authorize_user(az, user_id, "can_update_users")
    return await _update_user(user_id, body, container, by)


@router.post("/user/{user_id}", responses={**ok(UserModel, "The user, replaced"), **errors(400, 404)})
async def update_user(container: ContainerDep, user_id: str, body: UpdateUserRequest,
                      by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """The same as `PUT`, for clients that update with `POST`."""
    await authorize_user(az, user_id, "can_update_users")
    return await _update_user(user_id, body, container, by)


@router.delete("/user/{user_id}", status_code=204, responses=errors(404))
async def delete_user(container: ContainerDep, user_id: str, by: Provenance = Depends(provenance),
                      az: Guard = Depends(guard)):
    """Deletes the user and removes it from every role. A later request of the same principal provisions it
    again, with no memberships."""
    await authorize_user(az, user_id, "can_delete_users")
    await run_in_threadpool(container.users.delete, user_id, by)
    return Response(status_code=204)
