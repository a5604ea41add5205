import orjson
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization, tabulars
from lakeledger.api.access import (
    DELEGATION_HEADER,
    credentials_endpoint,
    gives_storage_access,
    load_access,
    load_tag,
    with_access,
    with_planning,
)
from lakeledger.api.authorization import WRITE, Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep, boolean_param
from lakeledger.api.etags import etag, matches
from lakeledger.api.identifiers import parse_namespace, warehouse_id_of
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
from lakeledger.api.time_travel import as_of
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import InvalidArgument
from lakeledger.domain.metrics_report import check_report
from lakeledger.domain.provenance import Provenance
from lakeledger.services import past_tables
from lakeledger.services.metadata_files import ALL_SNAPSHOTS, REFS_SNAPSHOTS, load_result_body
from lakeledger.services.resolve import WarehouseSettings, settings_of
from lakeledger.services.table_access import NO_ACCESS
from lakeledger.services.tables import TableChange, TableState

router = APIRouter(tags=["Catalog API"], responses=errors(400, 403, 404))

JSON = "application/json"
TABLE = "table"


async def _table_result(container: Container, prefix: str, state: TableState, request: Request,
                        name: str) -> Response:
    """A create's or register's answer, with the storage access the client asked for, to the warehouse's storage as
    the command found it."""
    body = load_result_body(state.metadata_location, state.metadata)
    wh = state.warehouse or settings_of(await active_warehouse(container, prefix))
    access = NO_ACCESS
    if wh.profile().type != "file":
        assert state.table_id is not None and state.location is not None  # a create's or a register's state has them
        delegation, staged = request.headers.get(DELEGATION_HEADER), state.metadata_location is None
        refresh = credentials_endpoint(request.scope, name)
        # what needs no I/O (a signer's config, a credential vended already) is made here, STS in a thread
        cached = container.table_access.cached_for_table(wh, state.table_id, state.location, delegation,
                                                         lambda: str(request.base_url), staged=staged,
                                                         refresh_endpoint=refresh)
        access = cached if cached is not None else await run_in_threadpool(
            container.table_access.for_table, wh, state.table_id, state.location, delegation,
            str(request.base_url), staged, refresh_endpoint=refresh)
    body = with_access(body, with_planning(access, container.settings))
    return Response(body, media_type=JSON, headers=_etag_header(state.metadata_location))


def _etag_header(metadata_location: str | None) -> dict[str, str]:
    return {"etag": etag(metadata_location)} if metadata_location else {}


@router.get("/{prefix}/namespaces/{namespace}/tables", responses=ok(ListTablesResponse, "The tables of the namespace"))
async def list_tables(prefix: str, namespace: str, container: ContainerDep, paging: Page = Depends(page),
                      az: Guard = Depends(guard)):
    container, prefix = await as_of(container, prefix)
    return await tabulars.listed(container, prefix, namespace, TABLE, paging, az)


@router.post("/{prefix}/namespaces/{namespace}/tables",
             responses=ok(LoadTableResult, "The table was created (or staged, with `stage-create`)", etag=False))
async def create_table(prefix: str, namespace: str, body: CreateTableRequest, request: Request,
                       container: ContainerDep, by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await tabulars.creation(container, az, prefix, namespace, TABLE, request)
    state = await run_in_threadpool(container.tables.create, prefix, parse_namespace(namespace), body, raw, by)
    return await _table_result(container, prefix, state, request, body.name)


@router.get("/{prefix}/namespaces/{namespace}/tables/{table}",
            responses={**ok(LoadTableResult, "The table's current metadata", etag=True),
                       **bodiless("Not modified: If-None-Match names the current ETag", 304)})
async def load_table(prefix: str, namespace: str, table: str, request: Request, container: ContainerDep,
                     snapshots: str | None = Query(default=None), if_none_match: str | None = Header(default=None),
                     x_iceberg_access_delegation: str | None = Header(default=None), az: Guard = Depends(guard)):
    # x_iceberg_access_delegation documents the header; load_access reads it from the request, as the fast path does
    live = container
    container, prefix = await as_of(container, prefix)
    snapshots = (snapshots or ALL_SNAPSHOTS).lower()
    if snapshots not in (ALL_SNAPSHOTS, REFS_SNAPSHOTS):
        raise InvalidArgument(f"Invalid snapshot mode: {snapshots!r} (the snapshots parameter is all or refs)")
    table_id, metadata_location, location = (await tabulars.find(container, prefix, namespace, table, TABLE, az,
                                                                 None))[:3]
    # as Lakekeeper: seeing the table is enough for its metadata; its files need can_read_data (read-only access)
    # or can_write_data
    rights = await az.storage_rights(
        authorization.table(table_id), authorization.no_tabular(TABLE, parse_namespace(namespace), table)
    )
    # read only when needed: a file table's cached load reads no warehouse
    wh = settings_of(await active_warehouse(container, prefix)) if gives_storage_access(location, rights) else None

    def warehouse() -> WarehouseSettings:
        assert wh is not None  # asked for only when gives_storage_access holds
        return wh

    # the fast path's decision too (lakeledger/api/fast_load.py): one request, one answer
    access = await run_in_threadpool(load_access, container.table_access, container.settings, request.scope,
                                     warehouse, table_id, location, rights)
    assert access is not None  # only a cached-only decision leaves it open
    if container is not live:  # a past prefix: the past as far as it still exists (snapshots expired since left out)
        wh = wh or settings_of(await active_warehouse(container, prefix))
        latest = await live.queries.latest_metadata_location(table_id)
        past_body, covered = await run_in_threadpool(
            past_tables.load_body, container.files, container.storages.of(wh), metadata_location, latest, snapshots,
            ".".join([*parse_namespace(namespace), table]))
        tag = load_tag(covered, snapshots, access)
        if matches(if_none_match, tag):
            return Response(status_code=304, headers={"etag": tag})
        return Response(with_access(past_body, access), media_type=JSON, headers={"etag": tag})
    tag = load_tag(metadata_location, snapshots, access)
    if matches(if_none_match, tag):
        return Response(status_code=304, headers={"etag": tag})
    body = container.files.response_body(metadata_location, snapshots)
    if body is None:
        wh = wh or settings_of(await active_warehouse(container, prefix))
        body = await run_in_threadpool(container.files.load_response_body, metadata_location,
                                       container.storages.of(wh), snapshots)
    return Response(with_access(body, access), media_type=JSON, headers={"etag": tag})


@router.get("/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
            responses=ok(LoadCredentialsResponse, "Credentials for the table's files (none for a file warehouse, "
                                                  "or one whose engines sign remotely)"))
async def load_credentials(prefix: str, namespace: str, table: str, request: Request, container: ContainerDep,
                           planId: str | None = Query(default=None, max_length=1024,
                                                      description="The plan the credentials are for (server-side "
                                                                  "scan planning): a plan reads only the table's "
                                                                  "files, so they are the table's own"),
                           az: Guard = Depends(guard)):
    """Fresh credentials on every call (never a cached set, which may be the very one about to expire): engines
    call this before theirs expire, named in loadTable's config (``client.refresh-credentials-endpoint`` ...)."""
    container, prefix = await as_of(container, prefix)
    table_id, _, location = (await tabulars.find(container, prefix, namespace, table, TABLE, az, None))[:3]
    rights = await az.storage_rights(
        authorization.table(table_id), authorization.no_tabular(TABLE, parse_namespace(namespace), table)
    )
    if rights is None:
        raise az.forbidden("can_read_data", authorization.table(table_id))
    wh = settings_of(await active_warehouse(container, prefix))
    access = await run_in_threadpool(container.table_access.credentials, wh, table_id, location,
                                     str(request.base_url), rights == WRITE)
    return JSONResponse({"storage-credentials": access.storage_credentials})


@router.head("/{prefix}/namespaces/{namespace}/tables/{table}", status_code=204)
async def table_exists(prefix: str, namespace: str, table: str, container: ContainerDep, az: Guard = Depends(guard)):
    return await tabulars.found(container, prefix, namespace, table, TABLE, az)


@router.post("/{prefix}/namespaces/{namespace}/tables/{table}",
             responses=ok(CommitTableResponse, "The change was committed", etag=False))
async def update_table(prefix: str, namespace: str, table: str, body: CommitTableRequest,
                       container: ContainerDep, by: Provenance = Depends(provenance), az: Guard = Depends(guard),
                       locks: KeyedLocks = Depends(keyed_locks)):
    return await commit_table(container, az, by, locks, prefix, namespace, table, body)


async def commit_table(container: Container, az: Guard, by: Provenance, locks: KeyedLocks, prefix: str,
                       namespace: str, table: str, body: CommitTableRequest) -> Response:
    """updateTable's work, for the route and for its fast path (lakeledger/api/fast_commit.py)."""
    # a commit may create a staged table (assert-create): then it is a create in the namespace
    await authorization.tabular_action(container, az, prefix, parse_namespace(namespace), table, TABLE,
                                       "can_commit", "can_create_table")
    change = TableChange(tuple(parse_namespace(namespace)), table, body.requirements, body.updates)
    async with locks.holding(_turn_keys(prefix, [change])):
        [state] = await run_in_threadpool(container.tables.commit, prefix, [change], by)
    return Response(b'{"metadata-location":' + orjson.dumps(state.metadata_location) + b',"metadata":'
                    + state.metadata + b"}", media_type=JSON, headers=_etag_header(state.metadata_location))


@router.delete("/{prefix}/namespaces/{namespace}/tables/{table}", status_code=204)
async def drop_table(prefix: str, namespace: str, table: str, container: ContainerDep,
                     purgeRequested: str | None = Query(default=None),
                     force: str | None = Query(default=None, description="Drop it even if it is protected"),
                     by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.tabular_action(container, az, prefix, parse_namespace(namespace), table, TABLE, "can_drop")
    # Without purgeRequested (most engines never send it) the warehouse's drop-purge-default decides: "purge" for
    # managed tables as in Lakekeeper, or "keep" as the REST spec says.
    purge = boolean_param(purgeRequested, "purgeRequested", default=False) if purgeRequested else None
    await run_in_threadpool(container.tables.drop, prefix, parse_namespace(namespace), table, purge,
                            boolean_param(force, "force", default=False), by)
    return Response(status_code=204)


@router.post("/{prefix}/namespaces/{namespace}/tables/{table}/unregister",
             responses=ok(CommitTableResponse, "The table left the catalog; every file of it is kept. Its last "
                                               "metadata file and metadata, to register it elsewhere", etag=False))
async def unregister_table(prefix: str, namespace: str, table: str, container: ContainerDep,
                           by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """unregisterTable (Iceberg's REST spec after 1.11): a drop that never purges, recorded as an unregister."""
    await authorization.tabular_action(container, az, prefix, parse_namespace(namespace), table, TABLE, "can_drop")
    state = await run_in_threadpool(container.tables.unregister, prefix, parse_namespace(namespace), table, by)
    return Response(b'{"metadata-location":' + orjson.dumps(state.metadata_location) + b',"metadata":'
                    + state.metadata + b"}", media_type=JSON)


@router.post("/{prefix}/namespaces/{namespace}/register",
             responses=ok(LoadTableResult, "The table was registered", etag=False))
async def register_table(prefix: str, namespace: str, body: RegisterTableRequest, request: Request,
                         container: ContainerDep, by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await tabulars.creation(container, az, prefix, namespace, TABLE, request)
    if body.overwrite:  # replaces what a table of that name holds: a commit to it
        await authorization.tabular_action(container, az, prefix, parse_namespace(namespace), body.name, TABLE,
                                           "can_commit")
    state = await run_in_threadpool(container.tables.register, prefix, parse_namespace(namespace), body.name,
                                    body.metadata_location, body.overwrite, raw, by)
    return await _table_result(container, prefix, state, request, body.name)


@router.post("/{prefix}/namespaces/{namespace}/tables/{table}/metrics", status_code=204)
async def report_metrics(prefix: str, namespace: str, table: str, body: ReportMetricsRequest, request: Request,
                         container: ContainerDep, by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Kept as an event of its own (docs/metrics-reports.md): whoever may see the table may report on it, also
    through a past prefix (the report is about the table, now)."""
    report = await request.json()  # as the client sent it: the model only names report-type
    check_report(report)  # a bad report is refused before anything is looked up
    past, plain = await as_of(container, prefix)
    table_id = (await tabulars.find(past, plain, namespace, table, TABLE, az))[0]
    await run_in_threadpool(container.metrics_reports.record, warehouse_id_of(plain), table_id, report, by)
    return Response(status_code=204)


@router.post("/{prefix}/tables/rename", status_code=204)
async def rename_table(prefix: str, body: RenameTableRequest, container: ContainerDep,
                       by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    return await tabulars.rename(container, az, by, prefix, TABLE, body, container.tables.rename)


@router.post("/{prefix}/transactions/commit", status_code=204)
async def commit_transaction(prefix: str, body: CommitTransactionRequest, container: ContainerDep,
                             by: Provenance = Depends(provenance), az: Guard = Depends(guard),
                             locks: KeyedLocks = Depends(keyed_locks)):
    changes = []
    for requested in body.table_changes:
        if requested.identifier is None:
            raise InvalidArgument("Invalid table changes: table identifier is required")
        changes.append(TableChange(tuple(requested.identifier.namespace), requested.identifier.name,
                                   requested.requirements, requested.updates))
    for change in changes:
        await authorization.tabular_action(container, az, prefix, change.namespace, change.name, TABLE, "can_commit",
                                           "can_create_table")
    async with locks.holding(_turn_keys(prefix, changes)):
        await run_in_threadpool(container.tables.commit, prefix, changes, by)
    return Response(status_code=204)


def _turn_keys(prefix: str, changes: list[TableChange]) -> list[tuple]:
    return [(prefix, change.namespace, change.name) for change in changes]
