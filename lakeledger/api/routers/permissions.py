"""Lakekeeper's permission endpoints: who is assigned what on an object (``assignments``, read and changed), what
the caller may do there (``access``), and single decisions (``check``).

Assignments are read from the access-history read model's current ranges (the log's consequences, the same tuples
the projection writes to OpenFGA), so they answer under either backend. Changing them is granting: the caller needs
``can_grant_<relation>`` on the object (``can_change_ownership`` for ownership), asked of OpenFGA before anything is
appended; refused, it is a 403 and the log is unchanged. Under allowall everything is allowed and still recorded.

Managed access on a warehouse or namespace (``…/managed-access``, and ``GET /permissions/{warehouse,namespace}/{id}``
answering it) is recorded the same way: ``can_set_managed_access`` asked first, the flag read from the catalog read
model."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from lakeledger.api.authorization import SEE, active_lookup
from lakeledger.api.context import principal, provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.lakekeeper_actions import AUTHORIZER_ACTIONS, ENUMS, lakekeeper_action
from lakeledger.api.openapi import errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.projects import project_id_of
from lakeledger.authz.authorizer import AllowAll, Check
from lakeledger.authz.model import authorization_model
from lakeledger.authz.objects import RelationTuple, id_of, obj, role_members, type_of, user
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest, Forbidden, NoSuchWarehouse, NotFound
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tag import NoSuchTagDefinition
from lakeledger.projections.catalog_queries import CATALOG_KINDS
from lakeledger.services.grants import RELATIONS, Assignment, from_tuple, parse_assignment

router = APIRouter(prefix="/management/v1/permissions", tags=["Permissions"])

ACTIONS = {d["type"]: sorted(r for r in d.get("relations", {}) if r.startswith("can_"))
           for d in authorization_model()["type_definitions"]}


def grant_relation(relation: str) -> str:
    """What it takes to hand ``relation`` on (or take it back)."""
    if relation == "ownership":
        return "can_change_ownership"
    return f"can_grant_{relation}"


if TYPE_CHECKING:
    Relation = str
else:  # the relations any object has, as the schema's enum
    Relation = Literal[tuple(sorted({r for rs in RELATIONS.values() for r in rs}))]


class _Shape(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class AssignmentModel(_Shape):
    type: Relation
    user: str | None = None
    role: UUID | None = None


class AssignmentsResponse(_Shape):
    assignments: list[AssignmentModel]
    project_id: UUID | None = Field(default=None, alias="project-id")


class AccessResponse(_Shape):
    allowed_actions: list[str] = Field(alias="allowed-actions")


class CheckResponse(_Shape):
    allowed: bool


class UpdateAssignments(BaseModel):
    model_config = ConfigDict(extra="forbid")
    writes: list[Any] = Field(default_factory=list)
    deletes: list[Any] = Field(default_factory=list)


def _uuid(value: object, what: str) -> UUID:
    try:
        return UUID(value) if isinstance(value, str) else UUID(str(None))
    except ValueError:
        raise BadRequest(f"{what} must be a UUID, not {value!r}") from None


async def must_exist(container: Container, object_: str) -> None:
    kind, id_ = type_of(object_), object_.partition(":")[2]
    if kind == "role":
        found = await container.users_roles_queries.role_exists(UUID(id_))
    elif kind == "tag-definition":
        found = await container.tag_queries.exists(UUID(id_))
    elif kind in CATALOG_KINDS:
        found = await container.queries.exists(kind, UUID(id_))
    else:
        return
    if not found:
        raise (NoSuchWarehouse if kind == "warehouse" else NotFound)(f"{kind.capitalize()} does not exist: {id_}")


async def _caller_context(container: Container, request: Request) -> tuple[RelationTuple, ...]:
    """The roles the caller's token names (lakeledger/authz/token_roles.py), held for this request."""
    caller = principal(request)
    token_roles = getattr(container, "token_roles", None)
    if token_roles is None or not caller.roles or isinstance(container.authorizer, AllowAll):
        return ()
    return await token_roles.contextual(caller)


async def _allowed(container: Container, request: Request, checks: list[tuple[str, str]]) -> list[bool]:
    who, context = user(principal(request).id), await _caller_context(container, request)
    return await container.authorizer.check_many([Check(who, relation, object_, context)
                                                  for relation, object_ in checks])


async def require(container: Container, request: Request, relation: str, object_: str) -> None:
    [allowed] = await _allowed(container, request, [(relation, object_)])
    if not allowed:
        raise Forbidden(f"{principal(request).id} may not {relation} on {object_}")


async def assignments(container: Container, request: Request, object_: str, relations: list[str] | None) -> list[dict]:
    await must_exist(container, object_)
    await require(container, request, "can_read_assignments", object_)
    await run_in_threadpool(container.access_history.caught_up)
    held = await container.access_queries.current_tuples(object_)
    wanted = set(relations or RELATIONS[type_of(object_)]) & set(RELATIONS[type_of(object_)])
    found = [from_tuple(t.user, t.relation) for t in held if t.relation in wanted]
    return [a.json() for a in found if a is not None]


async def update(container: Container, request: Request, object_: str, body: UpdateAssignments,
                 by: Provenance) -> Response:
    await must_exist(container, object_)
    writes = [parse_assignment(a, object_) for a in body.writes]
    deletes = [parse_assignment(a, object_) for a in body.deletes]
    await apply(container, request, object_, writes, deletes, by)
    return Response(status_code=204)


async def apply(container: Container, request: Request, object_: str, writes: list[Assignment],
                deletes: list[Assignment], by: Provenance) -> None:
    """Grants and revokes on an existing object, all or nothing, once the caller may hand on each relation
    (``can_grant_<relation>``, ``can_change_ownership`` for ownership): refused, a 403 and nothing appended."""
    needed = sorted({grant_relation(a.relation) for a in [*writes, *deletes]})
    answers = await _allowed(container, request, [(r, object_) for r in needed])
    refused = [r for r, ok in zip(needed, answers, strict=True) if not ok]
    if refused:
        raise Forbidden(f"{principal(request).id} may not {', '.join(refused)} on {object_}")
    await run_in_threadpool(container.grants.update, object_, writes, deletes, by)


Asked = tuple[str, tuple[RelationTuple, ...]]  # whose decision (``user:…`` or ``role:…#assignee``), its context


async def _as_asked(container: Container, request: Request, object_: str, asked: str | None) -> Asked:
    """The caller with the roles its token names; or (with ``can_read_assignments`` on the object) another
    principal, whose token is not at hand: what it holds through token roles is not told."""
    caller = user(principal(request).id)
    if asked is None or asked == caller:
        return caller, await _caller_context(container, request)
    await require(container, request, "can_read_assignments", object_)
    return asked, ()


async def asked_for(container: Container, request: Request, object_: str, principal_user: str | None,
                    principal_role: str | None) -> Asked:
    """Whose decisions a question about the object is: the caller's, or the ``principalUser``'s or
    ``principalRole``'s named."""
    if principal_user and principal_role:
        raise BadRequest("Give principalUser or principalRole, not both")
    asked = (user(principal_user) if principal_user
             else role_members(_uuid(principal_role, "principalRole")) if principal_role else None)
    return await _as_asked(container, request, object_, asked)


async def allowed_names(container: Container, request: Request, object_: str, principal_user: str | None,
                        principal_role: str | None, vocabulary: Sequence[tuple[str, str]]) -> list[str]:
    """The names of ``vocabulary`` ((name, our relation), in the order answered) the caller, or the principal
    asked, holds on the object: the one core of every "what may I do here" answer."""
    await must_exist(container, object_)
    await _must_see(container, request, object_)
    who, context = await asked_for(container, request, object_, principal_user, principal_role)
    answers = await container.authorizer.check_many([Check(who, relation, object_, context)
                                                     for _, relation in vocabulary])
    return list(dict.fromkeys(name for (name, _), ok in zip(vocabulary, answers, strict=True) if ok))


async def _must_see(container: Container, request: Request, object_: str) -> None:
    """An object the caller may not see answers as missing, as its load and the lists hide it: an empty list of
    actions would tell that it exists."""
    kind = type_of(object_)
    if kind not in CATALOG_KINDS:
        return
    [seen] = await _allowed(container, request, [(SEE, object_)])
    if not seen:
        raise (NoSuchWarehouse if kind == "warehouse" else NotFound)(f"{kind.capitalize()} does not exist: "
                                                                     f"{id_of(object_)}")


def _access_vocabulary(kind: str) -> list[tuple[str, str]]:
    """Lakekeeper's ``/permissions/…/access`` names for our relations, in its enum's order."""
    pairs = [(name, a) for a in ACTIONS[kind] if (name := lakekeeper_action(kind, a)) is not None]
    order = {name: i for i, name in enumerate(ENUMS[kind])}
    return sorted(pairs, key=lambda pair: order[pair[0]])


async def access(container: Container, request: Request, object_: str, principal_user: str | None,
                 principal_role: str | None) -> dict:
    vocabulary = _access_vocabulary(type_of(object_))
    return {"allowed-actions": await allowed_names(container, request, object_, principal_user, principal_role,
                                                   vocabulary)}


def _project(x_project_id: str | None, container: Container, project_id: str | None = None) -> str:
    return obj("project", _uuid(project_id, "project id") if project_id else project_id_of(x_project_id, container))


# ---- routes: one object kind after another, each with assignments (GET, POST) and access ------------------------

def _objects(container: Container, kind: str, **ids) -> str:
    if kind == "server":
        return obj("server", container.settings.server_id)
    if kind == "project":
        return _project(ids.get("x_project_id"), container, ids.get("project_id"))
    return obj(kind, _uuid(ids[f"{kind.replace('-', '_')}_id"], f"{kind} id"))


def object_of(container: Container, kind: str, request: Request, x_project_id: str | None) -> str:
    """The object a route's path (and for a project, the header) names."""
    return _objects(container, kind, **{k: str(v) for k, v in request.path_params.items()},
                    x_project_id=x_project_id)


async def located(container: Container, kind: str, request: Request, x_project_id: str | None) -> str:
    """``object_of``, which must be in the warehouse the path names with it (404 as missing otherwise: a table
    of another warehouse is not this warehouse's table); a tag definition, in the project the header names
    (another project's definition is missing here, as its own endpoints have it)."""
    object_ = object_of(container, kind, request, x_project_id)
    if kind == "tag-definition":
        project_id = project_id_of(x_project_id, container)
        if await container.tag_queries.definition(project_id, UUID(id_of(object_))) is None:
            raise NoSuchTagDefinition(f"Tag definition does not exist in project {project_id}: {id_of(object_)}")
    warehouse_id = request.path_params.get("warehouse_id")
    if warehouse_id is not None and kind != "warehouse":
        held_by = await container.queries.warehouse_of(kind, UUID(id_of(object_)))
        if held_by is not None and str(held_by) != str(_uuid(str(warehouse_id), "warehouse id")):
            raise NotFound(f"{kind.capitalize()} does not exist in warehouse {warehouse_id}: {id_of(object_)}")
    return object_


# Each object's own path under /management/v1 (Lakekeeper 0.14's /actions and /grants routes hang below it)
OBJECT_PATHS = {
    "server": "/server",
    "project": "/project",
    "role": "/role/{role_id}",
    "warehouse": "/warehouse/{warehouse_id}",
    "namespace": "/warehouse/{warehouse_id}/namespace/{namespace_id}",
    "table": "/warehouse/{warehouse_id}/table/{table_id}",
    "view": "/warehouse/{warehouse_id}/view/{view_id}",
    "generic-table": "/warehouse/{warehouse_id}/generic-table/{generic_table_id}",
    "tag-definition": "/tag-definition/{tag_definition_id}",
}

_ROUTES = (
    ("server", "/server"),
    ("project", "/project"),
    ("project", "/project/{project_id}"),
    ("warehouse", "/warehouse/{warehouse_id}"),
    ("namespace", "/namespace/{namespace_id}"),
    ("table", "/warehouse/{warehouse_id}/table/{table_id}"),
    ("view", "/warehouse/{warehouse_id}/view/{view_id}"),
    ("generic-table", "/warehouse/{warehouse_id}/generic-table/{generic_table_id}"),
    ("role", "/role/{role_id}"),
    # a governance tag definition (Lakekeeper 0.14): assignments only, its actions are /tag-definition/{id}/actions
    ("tag-definition", "/tag/{tag_definition_id}"),
)


def _register(kind: str, path: str) -> None:
    async def get_assignments(container: ContainerDep, request: Request,
                              relations: list[Relation] | None = Query(default=None),
                              x_project_id: str | None = Header(default=None)):
        object_ = await located(container, kind, request, x_project_id)
        body: dict = {"assignments": await assignments(container, request, object_, relations)}
        if kind == "project":
            body["project-id"] = object_.partition(":")[2]
        return JSONResponse(body)

    async def post_assignments(container: ContainerDep, request: Request, body: UpdateAssignments,
                               x_project_id: str | None = Header(default=None),
                               by: Provenance = Depends(provenance)):
        return await update(container, request, await located(container, kind, request, x_project_id), body, by)

    async def get_access(container: ContainerDep, request: Request, principalUser: str | None = Query(default=None),
                         principalRole: str | None = Query(default=None),
                         x_project_id: str | None = Header(default=None)):
        object_ = await located(container, kind, request, x_project_id)
        return JSONResponse(await access(container, request, object_, principalUser, principalRole))

    async def get_authorizer_actions(container: ContainerDep, request: Request,
                                     principalUser: str | None = Query(default=None),
                                     principalRole: str | None = Query(default=None),
                                     x_project_id: str | None = Header(default=None)):
        object_ = await located(container, kind, request, x_project_id)
        allowed = await allowed_names(container, request, object_, principalUser, principalRole,
                                      AUTHORIZER_ACTIONS[kind])
        return JSONResponse({"allowed-actions": allowed})

    name = path.strip("/").replace("/", "_").replace("-", "_").replace("{", "").replace("}", "")
    router.add_api_route(f"{path}/assignments", get_assignments, methods=["GET"], name=f"get_{name}_assignments",
                         responses={**ok(AssignmentsResponse, f"Who is assigned what on the {kind}"),
                                    **errors(400, 403, 404)})
    router.add_api_route(f"{path}/assignments", post_assignments, methods=["POST"], status_code=204,
                         response_class=Response, name=f"update_{name}_assignments", responses=errors(400, 403, 404))
    if kind == "tag-definition":
        return
    router.add_api_route(f"{path}/access", get_access, methods=["GET"], name=f"get_{name}_access",
                         responses={**ok(AccessResponse, f"What the caller (or the principal asked) may do on the "
                                                         f"{kind}"), **errors(400, 403, 404)})
    if "{project_id}" in path:  # Lakekeeper asks a project's authorizer actions of the header's project only
        return
    router.add_api_route(f"{path}/authorizer-actions", get_authorizer_actions, methods=["GET"],
                         name=f"get_{name}_authorizer_actions",
                         responses={**ok(AccessResponse, f"Which assignments on the {kind} the caller (or the "
                                                         "principal asked) may read and hand on"),
                                    **errors(400, 403, 404)})


for _kind, _path in _ROUTES:
    _register(_kind, _path)


# ---- managed access: below a warehouse or namespace with it on, owning an object gives no right to grant ---------

class WarehouseAuthProperties(_Shape):
    managed_access: bool = Field(alias="managed-access")


class NamespaceAuthProperties(WarehouseAuthProperties):
    managed_access_inherited: bool = Field(alias="managed-access-inherited")


class SetManagedAccessRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    managed_access: StrictBool = Field(alias="managed-access")


async def auth_properties(container: Container, request: Request, kind: str) -> dict:
    """Whether managed access is on for the warehouse or namespace (and for a namespace, whether it holds there,
    by its own switch or one above it); it takes seeing the object, as Lakekeeper asks."""
    object_ = object_of(container, kind, request, None)
    await must_exist(container, object_)
    await require(container, request, "can_get_metadata", object_)
    found = await container.queries.managed_access(kind, UUID(id_of(object_)))
    if found is None:  # gone between the two reads
        raise (NoSuchWarehouse if kind == "warehouse" else NotFound)(f"{kind.capitalize()} does not exist: "
                                                                      f"{id_of(object_)}")
    body = {"managed-access": found.managed_access}
    if kind == "namespace":
        body["managed-access-inherited"] = found.inherited
    return body


async def set_managed_access(container: Container, request: Request, kind: str, body: SetManagedAccessRequest,
                             by: Provenance) -> Response:
    """Turns managed access on or off: it takes the right to grant there (``can_set_managed_access``, which is
    ``manage_grants``); refused, a 403 and nothing appended."""
    object_ = object_of(container, kind, request, None)
    await must_exist(container, object_)
    await require(container, request, "can_set_managed_access", object_)
    await run_in_threadpool(container.managed_access.set, kind, UUID(id_of(object_)), body.managed_access, by)
    return Response(status_code=200)


def _register_managed_access(kind: str, path: str, shape: type[BaseModel]) -> None:
    async def get_auth_properties(container: ContainerDep, request: Request):
        return JSONResponse(await auth_properties(container, request, kind))

    async def post_managed_access(container: ContainerDep, request: Request, body: SetManagedAccessRequest,
                                  by: Provenance = Depends(provenance)):
        return await set_managed_access(container, request, kind, body, by)

    router.add_api_route(path, get_auth_properties, methods=["GET"], name=f"get_{kind}_by_id",
                         responses={**ok(shape, f"Whether managed access is on for the {kind}"),
                                    **errors(400, 403, 404)})
    router.add_api_route(f"{path}/managed-access", post_managed_access, methods=["POST"], response_class=Response,
                         name=f"set_{kind}_managed_access", responses={200: {"description": "Recorded"},
                                                                       **errors(400, 403, 404)})


_register_managed_access("warehouse", "/warehouse/{warehouse_id}", WarehouseAuthProperties)
_register_managed_access("namespace", "/namespace/{namespace_id}", NamespaceAuthProperties)


# ---- check -----------------------------------------------------------------------------------------------------

_ID_FIELDS = {"project": "project-id", "warehouse": "warehouse-id", "namespace": "namespace-id", "table": "table-id",
              "view": "view-id", "generic-table": "generic-table-id"}


class CheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    identity: dict[str, str] | None = None
    operation: dict[str, dict[str, Any]]


# how an operation of a check may name its tabular: Lakekeeper's wire names are a table's (``table-id``, ``table``)
# for all three kinds, with the kind's own names accepted as aliases
_TABULAR_IDS = {"table": ("table-id",), "view": ("view-id", "table-id", "view_id"),
                "generic-table": ("generic-table-id", "table-id", "generic_table_id")}
_TABULAR_NAMES = {"table": ("table",), "view": ("table", "view"), "generic-table": ("table", "generic_table")}


def _field(fields: dict, *names: str) -> Any:
    return next((fields[n] for n in names if n in fields), None)


async def operation_object(container: Container, kind: str, fields: dict, x_project_id: str | None) -> str | None:
    """The object an operation of a check names: the server, a project (the header's unless ``project-id``), or an
    object by its id (``<kind>-id``), a namespace also by ``warehouse-id`` and ``namespace`` (its path), a tabular by
    ``warehouse-id``, ``namespace`` and ``table`` (``view``, ``generic-table``); None when there is no such object."""
    if kind == "server":
        return obj("server", container.settings.server_id)
    if kind == "project":
        return _project(x_project_id, container, fields.get("project-id"))
    id_ = _field(fields, *_TABULAR_IDS.get(kind, (_ID_FIELDS[kind],)))
    if id_ is None and kind != "warehouse" and "namespace" in fields:
        path, warehouse_id = fields["namespace"], _uuid(fields.get("warehouse-id"), "warehouse-id")
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            raise BadRequest("namespace is a list of names")
        if kind == "namespace":
            row = await container.queries.namespace(warehouse_id, path)
            return None if row is None else obj(kind, row.id)
        name = _field(fields, *_TABULAR_NAMES[kind])
        if not isinstance(name, str):
            raise BadRequest(f"A {kind} named by its namespace names it with table")
        found = await active_lookup(container.queries, kind)(warehouse_id, path, name)
        return None if found is None else obj(kind, found[0])
    if not isinstance(id_, str):
        raise BadRequest(f"A {kind} operation names its {_ID_FIELDS[kind]}")
    object_ = obj(kind, _uuid(id_, _ID_FIELDS[kind]))
    try:
        await must_exist(container, object_)
    except NotFound:
        return None
    return object_


async def _check(container: Container, request: Request, kind: str, fields: dict, identity: dict | None,
                 x_project_id: str | None) -> dict:
    if kind not in ACTIONS or kind in ("user", "role"):
        raise BadRequest(f"Unknown operation {kind!r}: server, project, warehouse, namespace, table, view or "
                         "generic-table")
    action = fields.get("action")
    if not isinstance(action, str) or f"can_{action}" not in ACTIONS[kind]:
        raise BadRequest(f"A {kind} has the actions {', '.join(a.removeprefix('can_') for a in ACTIONS[kind])}, "
                         f"not {action!r}")
    object_ = await operation_object(container, kind, fields, x_project_id)
    if object_ is None:
        raise (NoSuchWarehouse if kind == "warehouse" else NotFound)(f"{kind.capitalize()} does not exist")
    who, context = await identity_of(container, request, object_, identity)
    [allowed] = await container.authorizer.check_many([Check(who, f"can_{action}", object_, context)])
    return {"allowed": allowed}


async def identity_of(container: Container, request: Request, object_: str, identity: object) -> Asked:
    """Whose decision a check asks: the caller's, or the ``identity`` (``{"user": …}`` or ``{"role": …}``) named,
    which needs ``can_read_assignments`` on the object unless it is the caller."""
    if identity is None:
        return await _as_asked(container, request, object_, None)
    if not isinstance(identity, dict) or len(identity) != 1 or not ({"user", "role"} & set(identity)):
        raise BadRequest('identity is {"user": <user id>} or {"role": <role id>}')
    if "user" in identity and not isinstance(identity["user"], str):
        raise BadRequest("identity's user is a user id")
    asked = user(identity["user"]) if "user" in identity else role_members(_uuid(identity["role"], "role id"))
    return await _as_asked(container, request, object_, asked)


@router.post("/check", responses={**ok(CheckResponse, "Whether the action is allowed"), **errors(400, 403, 404)})
async def check(container: ContainerDep, request: Request, body: CheckRequest,
                x_project_id: str | None = Header(default=None)):
    """Whether the caller (or ``identity``, which needs ``can_read_assignments`` there) may do one action."""
    if len(body.operation) != 1:
        raise BadRequest("operation names exactly one of server, project, warehouse, namespace, table, view")
    [(kind, fields)] = body.operation.items()
    return JSONResponse(await _check(container, request, kind, fields, body.identity, x_project_id))


@router.get("/check", responses={**ok(CheckResponse, "Whether the action is allowed"), **errors(400, 403, 404)})
async def check_by_query(container: ContainerDep, request: Request, kind: str = Query(alias="type"),
                         action: str = Query(), id: str | None = Query(default=None),
                         principalUser: str | None = Query(default=None),
                         principalRole: str | None = Query(default=None),
                         x_project_id: str | None = Header(default=None)):
    """The same decision as POST, asked with ``type``, ``action`` and ``id`` (not for the server) in the query."""
    fields: dict = {"action": action}
    if kind in _ID_FIELDS and id is not None:
        fields[_ID_FIELDS[kind]] = id
    identity = ({"user": principalUser} if principalUser else {"role": principalRole} if principalRole else None)
    return JSONResponse(await _check(container, request, kind, fields, identity, x_project_id))
