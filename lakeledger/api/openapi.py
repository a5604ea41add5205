"""The served OpenAPI document, made to describe what the server really answers.

Handlers return pre-rendered responses (the table load bytes are never re-serialised), so FastAPI cannot
infer their shapes: routes name them with ``responses=`` built here. The Iceberg shapes are pyiceberg's REST
models, renamed after the Iceberg REST spec where the spec's name differs; the Management API shapes mirror
what lakeledger/api/routers/management.py renders (Lakekeeper's). ``install`` then corrects what FastAPI's generator
gets wrong for this server and adds what middleware answers, which no route can declare."""

import copy
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field
from pyiceberg.catalog.rest import (
    ListNamespaceResponse,
    ListTablesResponse,
    ListViewsResponse,
    NamespaceResponse,
    TableResponse,
    UpdateNamespacePropertiesResponse,
    ViewResponse,
)
from pyiceberg.table import CommitTableResponse

from lakeledger.api.idempotency import MUTATIONS, SCOPES
from lakeledger.domain.storage_profile import DeleteProfile, StorageProfile

__all__ = [
    "CatalogConfig",
    "CommitTableResponse",
    "CreateNamespaceResponse",
    "CreateProjectResponse",
    "ErrorModel",
    "GetNamespaceResponse",
    "GetProjectResponse",
    "GetWarehouseResponse",
    "HistoryPage",
    "IcebergErrorResponse",
    "ListNamespacesResponse",
    "ListProjectsResponse",
    "ListTablesResponse",
    "ListViewsResponse",
    "ListWarehousesResponse",
    "LoadCredentialsResponse",
    "LoadTableResult",
    "SignedRequest",
    "LoadViewResult",
    "ServerInfo",
    "UpdateNamespacePropertiesResponse",
    "bodiless",
    "errors",
    "install",
    "ok",
]

# --- Iceberg REST shapes -------------------------------------------------------------------------------------

class ErrorModel(BaseModel):
    """What went wrong; `type` is the exception name Iceberg clients map to their own exceptions."""

    message: str
    type: str = Field(examples=["NoSuchNamespaceException"])
    code: int = Field(ge=400, le=600)
    # Never sent by this server; declared because the Iceberg spec allows it.
    stack: list[str] = Field(default_factory=list)


class IcebergErrorResponse(BaseModel):
    """Every non-2xx answer with a body."""

    # pyiceberg's ErrorResponse has no ``stack`` and allows other members; the spec allows neither.
    model_config = ConfigDict(extra="forbid")
    error: ErrorModel


class CatalogConfig(BaseModel):
    """Server-provided configuration; `overrides.prefix` is the warehouse id that catalog paths take."""

    # pyiceberg's ConfigResponse models endpoints as objects; on the wire they are "<METHOD> <path>" strings.
    model_config = ConfigDict(populate_by_name=True)
    defaults: dict[str, str]
    overrides: dict[str, str]
    endpoints: list[str]
    idempotency_key_lifetime: str = Field(alias="idempotency-key-lifetime", json_schema_extra={"format": "duration"})


class RemoteSigningConfig(BaseModel):
    """What a signer client sends unchanged with every request to the table's signing endpoint (Iceberg main's
    RemoteSigningConfig, apache/iceberg 9479711): `properties` in each request's body, `headers` on each request."""

    properties: dict[str, str] | None = None
    headers: dict[str, list[str]] | None = None


class LoadTableResult(TableResponse):
    """A table's metadata and where it is stored; `metadata-location` is null for a staged create.
    `remote-signing-config` comes with remote signing."""

    remote_signing_config: RemoteSigningConfig | None = Field(default=None, alias="remote-signing-config")


class StorageCredential(BaseModel):
    """Credentials for the files whose location starts with `prefix`."""

    prefix: str
    config: dict[str, str]


class ScanTasks(BaseModel):
    """File scan tasks (each a data file, the delete files that apply to it by index, its residual filter), and
    plan tasks to fetch more with fetchScanTasks."""

    model_config = ConfigDict(populate_by_name=True)

    delete_files: list[dict[str, Any]] | None = Field(default=None, alias="delete-files")
    file_scan_tasks: list[dict[str, Any]] | None = Field(default=None, alias="file-scan-tasks")
    plan_tasks: list[str] | None = Field(default=None, alias="plan-tasks")


class PlanningResult(ScanTasks):
    """A plan's status: `completed` with its tasks (and storage credentials when delegation was asked), or
    `submitted` (fetch the result with the plan id)."""

    status: Literal["completed", "submitted", "cancelled", "failed"]
    plan_id: str | None = Field(default=None, alias="plan-id")
    storage_credentials: list[StorageCredential] | None = Field(default=None, alias="storage-credentials")


class LoadCredentialsResponse(BaseModel):
    """loadCredentials: short-lived credentials for the table's files."""

    storage_credentials: list[StorageCredential] = Field(alias="storage-credentials")


# --- Lakekeeper's Generic Table API (/lakekeeper/v1) --------------------------------------------------------------

class _GenericTables(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class GenericTableData(_GenericTables):
    """A generic table: its name, opaque `format`, location, what its creator said of it and its protection."""

    name: str
    format: str
    base_location: str = Field(alias="base-location")
    doc: str | None = None
    properties: dict[str, str] = Field(default_factory=dict)
    table_schema: Any = Field(default=None, alias="schema", description="Free-form; never checked against its files")
    statistics: Any = Field(default=None, description="Free-form; never checked against its files")
    protected: bool


class LoadGenericTableResponse(_GenericTables):
    """A generic table, with the access to its location a load hands out (none for a create)."""

    table: GenericTableData
    config: dict[str, str] | None = None
    storage_credentials: list[StorageCredential] | None = Field(default=None, alias="storage-credentials")


class GenericTableIdentifier(_GenericTables):
    namespace: list[str]
    name: str
    id: UUID | None = None


class ListGenericTablesResponse(_GenericTables):
    identifiers: list[GenericTableIdentifier]
    next_page_token: str | None = Field(default=None, alias="next-page-token")


class SignedRequest(BaseModel):
    """The S3 request, signed: add `headers` to it and send it to `uri`."""

    uri: str
    headers: dict[str, list[str]]


class LoadViewResult(ViewResponse):
    """A view's metadata and where it is stored."""


class ListNamespacesResponse(ListNamespaceResponse):
    """Namespaces, each a list of levels. `next-page-token` is null on the last page."""


class GetNamespaceResponse(NamespaceResponse):
    """A namespace and its properties; `namespace-uuid` (as in Lakekeeper) is the id the Management API takes."""

    namespace_uuid: UUID | None = Field(default=None, alias="namespace-uuid")


class CreateNamespaceResponse(NamespaceResponse):
    """The namespace created and the properties stored for it, with its `namespace-uuid`."""

    namespace_uuid: UUID | None = Field(default=None, alias="namespace-uuid")


# --- Management API shapes (Lakekeeper's) --------------------------------------------------------------------

class _Management(BaseModel):
    model_config = ConfigDict(populate_by_name=True)


class ServerInfo(_Management):
    version: str
    lakeledger_version: str = Field(alias="lakeledger-version")
    lakekeeper_version: str = Field(alias="lakekeeper-version",
                                    description="The Lakekeeper release whose management API shapes are answered")
    license_status: dict[str, Any] = Field(alias="license-status")
    bootstrapped: bool
    server_id: UUID = Field(alias="server-id")
    default_project_id: UUID | None = Field(alias="default-project-id")
    authz_backend: str = Field(alias="authz-backend")
    aws_system_identities_enabled: bool = Field(alias="aws-system-identities-enabled")
    azure_system_identities_enabled: bool = Field(alias="azure-system-identities-enabled")
    gcp_system_identities_enabled: bool = Field(alias="gcp-system-identities-enabled")
    queues: list[str]


class CreateProjectResponse(_Management):
    project_id: UUID = Field(alias="project-id")


class GetProjectResponse(_Management):
    project_id: UUID = Field(alias="project-id")
    project_name: str = Field(alias="project-name")


class ListProjectsResponse(_Management):
    projects: list[GetProjectResponse]


class GetWarehouseResponse(_Management):
    """A warehouse. `id` and `warehouse-id` are the same: Lakekeeper clients read one or the other."""

    id: UUID
    warehouse_id: UUID = Field(alias="warehouse-id")
    name: str
    project_id: UUID = Field(alias="project-id")
    storage_profile: StorageProfile = Field(alias="storage-profile")
    storage_credential_fingerprint: str | None = Field(
        alias="storage-credential-fingerprint",
        description="Which credential the storage uses (a keyed fingerprint); the credential itself is never shown")
    delete_profile: DeleteProfile = Field(alias="delete-profile")
    drop_purge_default: Literal["purge", "keep"] = Field(
        alias="drop-purge-default", description="What a table drop without `purgeRequested` does with the files")
    name_matching: Literal["case-insensitive", "exact"] = Field(
        alias="name-matching", description="How the names of its namespaces, tables and views are matched, fixed at "
        "its creation: `case-insensitive` (the default; Lakekeeper's rule) or `exact` (warehouses created before "
        "the setting existed)")
    status: Literal["active", "inactive"]
    managed_by: Literal["self-managed", "instance-admin"] = Field(
        alias="managed-by", description="instance-admin: its settings change only by the server's admins")
    allowed_format_versions: list[int] = Field(alias="allowed-format-versions",
                                               description="Table format versions creates and upgrades may use")
    default_format_version: int | None = Field(alias="default-format-version",
                                               description="A create's version when it names none; null: v2 where "
                                                           "allowed, else the highest allowed")
    protected: bool
    updated_at: datetime | None = Field(alias="updated-at")


class TimeTravelRetention(_Management):
    """A warehouse's time-travel retention (Lakeledger's own setting; Lakekeeper has none)."""

    time_travel_retention: str | None = Field(
        alias="time-travel-retention",
        description="An ISO-8601 duration (PT1H to P36500D; answered in ISO-8601's own spelling, PT48H as P2D) "
                    "or null (none): snapshot expiry never removes a snapshot younger than it, so catalog time "
                    "travel and `VERSION AS OF` keep working inside it")


class ListWarehousesResponse(_Management):
    warehouses: list[GetWarehouseResponse]


# --- History shapes ------------------------------------------------------------------------------------------

class HistoryEntity(_Management):
    """What an event changed: its kind, id (a table's or view's is its Iceberg uuid) and its identifier then."""

    type: Literal["server", "project", "warehouse", "namespace", "table", "view", "generic-table", "user", "role",
                  "grant", "tag-definition"]
    id: UUID
    name: list[str]


class HistoryEvent(_Management):
    """One event of the log. `id` is the event's id everywhere it appears (CloudEvents, replays); `sequence` is
    its position in the log; `change` holds the event's data as recorded."""

    id: UUID
    sequence: int = Field(ge=1)
    time: datetime
    type: str = Field(examples=["table.committed"])
    actor: str
    request_id: str = Field(alias="request-id")
    warehouse_id: UUID | None = Field(alias="warehouse-id")
    entity: HistoryEntity
    summary: str = Field(examples=["appended snapshot 8123: +2 files, +1,000 rows"])
    change: dict[str, Any]


class HistoryPage(_Management):
    """Events in log order; `next-page-token` is null on the last page."""

    events: list[HistoryEvent]
    next_page_token: str | None = Field(alias="next-page-token")


# --- Events API shapes (apache/iceberg PR #12584) ---------------------------------------------------------------

class EventActor(_Management):
    id: str


class CatalogEvent(_Management):
    """One event of the log as the Events API serves it. `operation` is one of the PR's operations, selected by
    `operation-type`, or `x-lakeledger.<type>` for ours (docs/events-api.md)."""

    event_id: str = Field(alias="event-id")
    request_id: str = Field(alias="request-id")
    request_event_count: int = Field(alias="request-event-count")
    timestamp_ms: int = Field(alias="timestamp-ms")
    actor: EventActor
    operation: dict[str, Any]


class QueryEventsResponse(_Management):
    """Events in log order and the token to resume after them; an empty page still has one, to poll with."""

    continuation_token: str = Field(alias="continuation-token")
    events: list[CatalogEvent]


# --- Soft deletion and protection shapes ---------------------------------------------------------------------

class DeletedTabular(_Management):
    """A soft-deleted table, view or generic table: restorable with an undrop until `expiration-date`. `namespace-id`
    and `dropped-with` (the namespace whose recursive drop took it along, or null) are Lakeledger's additions."""

    id: UUID
    name: str
    namespace: list[str]
    namespace_id: UUID = Field(alias="namespace-id")
    typ: Literal["table", "view", "generic-table"]
    warehouse_id: UUID = Field(alias="warehouse-id")
    created_at: datetime = Field(alias="created-at")
    deleted_at: datetime = Field(alias="deleted-at")
    expiration_date: datetime = Field(alias="expiration-date")
    dropped_with: UUID | None = Field(alias="dropped-with")


class ListDeletedTabularsResponse(_Management):
    tabulars: list[DeletedTabular]
    next_page_token: str | None = Field(alias="next-page-token")


class FoundTabular(_Management):
    id: UUID
    type: Literal["table", "view", "generic-table"]
    namespace: list[str]
    name: str


class SearchTabularsResponse(_Management):
    """Live tables and views whose name starts with the prefix, in name order."""

    tabulars: list[FoundTabular]
    next_page_token: str | None = Field(alias="next-page-token")


class MoveNamespaceResponse(_Management):
    """Where a moved namespace now is; `parent-namespace-id` is null at the warehouse's root."""

    namespace: list[str]
    namespace_id: UUID = Field(alias="namespace-id")
    parent_namespace_id: UUID | None = Field(alias="parent-namespace-id")


class TestStorageResponse(BaseModel):
    ok: bool
    message: str


class ProtectionResponse(BaseModel):
    """`updated_at` is snake_case, as in Lakekeeper."""

    protected: bool
    updated_at: datetime | None = None


# --- route declarations --------------------------------------------------------------------------------------

_ERRORS = {
    400: "Bad request: malformed input, or a request the catalog refuses as it stands",
    403: "Forbidden: the caller sees the object but lacks the right (the message names the relation), the "
         "warehouse is deactivated, or the change-approval hook refused the change (the message says why)",
    404: "Not found: the warehouse, project, namespace, table or view named does not exist, or the caller may not "
         "see it",
    409: "Conflict: the object exists, is not empty, or a concurrent change won",
    413: "The request body is larger than the server accepts",
    422: "The Idempotency-Key was already used for a different request",
    424: "The change-approval hook could not be asked; nothing was changed",
    "5XX": "Server error",
}

ETAG_HEADER = {"description": "Identifies the metadata version and the snapshots included (`snapshots` query "
                              "parameter); send it back in If-None-Match to revalidate",
               "schema": {"type": "string"}}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """Iceberg ErrorModel answers, for a router's or a route's ``responses=``."""
    return {code: {"model": IcebergErrorResponse, "description": _ERRORS[code]} for code in codes}


def ok(model: type[BaseModel], description: str, status: int = 200, etag: bool | None = None) -> dict:
    """The success answer of a route whose handler renders its own body. ``etag``: None = no ETag header,
    False = sometimes, True = always."""
    answer: dict[str, Any] = {"model": model, "description": description}
    if etag is not None:
        answer["headers"] = {"ETag": {**ETAG_HEADER, "required": etag}}
    return {status: answer}


def bodiless(description: str, status: int = 200) -> dict:
    return {status: {"description": description}}


# --- the document --------------------------------------------------------------------------------------------

_REF = "#/components/schemas/"
_IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "description": "Makes a retry safe: the first final answer is stored and replayed to every request with "
                   "the same key; the change is applied once. A malformed key is answered 400, a key already "
                   "used for another request 422.",
    "schema": {"type": "string", "format": "uuid", "minLength": 36, "maxLength": 36},
}


def install(app: FastAPI) -> None:
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            _declare_refusals(app)
            app.openapi_schema = _describe(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _declare_refusals(app: FastAPI) -> None:
    """Every route that asks the authorizer (it depends on api.authorization.guard) may answer 403."""
    from fastapi.routing import APIRoute

    from lakeledger.api.authorization import guard

    def asks(dependant) -> bool:
        return any(d.call is guard or asks(d) for d in dependant.dependencies)

    def routes(container):
        for route in container.routes:
            # FastAPI 0.165 keeps an included router as one entry, its routes on the router itself
            inner = getattr(route, "original_router", None)
            yield from routes(inner) if inner is not None else (route,)

    for route in routes(app):
        if isinstance(route, APIRoute) and 403 not in route.responses and asks(route.dependant):
            route.responses[403] = errors(403)[403]


def _describe(document: dict[str, Any]) -> dict[str, Any]:
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    if IcebergErrorResponse.__name__ not in schemas:  # no route declared an error
        _add_component(schemas, IcebergErrorResponse)
    error_content = {"application/json": {"schema": {"$ref": _REF + IcebergErrorResponse.__name__}}}
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            for status, response in list(responses.items()):
                if _is_fastapi_validation_error(response):
                    # validation errors are answered 400 in the ErrorModel shape (lakeledger/api/errors.py)
                    del responses[status]
                    continue
                for content in response.get("content", {}).values():
                    schema = content.get("schema", {})
                    # FastAPI types the body of a response class that is not its own JSONResponse (ours renders
                    # with orjson) as a string, and merges a declared model into that.
                    if "$ref" in schema and schema.get("type") == "string":
                        del schema["type"]
            # lakeledger/api/context.py refuses oversized bodies before any route runs, on every path.
            _add_error(responses, 413, error_content)
            _add_error(responses, "5XX", error_content)
            if method.upper() in MUTATIONS and path.startswith(SCOPES):
                # lakeledger/api/idempotency.py answers these before the route, or instead of it.
                operation.setdefault("parameters", []).append(dict(_IDEMPOTENCY_KEY))
                for status in (400, 409, 422):
                    _add_error(responses, status, error_content)
            if method == "head":
                # HEAD answers carry no body, errors included.
                for status, response in responses.items():
                    if not str(status).startswith("2"):
                        response.pop("content", None)
            operation["responses"] = dict(sorted(responses.items()))
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    return document


def _is_fastapi_validation_error(response: dict) -> bool:
    schema = response.get("content", {}).get("application/json", {}).get("schema", {})
    return schema.get("$ref") == _REF + "HTTPValidationError"


def _add_error(responses: dict, status: int | str, content: dict) -> None:
    if str(status) not in responses:
        responses[str(status)] = {"description": _ERRORS[status], "content": copy.deepcopy(content)}


def _add_component(schemas: dict, model: type[BaseModel]) -> None:
    schema = model.model_json_schema(ref_template=_REF + "{model}", mode="serialization")
    schemas.update(schema.pop("$defs", {}))
    schemas[model.__name__] = schema

