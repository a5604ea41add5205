"""Lakekeeper 0.14's grants API: ``GET``/``POST …/grants`` on the server, a project, a warehouse, a namespace, a
table, a view, a generic table and a governance tag definition, what the caller may hand on there
(``…/grants/grantable-privileges``), the vocabulary (``/grants/grantable-privileges``) and what one principal holds
across a project (``GET /grants``).

A grant is an assignment, as under Lakekeeper's OpenFGA authorizer: the privileges are the relations an object
takes (lakeledger/services/grants.py ``RELATIONS``), an apply is the permission endpoints' apply (the same
authority checks, the same Grant events, the same tuples), and a listing reads the access-history read model's
current ranges, as ``…/assignments`` does. There is one store of permissions; these are two views of it.

One core for every object kind: a route differs only in the object its path names."""

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api.context import principal, provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import errors, ok
from lakeledger.api.pagination import Page, always_paged, fetch
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.permissions import (
    OBJECT_PATHS,
    apply,
    asked_for,
    grant_relation,
    located,
    must_exist,
    require,
)
from lakeledger.api.routers.projects import project_id_of
from lakeledger.authz.authorizer import Check
from lakeledger.authz.objects import id_of, obj, role_members, type_of, user
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.role import ROLE, USER
from lakeledger.projections.access_history_queries import HeldGrant
from lakeledger.services.grants import RELATIONS, Assignment, from_tuple, parse_assignment

router = APIRouter(prefix="/management/v1", tags=["Permissions"])

MAX_ENTRIES = 100  # writes and deletes of one apply together, as Lakekeeper
RESOURCE_TYPES = ("server", "project", "warehouse", "namespace", "table", "view", "generic-table", "tag-definition")

# privilege -> (category, what it permits): the groups Lakekeeper's pickers lay out (in our words)
_DOCUMENTED = {
    "admin": ("administration", "Administers the whole server: every project, user and role."),
    "operator": ("administration", "Uses every API of the catalog: for the machine accounts that provision it."),
    "project_admin": ("administration", "Administers the project: its warehouses, roles, grants and data."),
    "security_admin": ("administration", "Manages the project's grants, ownership and roles, without access to "
                                         "its data."),
    "data_admin": ("administration", "Manages the project's warehouses and everything in them, without granting."),
    "role_creator": ("administration", "Creates roles in the project."),
    "tag_creator": ("administration", "Creates governance tag definitions in the project."),
    "ownership": ("security", "Owns the object: every privilege on it, managing its grants included."),
    "pass_grants": ("security", "Hands on to others the privileges one holds on the object."),
    "manage_grants": ("security", "Grants and revokes every privilege on the object and what it contains."),
    "describe": ("metadata", "Reads the object's metadata."),
    "select": ("read", "Reads the object's data."),
    "create": ("create", "Creates objects inside the object."),
    "modify": ("write", "Changes the object and its contents."),
    "manage_tags": ("write", "Attaches and removes governance tags on the object and what it contains (each tag's "
                             "own apply privilege needed too)."),
    "manage_maintenance": ("write", "Sets and removes maintenance policies on the object and what it contains (what "
                                    "the catalog compacts, expires and deletes on its own). Lakeledger's own."),
    "apply": ("write", "Attaches this tag definition to objects (and removes it) where one may also tag them."),
}
# what it takes to see an object, which is all one's own grants on it need (a tag definition has no metadata)
_SEE = {"tag-definition": "can_read"}


def descriptor(resource_type: str, privilege: str) -> dict[str, Any]:
    category, description = _DOCUMENTED.get(privilege, (None, None))
    return {"name": privilege, "display-name": privilege.replace("_", " "), "description": description,
            "category": category, "resource-type": resource_type}


def vocabulary(resource_type: str) -> tuple[str, ...]:
    """The privileges a grant may give on an object of ``resource_type`` (a role's are the role endpoints')."""
    return tuple(RELATIONS.get(resource_type, ())) if resource_type != "role" else ()


class _Shape(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class PrivilegeDescriptor(_Shape):
    name: str
    display_name: str = Field(alias="display-name")
    description: str | None = None
    category: str | None = None
    resource_type: str = Field(alias="resource-type")


class GrantablePrivilegesResponse(_Shape):
    privileges: dict[str, list[PrivilegeDescriptor]]


class GrantablePrivilege(_Shape):
    privilege: PrivilegeDescriptor
    allowed: bool


class ResourceGrantablePrivilegesResponse(_Shape):
    privileges: list[GrantablePrivilege]


class GrantResponse(_Shape):
    principal: dict[str, str]
    resource: dict[str, str]
    privilege: str
    recognized: bool
    created_at: str | None = Field(default=None, alias="created-at")


class ListGrantsResponse(_Shape):
    grants: list[GrantResponse]
    next_page_token: str | None = Field(default=None, alias="next-page-token")


class ApplyGrantsRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    writes: list[Any] = Field(default_factory=list)
    deletes: list[Any] = Field(default_factory=list)


class GrantRefused(BadRequest):
    """A grant request that cannot be applied as sent, with Lakekeeper's error type for it."""

    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


# ---- the shared core ----------------------------------------------------------------------------------------------

def _principal_filter(principal_user: str | None, principal_role: str | None) -> str | None:
    """The grantee a listing is narrowed to (``user:…`` or ``role:…#assignee``), None for everyone. An empty
    parameter is an absent one, as the permission checks read it (permissions.py ``asked_for``)."""
    principal_user, principal_role = principal_user or None, principal_role or None
    if principal_user is not None and principal_role is not None:
        raise GrantRefused("AmbiguousGrantPrincipal", "Specify at most one of principalUser and principalRole")
    if principal_role is not None:
        try:
            return role_members(UUID(principal_role))
        except ValueError:
            raise BadRequest(f"principalRole must be a UUID, not {principal_role!r}") from None
    return user(principal_user) if principal_user is not None else None


def _resource(object_: str, warehouse_id: UUID | str | None) -> dict[str, str]:
    kind, id_ = type_of(object_), id_of(object_)
    if kind == "server":
        return {"type": "server"}
    if kind in ("project", "warehouse", "tag-definition"):  # addressed without a warehouse
        return {"type": kind, f"{kind}-id": id_}
    return {"type": kind, "warehouse-id": str(warehouse_id), f"{kind}-id": id_}


def _grant_json(row: HeldGrant, warehouse_id: UUID | str | None) -> dict[str, Any] | None:
    assignment = from_tuple(row.user, row.relation)
    if assignment is None:
        return None
    return {"principal": {assignment.kind: assignment.id},
            "resource": _resource(row.object, row.warehouse_id or warehouse_id),
            "privilege": row.relation, "recognized": row.relation in vocabulary(type_of(row.object)),
            "created-at": row.from_at.isoformat()}


async def _may_read_grants(container: Container, request: Request, object_: str, grantee: str | None) -> None:
    """Every grant on the object needs ``can_read_assignments`` there; one's own only that the object is seen."""
    if grantee is not None and grantee == user(principal(request).id):
        if type_of(object_) != "server":
            await require(container, request, _SEE.get(type_of(object_), "can_get_metadata"), object_)
        return
    await require(container, request, "can_read_assignments", object_)


def _paging_key(key: Any) -> bool:
    return isinstance(key, int) and not isinstance(key, bool)


async def list_grants(container: Container, request: Request, object_: str, warehouse_id: str | None,
                      principal_user: str | None, principal_role: str | None, paging: Page) -> dict[str, Any]:
    grantee = _principal_filter(principal_user, principal_role)
    await must_exist(container, object_)
    await _may_read_grants(container, request, object_, grantee)
    await run_in_threadpool(container.access_history.caught_up)
    relations = list(vocabulary(type_of(object_)))
    found, next_token = await fetch(
        paging, lambda after, limit: container.access_queries.grants_on(object_, relations, grantee, after, limit),
        valid_key=_paging_key, key=lambda row: row.id)
    grants = [g for g in (_grant_json(row, warehouse_id) for row in found) if g is not None]
    return {"grants": grants, "next-page-token": next_token}


def _entries(raw: list[Any], side: str, object_: str) -> list[Assignment]:
    parsed = []
    for i, entry in enumerate(raw):
        principal_ = entry.get("principal") if isinstance(entry, dict) else None
        privilege = entry.get("privilege") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or set(entry) != {"privilege", "principal"} or not isinstance(
                principal_, dict) or not isinstance(privilege, str):
            raise BadRequest(f'{side}[{i}]: a grant is {{"privilege": <name>, "principal": {{"user": <id>}} or '
                             '{"role": <uuid>}} and nothing else')
        if not 1 <= len(privilege) <= 256:
            raise GrantRefused("InvalidGrantPrivilegeLength",
                               f"{side}[{i}]: a privilege has between 1 and 256 characters")
        if privilege not in vocabulary(type_of(object_)):
            raise GrantRefused("UnknownGrantPrivilege",
                               f"{side}[{i}]: a {type_of(object_)} takes the privileges "
                               f"{', '.join(vocabulary(type_of(object_)))}, not {privilege!r}")
        if len(principal_) != 1 or not ({USER, ROLE} & set(principal_)):
            raise BadRequest(f'{side}[{i}]: a principal is {{"user": <id>}} or {{"role": <uuid>}}, exactly one')
        parsed.append(parse_assignment({"type": privilege, **principal_}, object_))
    if len(set(parsed)) != len(parsed):
        raise GrantRefused("DuplicateGrantEntry", f"A grant diff must not repeat an entry of its {side}")
    return parsed


async def apply_grants(container: Container, request: Request, object_: str, body: ApplyGrantsRequest,
                       by: Provenance) -> Response:
    total = len(body.writes) + len(body.deletes)
    if total == 0:
        raise GrantRefused("EmptyGrantDiff", "A grant diff must contain at least one write or delete")
    if total > MAX_ENTRIES:
        raise GrantRefused("GrantDiffTooLarge", f"A grant diff may contain at most {MAX_ENTRIES} entries, not "
                                                f"{total}")
    writes, deletes = _entries(body.writes, "writes", object_), _entries(body.deletes, "deletes", object_)
    if set(writes) & set(deletes):
        raise GrantRefused("ContradictoryGrantDiff", "The same grant appears in both writes and deletes")
    await must_exist(container, object_)
    await apply(container, request, object_, writes, deletes, by)
    return Response(status_code=204)


async def grantable(container: Container, request: Request, object_: str, principal_user: str | None,
                    principal_role: str | None) -> dict[str, Any]:
    """Every privilege of the object's vocabulary, each with whether the caller (or the principal asked) may
    hand it on and take it back there."""
    if principal_user is not None and principal_role is not None:
        raise GrantRefused("AmbiguousGrantPrincipal", "Specify at most one of principalUser and principalRole")
    await must_exist(container, object_)
    who, context = await asked_for(container, request, object_, principal_user, principal_role)
    kind = type_of(object_)
    privileges = vocabulary(kind)
    answers = await container.authorizer.check_many([Check(who, grant_relation(p), object_, context)
                                                     for p in privileges])
    return {"privileges": [{"privilege": descriptor(kind, p), "allowed": allowed}
                           for p, allowed in zip(privileges, answers, strict=True)]}


# ---- routes -----------------------------------------------------------------------------------------------------

# a role is no object of a grant (its members are its assignments)
_KINDS = ("server", "project", "warehouse", "namespace", "table", "view", "generic-table", "tag-definition")


def _register(kind: str, path: str) -> None:
    async def get_grants(container: ContainerDep, request: Request, principalUser: str | None = Query(default=None),
                         principalRole: str | None = Query(default=None), paging: Page = Depends(always_paged),
                         x_project_id: str | None = Header(default=None)):
        object_ = await located(container, kind, request, x_project_id)
        return JSONResponse(await list_grants(container, request, object_, request.path_params.get("warehouse_id"),
                                              principalUser, principalRole, paging))

    async def post_grants(container: ContainerDep, request: Request, body: ApplyGrantsRequest,
                          x_project_id: str | None = Header(default=None), by: Provenance = Depends(provenance)):
        object_ = await located(container, kind, request, x_project_id)
        return await apply_grants(container, request, object_, body, by)

    async def get_grantable(container: ContainerDep, request: Request,
                            principalUser: str | None = Query(default=None),
                            principalRole: str | None = Query(default=None),
                            x_project_id: str | None = Header(default=None)):
        object_ = await located(container, kind, request, x_project_id)
        return JSONResponse(await grantable(container, request, object_, principalUser, principalRole))

    name = path.strip("/").replace("/", "_").replace("-", "_").replace("{", "").replace("}", "")
    router.add_api_route(f"{path}/grants", get_grants, methods=["GET"], name=f"list_{name}_grants",
                         responses={**ok(ListGrantsResponse, f"The grants held on the {kind}"),
                                    **errors(400, 403, 404)})
    router.add_api_route(f"{path}/grants", post_grants, methods=["POST"], status_code=204, response_class=Response,
                         name=f"apply_{name}_grants", responses=errors(400, 403, 404, 409))
    router.add_api_route(f"{path}/grants/grantable-privileges", get_grantable, methods=["GET"],
                         name=f"get_{name}_grantable_privileges",
                         responses={**ok(ResourceGrantablePrivilegesResponse,
                                         f"The privileges of the {kind}, each with whether the caller (or the "
                                         "principal asked) may hand it on"), **errors(400, 403, 404)})


for _kind in _KINDS:
    _register(_kind, OBJECT_PATHS[_kind])


@router.get("/grants/grantable-privileges",
            responses={**ok(GrantablePrivilegesResponse, "The privileges a grant may give, per resource type")})
async def get_grantable_privileges():
    return JSONResponse({"privileges": {t: [descriptor(t, p) for p in vocabulary(t)] for t in RESOURCE_TYPES}})


@router.get("/grants", responses={**ok(ListGrantsResponse, "What one principal holds across the project"),
                                  **errors(400, 403)})
async def list_project_grants(container: ContainerDep, request: Request,
                              principalUser: str | None = Query(default=None),
                              principalRole: str | None = Query(default=None), paging: Page = Depends(always_paged),
                              x_project_id: str | None = Header(default=None)):
    """Every grant one principal (exactly one of ``principalUser``, ``principalRole``) holds on the project and
    the objects in it, each at the level it is held; server grants are the server's listing's."""
    grantee = _principal_filter(principalUser, principalRole)
    if grantee is None:
        raise GrantRefused("MissingGrantPrincipal", "Specify principalUser or principalRole: this listing answers "
                                                    "for one principal at a time")
    project_id = project_id_of(x_project_id, container)
    project = obj("project", project_id)
    await must_exist(container, project)
    if grantee != user(principal(request).id):
        await require(container, request, "can_read_assignments", project)
    await run_in_threadpool(container.access_history.caught_up)
    found, next_token = await fetch(
        paging, lambda after, limit: container.access_queries.grants_in_project(project_id, grantee, after, limit),
        valid_key=_paging_key, key=lambda row: row.id)
    grants = [g for g in (_grant_json(row, None) for row in found) if g is not None and g["recognized"]]
    return JSONResponse({"grants": grants, "next-page-token": next_token})
