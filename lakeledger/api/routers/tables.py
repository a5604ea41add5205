
import orjson
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization
from lakeledger.api.access import DELEGATION_HEADER, load_tag, with_access
from lakeledger.api.authorization import WRITE, Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import boolean_param, container
from lakeledger.api.etags import etag, matches
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.keyed_locks import KeyedLocks, keyed_locks
from lakeledger.api.models import (
    CommitTableRequest,
    CommitTransactionRequest,
    CreateTableRequest,
    RegisterTableRequest,
    RenameTableRequest,
    ReportMetricsRequest,
)
from lakeledger.api.openapi import (
    CommitTableResponse,
    ListTablesResponse,
    LoadCredentialsResponse,
    LoadTableResult,
    bodiless,
    errors,
    ok,
)
from lakeledger.api.pagination import Page, page
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.api.tabulars import listed, warehouse_id_of
from lakeledger.api.time_travel import as_of
from lakeledger.domain.errors import InvalidArgument, NoSuchTable
from lakeledger.domain.names import check_name, dotted
from lakeledger.domain.provenance import Provenance
from lakeledger.services.metadata_files import ALL_SNAPSHOTS, REFS_SNAPSHOTS, load_result_body
from lakeledger.services.resolve import settings_of
from lakeledger.services.table_access import NO_ACCESS, requested_modes
from lakeledger.services.tables import TableChange, TableState

router = APIRouter(tags=["Catalog API"], responses=errors(400, 403, 404))

JSON = "application/json"


async def _table_result(ll, prefix: str, state: TableState, request: Request) -> Response:
    """A create's or register's answer, with the storage access the client asked for."""
    body = load_result_body(state.metadata_location, state.metadata)
    wh = settings_of(await active_warehouse(ll, prefix))
    if wh.profile().type != "file":
        access = await run_in_threadpool(ll.table_access.for_table, wh, state.table_id, state.location,
                                         request.headers.get(DELEGATION_HEADER), str(request.base_url),
                                         state.metadata_location is None)
        body = with_access(body, access)
    return Response(body, media_type=JSON, headers=_etag_header(state.metadata_location))


def _etag_header(metadata_location: str | None) -> dict[str, str]:
    return {"etag": etag(metadata_location)} if metadata_location else {}



@router.get("/{prefix}/namespaces/{namespace}/tables", responses=ok(ListTablesResponse, "The tables of the namespace"))
async def list_tables(prefix: str, namespace: str, ll=Depends(container), paging: Page = Depends(page),
                      az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    return await listed(ll, prefix, namespace, "table", paging, az)


@router.post("/{prefix}/namespaces/{namespace}/tables",
             responses=ok(LoadTableResult, "The table was created (or staged, with `stage-create`)", etag=False))
async def create_table(prefix: str, namespace: str, body: CreateTableRequest, request: Request,
                       ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await request.json()
    requested_modes(request.headers.get(DELEGATION_HEADER))  # a bad header is refused before anything is done
    await authorization.create_in(ll, az, prefix, parse_namespace(namespace), "can_create_table")
    state = await run_in_threadpool(ll.tables.create, prefix, parse_namespace(namespace), body, raw, by)
    return await _table_result(ll, prefix, state, request)


async def _find_table(
    ll, prefix: str, namespace: str, table: str, az: Guard, action: str | None = authorization.SEE
) -> tuple:
    """(id, metadata_location) of the table, or 404 NoSuchTable (NoSuchWarehouse for an unknown prefix), also when
    the caller may not see it; 403 when it may see it but not do ``action`` (None: the caller decides)."""
    path = parse_namespace(namespace)
    check_name(table, "Table")
    warehouse_id = warehouse_id_of(prefix)
    row = await ll.queries.active_table(warehouse_id, path, table)
    if row is not None:
        if action is not None:
            await az.require(action, authorization.table(row[0]), authorization.no_tabular("table", path, table))
        return row
    await active_warehouse(ll, prefix)
    # NoSuchTable even when the namespace is missing: the spec lists only it for loadTable, and Java clients
    # fall back to metadata tables and branch_/tag_ names (`db.t.files` = table "files" in "db.t") only on it.
    raise NoSuchTable(f"Table does not exist: {dotted([*path, table])}")


@router.get("/{prefix}/namespaces/{namespace}/tables/{table}",
            responses={**ok(LoadTableResult, "The table's current metadata", etag=True),
                       **bodiless("Not modified: If-None-Match names the current ETag", 304)})
async def load_table(prefix: str, namespace: str, table: str, request: Request,
                     snapshots: str | None = Query(default=None), if_none_match: str | None = Header(default=None),
                     x_iceberg_access_delegation: str | None = Header(default=None), ll=Depends(container),
                     az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    snapshots = (snapshots or ALL_SNAPSHOTS).lower()
    if snapshots not in (ALL_SNAPSHOTS, REFS_SNAPSHOTS):
        raise InvalidArgument(f"Invalid snapshot mode: {snapshots!r} (the snapshots parameter is all or refs)")
    requested_modes(x_iceberg_access_delegation)
    table_id, metadata_location, location = (await _find_table(ll, prefix, namespace, table, az, None))[:3]
    # as Lakekeeper: seeing the table is enough for its metadata; its files need can_read_data (read-only access)
    # or can_write_data
    rights = await az.storage_rights(
        authorization.table(table_id), authorization.no_tabular("table", parse_namespace(namespace), table)
    )
    access, wh = NO_ACCESS, None
    if not location.startswith("file:") and rights is not None:
        wh = settings_of(await active_warehouse(ll, prefix))
        access = await run_in_threadpool(ll.table_access.for_table, wh, table_id, location,
                                         x_iceberg_access_delegation, str(request.base_url), False, rights == WRITE)
    tag = load_tag(metadata_location, snapshots, access)
    if matches(if_none_match, tag):
        return Response(status_code=304, headers={"etag": tag})
    body = ll.files.response_body(metadata_location, snapshots)
    if body is None:
        wh = wh or settings_of(await active_warehouse(ll, prefix))
        body = await run_in_threadpool(ll.files.load_response_body, metadata_location, ll.storages.of(wh), snapshots)
    return Response(with_access(body, access), media_type=JSON, headers={"etag": tag})


@router.get("/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
            responses=ok(LoadCredentialsResponse, "Credentials for the table's files (none for a file warehouse, "
                                                  "or one whose engines sign remotely)"))
async def load_credentials(prefix: str, namespace: str, table: str, request: Request, ll=Depends(container),
                           az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    table_id, _, location = (await _find_table(ll, prefix, namespace, table, az, None))[:3]
    rights = await az.storage_rights(
        authorization.table(table_id), authorization.no_tabular("table", parse_namespace(namespace), table)
    )
    if rights is None:
        raise az.forbidden("can_read_data", authorization.table(table_id))
    wh = settings_of(await active_warehouse(ll, prefix))
    access = await run_in_threadpool(ll.table_access.credentials, wh, table_id, location, str(request.base_url),
                                     rights == WRITE)
    return JSONResponse({"storage-credentials": access.storage_credentials})


@router.head("/{prefix}/namespaces/{namespace}/tables/{table}", status_code=204)
async def table_exists(prefix: str, namespace: str, table: str, ll=Depends(container), az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    await _find_table(ll, prefix, namespace, table, az)
    return Response(status_code=204)


@router.post("/{prefix}/namespaces/{namespace}/tables/{table}",
             responses=ok(CommitTableResponse, "The change was committed", etag=False))
async def update_table(prefix: str, namespace: str, table: str, body: CommitTableRequest,
                       ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard),
                       locks: KeyedLocks = Depends(keyed_locks)):
    return await commit_table(ll, az, by, locks, prefix, namespace, table, body)


async def commit_table(ll, az: Guard, by: Provenance, locks: KeyedLocks, prefix: str, namespace: str, table: str,
                       body: CommitTableRequest) -> Response:
    """updateTable's work, for the route and for its fast path (lakeledger/api/fast_commit.py)."""
    # a commit may create a staged table (assert-create): then it is a create in the namespace
    await authorization.tabular_action(ll, az, prefix, parse_namespace(namespace), table, "table", "can_commit",
                               "can_create_table")
    change = TableChange(tuple(parse_namespace(namespace)), table, body.requirements, body.updates)
    async with locks.holding(_turn_keys(prefix, [change])):
        [state] = await run_in_threadpool(ll.tables.commit, prefix, [change], by)
    return Response(b'{"metadata-location":' + orjson.dumps(state.metadata_location) + b',"metadata":'
                    + state.metadata + b"}", media_type=JSON, headers=_etag_header(state.metadata_location))


@router.delete("/{prefix}/namespaces/{namespace}/tables/{table}", status_code=204)
async def drop_table(prefix: str, namespace: str, table: str, purgeRequested: str | None = Query(default=None),
                     force: str | None = Query(default=None, description="Drop it even if it is protected"),
                     ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.tabular_action(ll, az, prefix, parse_namespace(namespace), table, "table", "can_drop")
    # Without purgeRequested (most engines never send it) the warehouse's drop-purge-default decides: "purge" for
    # managed tables as in Lakekeeper, or "keep" as the REST spec says.
    purge = boolean_param(purgeRequested, "purgeRequested", default=None)
    await run_in_threadpool(ll.tables.drop, prefix, parse_namespace(namespace), table, purge,
                            boolean_param(force, "force", default=False), by)
    return Response(status_code=204)


@router.post("/{prefix}/namespaces/{namespace}/register",
             responses=ok(LoadTableResult, "The table was registered", etag=False))
async def register_table(prefix: str, namespace: str, body: RegisterTableRequest, request: Request,
                         ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await request.json()
    requested_modes(request.headers.get(DELEGATION_HEADER))
    await authorization.create_in(ll, az, prefix, parse_namespace(namespace), "can_create_table")
    if body.overwrite:  # replaces what a table of that name holds: a commit to it
        await authorization.tabular_action(ll, az, prefix, parse_namespace(namespace), body.name, "table", "can_commit")
    state = await run_in_threadpool(ll.tables.register, prefix, parse_namespace(namespace), body.name,
                                    body.metadata_location, body.overwrite, raw, by)
    return await _table_result(ll, prefix, state, request)


@router.post("/{prefix}/namespaces/{namespace}/tables/{table}/metrics", status_code=204)
async def report_metrics(prefix: str, namespace: str, table: str, body: ReportMetricsRequest,
                         ll=Depends(container), az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    await _find_table(ll, prefix, namespace, table, az)
    return Response(status_code=204)


@router.post("/{prefix}/tables/rename", status_code=204)
async def rename_table(prefix: str, body: RenameTableRequest, ll=Depends(container),
                       by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.rename(ll, az, prefix, "table", body)
    await run_in_threadpool(ll.tables.rename, prefix, (body.source.namespace, body.source.name),
                            (body.destination.namespace, body.destination.name), by)
    return Response(status_code=204)


@router.post("/{prefix}/transactions/commit", status_code=204)
async def commit_transaction(prefix: str, body: CommitTransactionRequest, ll=Depends(container),
                             by: Provenance = Depends(provenance), az: Guard = Depends(guard),
                             locks: KeyedLocks = Depends(keyed_locks)):
    changes = []
    for change in body.table_changes:
        if change.identifier is None:
            raise InvalidArgument("Invalid table changes: table identifier is required")
        changes.append(TableChange(tuple(change.identifier.namespace), change.identifier.name,
                                   change.requirements, change.updates))
    for change in changes:
        await authorization.tabular_action(ll, az, prefix, change.namespace, change.name, "table", "can_commit",
                                   "can_create_table")
    async with locks.holding(_turn_keys(prefix, changes)):
        await run_in_threadpool(ll.tables.commit, prefix, changes, by)
    return Response(status_code=204)


def _turn_keys(prefix: str, changes: list[TableChange]) -> list[tuple]:
    return [(prefix, change.namespace, change.name) for change in changes]
