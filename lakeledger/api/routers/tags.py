"""Governance tags in Lakekeeper 0.14's shapes: a project's tag definitions (`/management/v1/tag-definition`), the
tags of warehouses, namespaces, tables, views, generic tables and table columns, and where a definition is attached.
The project is the `x-project-id` header's, else the default project; a tag on an object is named by its
definition's name (any case), looked up in the object's warehouse's project."""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Path, Query, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.lakekeeper_actions import answered, lakekeeper_action
from lakeledger.api.openapi import errors, ok
from lakeledger.api.pagination import Page, always_paged, fetch, is_time_and_id
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import authorize_project, authorize_warehouse, warehouse_row
from lakeledger.api.routers.projects import project_id_of
from lakeledger.authz.authorizer import Check
from lakeledger.authz.objects import obj, role_members, user
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest, NoSuchGenericTable, NoSuchNamespace, NoSuchTable, NoSuchView
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tag import COLUMN, NAMESPACE, WAREHOUSE, NoSuchTagDefinition
from lakeledger.projections.tags_queries import AttachmentRow, DefinitionRow, TagRow

router = APIRouter(prefix="/management/v1", tags=["Tags"])

TagScope = Literal["warehouse", "namespace", "table", "view", "generic-table", "column"]
ValueKind = Literal["marker", "free-text", "enumerated"]
TAG = "tag-definition"


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class _Request(_Model):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class TagDefinitionModel(_Model):
    id: UUID
    name: str
    description: str | None = None
    scope: list[TagScope]
    value_kind: ValueKind = Field(alias="value-kind")
    allowed_values: list[str] | None = Field(default=None, alias="allowed-values",
                                             description="An enumerated definition's values; not on list entries")
    created_at: datetime = Field(alias="created-at")
    updated_at: datetime | None = Field(default=None, alias="updated-at")


class ListTagDefinitionsResponse(_Model):
    tag_definitions: list[TagDefinitionModel] = Field(alias="tag-definitions")
    next_page_token: str | None = Field(alias="next-page-token")


class CreateTagDefinitionRequest(_Request):
    name: str
    description: str | None = None
    scope: list[TagScope]
    value_kind: ValueKind = Field(alias="value-kind")
    allowed_values: list[str] | None = Field(default=None, alias="allowed-values")


class UpdateTagDefinitionRequest(_Request):
    name: str
    description: str | None = Field(default=None, description="Absent: the description is removed")
    scope: list[TagScope] = Field(description="The whole scope: it may only be widened")
    add_allowed_values: list[str] | None = Field(default=None, alias="add-allowed-values")


class SetTagRequest(_Request):
    value: str | None = None


class AppliedTag(_Model):
    tag_definition_id: UUID = Field(alias="tag-definition-id")
    name: str
    value: str | None = None
    applied_at: datetime = Field(alias="applied-at")


class TargetTag(_Model):
    tag_definition_id: UUID = Field(alias="tag-definition-id")
    name: str
    value: str | None = None
    source: Literal["manual"]
    created_at: datetime = Field(alias="created-at")
    updated_at: datetime | None = Field(default=None, alias="updated-at")
    inherited_from: dict[str, Any] | None = Field(default=None, alias="inherited-from")


class ListTagsResponse(_Model):
    tags: list[TargetTag]


class ColumnTags(_Model):
    field_id: int = Field(alias="field-id")
    tags: list[TargetTag]


class ListColumnTagsResponse(_Model):
    columns: list[ColumnTags]


class TagAttachment(_Model):
    target: dict[str, Any]
    value: str | None = None
    source: Literal["manual"]
    created_at: datetime = Field(alias="created-at")
    updated_at: datetime | None = Field(default=None, alias="updated-at")


class ListTagAttachmentsResponse(_Model):
    attachments: list[TagAttachment]
    next_page_token: str | None = Field(alias="next-page-token")


class TagActionsResponse(_Model):
    allowed_actions: list[dict[str, str]] = Field(alias="allowed-actions")


# --- renderings ----------------------------------------------------------------------------------------------------

def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def definition_json(row: DefinitionRow, with_values: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {"id": str(row.id), "name": row.name, "description": row.description,
                            "scope": row.scope, "value-kind": row.value_kind, "created-at": _time(row.created_at),
                            "updated-at": _time(row.updated_at)}
    if with_values:
        body["allowed-values"] = row.allowed_values
    return body


def _target_id_field(kind: str) -> str:
    return "table-id" if kind == COLUMN else f"{kind}-id"


def tag_json(row: TagRow) -> dict[str, Any]:
    body: dict[str, Any] = {"tag-definition-id": str(row.definition_id), "name": row.name, "value": row.value,
                            "source": "manual", "created-at": _time(row.created_at),
                            "updated-at": _time(row.updated_at)}
    if row.source_type is not None:
        body["inherited-from"] = {"type": row.source_type, "warehouse-id": str(row.warehouse_id)}
        if row.source_type == NAMESPACE:
            body["inherited-from"]["namespace-id"] = str(row.source_id)
    return body


def attachment_json(row: AttachmentRow) -> dict[str, Any]:
    target: dict[str, Any] = {"type": row.target_type, "warehouse-id": str(row.warehouse_id)}
    if row.target_type != WAREHOUSE:
        target[_target_id_field(row.target_type)] = str(row.target_id)
    if row.target_type == COLUMN:
        target["field-id"] = row.field_id
    return {"target": target, "value": row.value, "source": "manual", "created-at": _time(row.created_at),
            "updated-at": _time(row.updated_at)}


def _attachment_key(row: AttachmentRow) -> list[str]:
    return [row.created_at.isoformat(), f"{row.target_id}/{row.target_type}/{row.field_id}"]


def _is_attachment_key(key: Any) -> bool:
    return (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)
            and is_time_and_id([key[0], str(UUID(int=0))]))


# --- definitions ---------------------------------------------------------------------------------------------------

async def definition_row(container: Container, project_id: UUID, definition_id: UUID) -> DefinitionRow:
    row = await container.tag_queries.definition(project_id, definition_id)
    if row is None:
        raise NoSuchTagDefinition(f"Tag definition does not exist in project {project_id}: {definition_id}")
    return row


async def authorize_definition(az: Guard, project_id: UUID, definition_id: UUID, action: str) -> None:
    """``action`` on the definition; one the caller may not read is missing."""
    await az.require(action, obj(TAG, definition_id),
                     NoSuchTagDefinition(f"Tag definition does not exist in project {project_id}: {definition_id}"),
                     see="can_read")


@router.get("/tag-definition",
            responses={**ok(ListTagDefinitionsResponse, "The project's tag definitions in the order they were made"),
                       **errors(400, 404)})
async def list_tag_definitions(container: ContainerDep, paging: Page = Depends(always_paged),
                               name: str | None = Query(default=None, description="A part of the name, any case"),
                               x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    project_id = project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_list_tag_definitions")
    found, next_token = await fetch(
        paging, lambda after, limit: container.tag_queries.definitions(project_id, name, after, limit),
        valid_key=is_time_and_id, key=lambda r: [r.created_at.isoformat(), str(r.id)])
    return JSONResponse({"tag-definitions": [definition_json(r, with_values=False) for r in found],
                         "next-page-token": next_token})


@router.post("/tag-definition", status_code=201,
             responses={**ok(TagDefinitionModel, "The tag definition was made", 201), **errors(400, 404, 409)})
async def create_tag_definition(container: ContainerDep, body: CreateTagDefinitionRequest,
                                x_project_id: str | None = Header(default=None), by: Provenance = Depends(provenance),
                                az: Guard = Depends(guard)):
    """Adds a definition to the project's vocabulary. Its name is unique in the project, any case; names
    starting with `system.` or `lakekeeper.` are reserved."""
    project_id = project_id_of(x_project_id, container)
    await authorize_project(az, project_id, "can_create_tag_definition")
    definition_id = await run_in_threadpool(container.tags.create, project_id, body.name, body.description,
                                            body.scope, body.value_kind, body.allowed_values, by)
    return JSONResponse(definition_json(await definition_row(container, project_id, definition_id)), status_code=201)


@router.get("/tag-definition/{tag_definition_id}", responses={**ok(TagDefinitionModel, "The tag definition"),
                                                                **errors(400, 404)})
async def get_tag_definition(container: ContainerDep, tag_definition_id: UUID,
                             x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    project_id = project_id_of(x_project_id, container)
    await authorize_definition(az, project_id, tag_definition_id, "can_read")
    return JSONResponse(definition_json(await definition_row(container, project_id, tag_definition_id)))


@router.post("/tag-definition/{tag_definition_id}",
             responses={**ok(TagDefinitionModel, "The tag definition, updated"), **errors(400, 404, 409)})
async def update_tag_definition(container: ContainerDep, tag_definition_id: UUID, body: UpdateTagDefinitionRequest,
                                x_project_id: str | None = Header(default=None), by: Provenance = Depends(provenance),
                                az: Guard = Depends(guard)):
    """Replaces name, description and scope (which may only widen), and adds allowed values to an enumerated
    definition; the value kind never changes."""
    project_id = project_id_of(x_project_id, container)
    await authorize_definition(az, project_id, tag_definition_id, "can_update")
    await run_in_threadpool(container.tags.update, project_id, tag_definition_id, body.name, body.description,
                            body.scope, body.add_allowed_values, by)
    return JSONResponse(definition_json(await definition_row(container, project_id, tag_definition_id)))


@router.delete("/tag-definition/{tag_definition_id}", status_code=204, responses=errors(400, 404, 409))
async def delete_tag_definition(container: ContainerDep, tag_definition_id: UUID,
                                x_project_id: str | None = Header(default=None), by: Provenance = Depends(provenance),
                                az: Guard = Depends(guard)):
    """Refused (409 TagDefinitionInUse) while the definition is attached to anything that exists or can still be
    undropped."""
    project_id = project_id_of(x_project_id, container)
    await authorize_definition(az, project_id, tag_definition_id, "can_delete")
    await run_in_threadpool(container.tags.delete, project_id, tag_definition_id, by)
    return Response(status_code=204)


@router.get("/tag-definition/{tag_definition_id}/attachments",
            responses={**ok(ListTagAttachmentsResponse, "Where the definition is attached, in the order attached"),
                       **errors(400, 404)})
async def list_tag_attachments(
    container: ContainerDep, tag_definition_id: UUID, paging: Page = Depends(always_paged),
    value: str | None = Query(default=None), targetType: TagScope | None = Query(default=None),
    createdAfter: datetime | None = Query(default=None), createdBefore: datetime | None = Query(default=None),
    warehouseId: UUID | None = Query(default=None), x_project_id: str | None = Header(default=None),
    az: Guard = Depends(guard),
):
    """Direct attachments only (nothing inherited), the recycle bin's objects included."""
    project_id = project_id_of(x_project_id, container)
    await authorize_definition(az, project_id, tag_definition_id, "can_read_attachments")
    await definition_row(container, project_id, tag_definition_id)
    found, next_token = await fetch(
        paging, lambda after, limit: container.tag_queries.attachments(
            tag_definition_id, value, targetType, createdAfter, createdBefore, warehouseId, after, limit),
        valid_key=_is_attachment_key, key=_attachment_key)
    return JSONResponse({"attachments": [attachment_json(r) for r in found], "next-page-token": next_token})


@router.get("/tag-definition/{tag_definition_id}/actions",
            responses={**ok(TagActionsResponse, "What the caller (or the principal asked) may do with the definition"),
                       **errors(400, 403, 404)})
async def get_tag_actions(container: ContainerDep, tag_definition_id: UUID,
                          principalUser: str | None = Query(default=None),
                          principalRole: UUID | None = Query(default=None),
                          x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    project_id = project_id_of(x_project_id, container)
    await authorize_definition(az, project_id, tag_definition_id, "can_read")
    await definition_row(container, project_id, tag_definition_id)
    object_ = obj(TAG, tag_definition_id)
    if principalUser is not None and principalRole is not None:
        raise BadRequest("Give principalUser or principalRole, not both")
    if principalUser is not None or principalRole is not None:
        await az.require("can_read_grants", object_)
    who = user(principalUser) if principalUser else role_members(principalRole) if principalRole else None
    relations = sorted(r for r in _TAG_RELATIONS if lakekeeper_action(TAG, r) is not None)
    if who is None:
        allowed = await az.allowed([(r, object_) for r in relations])
    else:
        allowed = await container.authorizer.check_many([Check(who, r, object_) for r in relations])
    actions = answered(TAG, [r for r, yes in zip(relations, allowed, strict=True) if yes])
    return JSONResponse({"allowed-actions": [{"action": a} for a in actions]})


_TAG_RELATIONS = ("can_read", "can_update", "can_delete", "can_apply", "can_remove", "can_read_attachments",
                  "can_read_grants")


# --- tags on objects -------------------------------------------------------------------------------------------------

_MISSING = {NAMESPACE: NoSuchNamespace, "table": NoSuchTable, "view": NoSuchView, "generic-table": NoSuchGenericTable,
            COLUMN: NoSuchTable}


def _object(kind: str, target_id: UUID) -> str:
    return obj("table" if kind == COLUMN else kind, target_id)


async def _target(container: Container, az: Guard, kind: str, warehouse_id: UUID, target_id: UUID,
                  action: str) -> None:
    """``action`` on the live target of the warehouse; a target that is not there, or that the caller may not see,
    is missing."""
    if kind == WAREHOUSE:
        if target_id != warehouse_id:
            raise BadRequest("A warehouse's tags are named by its own id")
        await authorize_warehouse(az, str(warehouse_id), action)
        await warehouse_row(container, str(warehouse_id))
        return
    missing = _MISSING[kind](f"{kind.capitalize()} does not exist in warehouse {warehouse_id}: {target_id}")
    await az.require(action, _object(kind, target_id), missing)
    if not await container.tag_queries.live(kind, warehouse_id, target_id):
        raise missing


async def _tags(container: Container, kind: str, warehouse_id: UUID, target_id: UUID, effective: bool) -> list[dict]:
    own = await container.tag_queries.tags(kind, target_id)
    if not effective or kind == WAREHOUSE:
        return [tag_json(r) for r in own]
    namespace_id = (await container.tag_queries.parent_namespace(kind, target_id))
    inherited = await container.tag_queries.inherited(warehouse_id, namespace_id)
    seen = {r.definition_id for r in own}
    rows = list(own)
    for row in inherited:  # nearest first: a nearer attachment of a definition supplies it
        if row.definition_id not in seen and not (row.source_type == kind and row.source_id == target_id):
            seen.add(row.definition_id)
            rows.append(row)
    return [tag_json(r) for r in rows]


async def _apply(container: Container, az: Guard, kind: str, warehouse_id: UUID, target_id: UUID,
                 field_id: int | None, tag_name: str, value: str | None, by: Provenance) -> JSONResponse:
    definition = await run_in_threadpool(container.tags.by_name, warehouse_id, tag_name)
    await az.require("can_apply", obj(TAG, definition.id),
                     NoSuchTagDefinition(f"Tag definition does not exist: {tag_name}"), see="can_read")
    applied = await run_in_threadpool(container.tags.apply, warehouse_id, (kind, target_id, field_id), tag_name,
                                      value, by)
    rows = (await container.tag_queries.column_tags(target_id, field_id) if kind == COLUMN
            else await container.tag_queries.tags(kind, target_id))
    [row] = [r for r in rows if r.definition_id == applied.id]
    return JSONResponse({"tag-definition-id": str(row.definition_id), "name": row.name, "value": row.value,
                         "applied-at": _time(row.updated_at or row.created_at)})


async def _remove(container: Container, az: Guard, kind: str, warehouse_id: UUID, target_id: UUID,
                  field_id: int | None, tag_name: str, by: Provenance) -> Response:
    definition = await run_in_threadpool(container.tags.by_name, warehouse_id, tag_name)
    await az.require("can_remove", obj(TAG, definition.id),
                     NoSuchTagDefinition(f"Tag definition does not exist: {tag_name}"), see="can_read")
    await run_in_threadpool(container.tags.remove, warehouse_id, (kind, target_id, field_id), tag_name, by)
    return Response(status_code=204)


# the target's id, under the path's own name for it
_TARGET_ID: dict[str, Any] = {name: Path(alias=name) for name in (
    "warehouse_id", "namespace_id", "table_id", "view_id", "generic_table_id")}


def _register(kind: str, path: str) -> None:
    id_param = "warehouse_id" if kind == WAREHOUSE else f"{kind.replace('-', '_')}_id"
    name = kind.replace("-", "_")

    async def list_tags(container: ContainerDep, warehouse_id: UUID, target_id: UUID = _TARGET_ID[id_param],
                        effective: bool | None = Query(default=None,
                                                       description="Also the tags inherited from the warehouse and "
                                                                   "the enclosing namespaces"),
                        x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
        await _target(container, az, kind, warehouse_id, target_id, "can_get_metadata")
        return JSONResponse({"tags": await _tags(container, kind, warehouse_id, target_id, bool(effective))})

    async def set_tag(container: ContainerDep, warehouse_id: UUID, tag_name: str, body: SetTagRequest,
                      target_id: UUID = _TARGET_ID[id_param], x_project_id: str | None = Header(default=None),
                      by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
        await _target(container, az, kind, warehouse_id, target_id, "can_set_tags")
        return await _apply(container, az, kind, warehouse_id, target_id, None, tag_name, body.value, by)

    async def delete_tag(container: ContainerDep, warehouse_id: UUID, tag_name: str,
                         target_id: UUID = _TARGET_ID[id_param], x_project_id: str | None = Header(default=None),
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
        await _target(container, az, kind, warehouse_id, target_id, "can_set_tags")
        return await _remove(container, az, kind, warehouse_id, target_id, None, tag_name, by)

    router.add_api_route(f"{path}/tags", list_tags, methods=["GET"], name=f"list_{name}_tags",
                         responses={**ok(ListTagsResponse, f"The tags of the {kind}"), **errors(400, 404)})
    router.add_api_route(f"{path}/tags/{{tag_name}}", set_tag, methods=["PUT"], name=f"set_{name}_tag",
                         responses={**ok(AppliedTag, f"The tag, applied to the {kind}"), **errors(400, 404)})
    router.add_api_route(f"{path}/tags/{{tag_name}}", delete_tag, methods=["DELETE"], status_code=204,
                         response_class=Response, name=f"delete_{name}_tag", responses=errors(400, 404))




for _kind, _path in ((WAREHOUSE, "/warehouse/{warehouse_id}"),
                     (NAMESPACE, "/warehouse/{warehouse_id}/namespace/{namespace_id}"),
                     ("table", "/warehouse/{warehouse_id}/table/{table_id}"),
                     ("view", "/warehouse/{warehouse_id}/view/{view_id}"),
                     ("generic-table", "/warehouse/{warehouse_id}/generic-table/{generic_table_id}")):
    _register(_kind, _path)


# --- column tags ---------------------------------------------------------------------------------------------------

@router.get("/warehouse/{warehouse_id}/table/{table_id}/column-tags",
            responses={**ok(ListColumnTagsResponse, "Every tagged column of the table, by Iceberg field id"),
                       **errors(400, 404)})
async def list_column_tags(container: ContainerDep, warehouse_id: UUID, table_id: UUID,
                           x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    await _target(container, az, "table", warehouse_id, table_id, "can_get_metadata")
    columns: dict[int, list[dict]] = {}
    for row in await container.tag_queries.column_tags(table_id):
        columns.setdefault(row.field_id or 0, []).append(tag_json(row))
    return JSONResponse({"columns": [{"field-id": f, "tags": tags} for f, tags in columns.items()]})


async def _field_id(container: Container, warehouse_id: UUID, table_id: UUID, column_name: str) -> int:
    return await run_in_threadpool(container.tags.field_id, warehouse_id, table_id, column_name)


@router.get("/warehouse/{warehouse_id}/table/{table_id}/column/{column_name}/tags",
            responses={**ok(ListTagsResponse, "The tags of the column"), **errors(400, 404)})
async def list_table_column_tags(container: ContainerDep, warehouse_id: UUID, table_id: UUID, column_name: str,
                                 effective: bool | None = Query(default=None,
                                                                description="Column tags are never inherited"),
                                 x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    await _target(container, az, "table", warehouse_id, table_id, "can_get_metadata")
    field_id = await _field_id(container, warehouse_id, table_id, column_name)
    return JSONResponse({"tags": [tag_json(r) for r in await container.tag_queries.column_tags(table_id, field_id)]})


@router.put("/warehouse/{warehouse_id}/table/{table_id}/column/{column_name}/tags/{tag_name}",
            responses={**ok(AppliedTag, "The tag, applied to the column"), **errors(400, 404)})
async def set_table_column_tag(container: ContainerDep, warehouse_id: UUID, table_id: UUID, column_name: str,
                               tag_name: str, body: SetTagRequest, x_project_id: str | None = Header(default=None),
                               by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """The column is named in the table's current schema (nested fields dotted: `address.zip`) and kept by its
    Iceberg field id, so the tag stays with it when it is renamed."""
    await _target(container, az, "table", warehouse_id, table_id, "can_set_tags")
    field_id = await _field_id(container, warehouse_id, table_id, column_name)
    return await _apply(container, az, COLUMN, warehouse_id, table_id, field_id, tag_name, body.value, by)


@router.delete("/warehouse/{warehouse_id}/table/{table_id}/column/{column_name}/tags/{tag_name}", status_code=204,
               responses=errors(400, 404))
async def delete_table_column_tag(container: ContainerDep, warehouse_id: UUID, table_id: UUID, column_name: str,
                                  tag_name: str, x_project_id: str | None = Header(default=None),
                                  by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await _target(container, az, "table", warehouse_id, table_id, "can_set_tags")
    field_id = await _field_id(container, warehouse_id, table_id, column_name)
    return await _remove(container, az, COLUMN, warehouse_id, table_id, field_id, tag_name, by)

