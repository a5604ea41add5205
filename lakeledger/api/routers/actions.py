"""Lakekeeper 0.14's action introspection: "what may I do here" on every object kind (``GET …/actions``), and many
decisions in one call (``POST /management/v1/action/batch-check``), in Lakekeeper's catalog-action names
(lakeledger/api/lakekeeper_actions.py ``CATALOG_ACTIONS``).

Both are the permission endpoints' core (lakeledger/api/routers/permissions.py): the same existence check, the same
rule for asking on someone else's behalf (``can_read_assignments`` on the object), the same batch of OpenFGA checks,
with a different vocabulary. A user is no object of the model: another user's actions are the caller's user
rights on the server, and a caller may do everything to its own user."""

from typing import Any

from fastapi import APIRouter, Header, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api.context import principal
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.lakekeeper_actions import CATALOG_ACTIONS, USER_ACTIONS
from lakeledger.api.openapi import errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.permissions import (
    OBJECT_PATHS,
    allowed_names,
    identity_of,
    located,
    operation_object,
    require,
)
from lakeledger.authz.authorizer import Check
from lakeledger.authz.objects import obj
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest, NoSuchWarehouse, NotFound

router = APIRouter(prefix="/management/v1", tags=["Permissions"])

MAX_CHECKS = 1000  # one batch of decisions: a bound on the work a single request asks of OpenFGA


class _Shape(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ActionKind(_Shape):
    action: str


class ActionsResponse(_Shape):
    allowed_actions: list[ActionKind] = Field(alias="allowed-actions")


def _kinds(names: list[str]) -> dict:
    return {"allowed-actions": [{"action": name} for name in names]}


# a tag definition's actions are the tags router's (/tag-definition/{id}/actions)
_WITH_ACTIONS = ("server", "project", "role", "warehouse", "namespace", "table", "view", "generic-table")


def _register(kind: str, path: str) -> None:
    async def get_actions(container: ContainerDep, request: Request, principalUser: str | None = Query(default=None),
                          principalRole: str | None = Query(default=None),
                          x_project_id: str | None = Header(default=None)):
        object_ = await located(container, kind, request, x_project_id)
        return JSONResponse(_kinds(await allowed_names(container, request, object_, principalUser, principalRole,
                                                       CATALOG_ACTIONS[kind])))

    name = path.strip("/").replace("/", "_").replace("-", "_").replace("{", "").replace("}", "")
    router.add_api_route(f"{path}/actions", get_actions, methods=["GET"], name=f"get_{name}_actions",
                         responses={**ok(ActionsResponse, f"What the caller (or the principal asked) may do on the "
                                                          f"{kind}"), **errors(400, 403, 404)})


for _kind in _WITH_ACTIONS:
    _register(_kind, OBJECT_PATHS[_kind])


@router.get("/user/{user_id}/actions",
            responses={**ok(ActionsResponse, "What the caller (or the principal asked) may do to the user"),
                       **errors(400, 403)})
async def get_user_actions(container: ContainerDep, request: Request, user_id: str,
                           principalUser: str | None = Query(default=None),
                           principalRole: str | None = Query(default=None)):
    caller = principal(request).id
    if principalRole is None and (principalUser or caller) == user_id:  # a user may do everything to itself
        if principalUser not in (None, caller):
            await require(container, request, "can_read_assignments", obj("server", container.settings.server_id))
        return JSONResponse(_kinds([name for name, _ in USER_ACTIONS]))
    server = obj("server", container.settings.server_id)
    return JSONResponse(_kinds(await allowed_names(container, request, server, principalUser, principalRole,
                                                   USER_ACTIONS)))


# ---- batch-check ------------------------------------------------------------------------------------------------

class BatchCheckRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    checks: list[Any]
    error_on_not_found: bool = Field(default=False, alias="error-on-not-found")


class BatchCheckResult(_Shape):
    allowed: bool
    id: str | None = None


class BatchCheckResponse(_Shape):
    results: list[BatchCheckResult]


_KINDS = ("server", "project", "warehouse", "namespace", "table", "view", "generic-table")


async def _decision(container: Container, request: Request, item: object, error_on_not_found: bool,
                    x_project_id: str | None) -> Check | None:
    """The question one check item asks (who, which relation, on what); None when its object does not exist and
    that is to be answered as a denial."""
    if not isinstance(item, dict) or not isinstance(item.get("operation"), dict) or set(item) - {
            "id", "identity", "operation"}:
        raise BadRequest('A check is {"operation": {<kind>: {"action": …, …}}, "identity"?: …, "id"?: …}')
    if len(item["operation"]) != 1:
        raise BadRequest(f"An operation names exactly one of {', '.join(_KINDS)}")
    [(kind, fields)] = item["operation"].items()
    if kind not in _KINDS or not isinstance(fields, dict):
        raise BadRequest(f"Unknown operation {kind!r}: one of {', '.join(_KINDS)}")
    vocabulary = dict(CATALOG_ACTIONS[kind])
    action = fields.get("action")
    if not isinstance(action, str) or action not in vocabulary:
        raise BadRequest(f"A {kind} has the actions {', '.join(vocabulary)}, not {action!r}")
    object_ = await operation_object(container, kind, fields, x_project_id)
    if object_ is None:
        if error_on_not_found:
            raise (NoSuchWarehouse if kind == "warehouse" else NotFound)(f"The {kind} of check does not exist")
        return None
    who, context = await identity_of(container, request, object_, item.get("identity"))
    return Check(who, vocabulary[action], object_, context)


@router.post("/action/batch-check",
             responses={**ok(BatchCheckResponse, "One answer per check, in order"), **errors(400, 403, 404)})
async def batch_check(container: ContainerDep, request: Request, body: BatchCheckRequest,
                      x_project_id: str | None = Header(default=None)):
    """Many decisions in one call, each for the caller or (with ``can_read_assignments`` on its object) the user or
    role it names; an object that does not exist is a denial, or 404 with ``error-on-not-found``."""
    if len(body.checks) > MAX_CHECKS:
        raise BadRequest(f"At most {MAX_CHECKS} checks per request, not {len(body.checks)}")
    ids = []
    for index, item in enumerate(body.checks):
        given = item.get("id") if isinstance(item, dict) else None
        if given is not None and not isinstance(given, str):
            raise BadRequest("A check's id is a string")
        ids.append(given if given is not None else str(index))
    asked = [await _decision(container, request, item, body.error_on_not_found, x_project_id)
             for item in body.checks]
    questions = [c for c in asked if c is not None]
    answers = iter(await container.authorizer.check_many(questions) if questions else [])
    return JSONResponse({"results": [{"id": id_, "allowed": c is not None and next(answers)}
                                     for id_, c in zip(ids, asked, strict=True)]})
