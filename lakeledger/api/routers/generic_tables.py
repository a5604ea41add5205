"""Lakekeeper's Generic Table API (``/lakekeeper/v1``): non-Iceberg tables (Lance, Delta, Parquet folders) named in
a namespace beside Iceberg tables and views, with a format, a location and credentials for it. What they share with
tables and views (finding, listing, renaming, authorization) is api/tabulars.py's; what a caller may reach of the
files is the same TableAccess as a table's (services/table_access.py)."""

from typing import Any
from uuid import UUID

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization, tabulars
from lakeledger.api.access import gives_storage_access
from lakeledger.api.authorization import WRITE, Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep, boolean_param
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.models import CreateGenericTableRequest, RenameTableRequest
from lakeledger.api.openapi import (
    ListGenericTablesResponse,
    LoadCredentialsResponse,
    LoadGenericTableResponse,
    errors,
    ok,
)
from lakeledger.api.pagination import Page, page
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.api.time_travel import as_of
from lakeledger.domain.generic_table import check_description
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import GENERIC_TABLE
from lakeledger.services.resolve import settings_of
from lakeledger.services.table_access import NO_ACCESS, Access

router = APIRouter(prefix="/lakekeeper/v1", tags=["Generic Table API"], responses=errors(400, 403, 404))


@router.get("/{prefix}/namespaces/{namespace}/generic-tables",
            responses=ok(ListGenericTablesResponse, "The generic tables of the namespace"))
async def list_generic_tables(prefix: str, namespace: str, container: ContainerDep, paging: Page = Depends(page),
                              az: Guard = Depends(guard)):
    """ListGenericTablesResponse: the live generic tables of the namespace the caller may see, by name, with ids."""
    container, prefix = await as_of(container, prefix)
    return await tabulars.listed(container, prefix, namespace, GENERIC_TABLE, paging, az, identified=True)


@router.post("/{prefix}/namespaces/{namespace}/generic-tables",
             responses={**ok(LoadGenericTableResponse, "The generic table was created"), **errors(409)})
async def create_generic_table(prefix: str, namespace: str, body: CreateGenericTableRequest, request: Request,
                               container: ContainerDep, by: Provenance = Depends(provenance),
                               az: Guard = Depends(guard)):
    """LoadGenericTableResponse of the new table; as Lakekeeper, without credentials (a load hands them out)."""
    check_description(body.format, body.table_schema, body.statistics)
    await tabulars.creation(container, az, prefix, namespace, GENERIC_TABLE, request)
    description = {"format": body.format, "doc": body.doc, "properties": body.properties or {},
                   "schema": body.table_schema, "statistics": body.statistics}
    state = await run_in_threadpool(container.generic_tables.create, prefix, parse_namespace(namespace), body.name,
                                    body.base_location, description, by)
    return JSONResponse({"table": {"name": body.name, "base-location": state.location, "protected": False,
                                   **_described(description)}})


@router.get("/{prefix}/namespaces/{namespace}/generic-tables/{table}",
            responses=ok(LoadGenericTableResponse, "The generic table, with access to its location"))
async def load_generic_table(prefix: str, namespace: str, table: str, request: Request, container: ContainerDep,
                             x_iceberg_access_delegation: str | None = Header(default=None),
                             az: Guard = Depends(guard)):
    """LoadGenericTableResponse: what it was created with, and the access to its location the caller's rights and
    the delegation it asks for give (as a table's load)."""
    container, prefix = await as_of(container, prefix)
    table_id, _, location = (await tabulars.find(container, prefix, namespace, table, GENERIC_TABLE, az, None))[:3]
    access = await _access(container, az, prefix, namespace, table, table_id, location, request,
                           x_iceberg_access_delegation)
    row = await container.queries.generic_table(table_id)
    if row is None:  # created and dropped between the two reads: gone
        raise authorization.no_tabular(GENERIC_TABLE, parse_namespace(namespace), table)
    described = {"format": row.format, "doc": row.doc, "properties": row.properties, "schema": row.schema,
                 "statistics": row.statistics}
    # the name as it is spelt, whatever spelling found it
    body: dict[str, Any] = {"table": {"name": row.name or table, "base-location": location, "protected": row.protected,
                                      **_described(described)}}
    if access is not NO_ACCESS:
        body["config"] = access.config
        body["storage-credentials"] = access.storage_credentials
    return JSONResponse(body)


@router.get("/{prefix}/namespaces/{namespace}/generic-tables/{table}/credentials",
            responses=ok(LoadCredentialsResponse, "Credentials for its location (none where the warehouse vends none)"))
async def load_generic_table_credentials(prefix: str, namespace: str, table: str, request: Request,
                                         container: ContainerDep, az: Guard = Depends(guard)):
    """LoadGenericTableCredentialsResponse: vended credentials for its location, if its warehouse vends them."""
    container, prefix = await as_of(container, prefix)
    table_id, _, location = (await tabulars.find(container, prefix, namespace, table, GENERIC_TABLE, az, None))[:3]
    rights = await az.storage_rights(authorization.tabular(GENERIC_TABLE, table_id),
                                     authorization.no_tabular(GENERIC_TABLE, parse_namespace(namespace), table))
    if rights is None:
        raise az.forbidden("can_read_data", authorization.tabular(GENERIC_TABLE, table_id))
    wh = settings_of(await active_warehouse(container, prefix))
    access = await run_in_threadpool(container.table_access.credentials, wh, table_id, location,
                                     str(request.base_url), rights == WRITE, GENERIC_TABLE)
    return JSONResponse({"storage-credentials": access.storage_credentials})


@router.delete("/{prefix}/namespaces/{namespace}/generic-tables/{table}", status_code=204, responses=errors(409))
async def drop_generic_table(prefix: str, namespace: str, table: str, container: ContainerDep,
                             purgeRequested: str | None = Query(default=None),
                             force: str | None = Query(default=None, description="Drop it even if it is protected"),
                             by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Soft in a warehouse with a soft delete profile (undrop it from the recycle bin), final otherwise; its files
    go when purgeRequested (or the warehouse's drop-purge-default) says so."""
    path = parse_namespace(namespace)
    await authorization.tabular_action(container, az, prefix, path, table, GENERIC_TABLE, "can_drop")
    purge = boolean_param(purgeRequested, "purgeRequested", default=False) if purgeRequested else None
    await run_in_threadpool(container.generic_tables.drop, prefix, path, table, purge,
                            boolean_param(force, "force", default=False), by)
    return Response(status_code=204)


@router.post("/{prefix}/generic-tables/rename", status_code=204, responses=errors(409))
async def rename_generic_table(prefix: str, body: RenameTableRequest, container: ContainerDep,
                               by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    return await tabulars.rename(container, az, by, prefix, GENERIC_TABLE, body, container.generic_tables.rename)


async def _access(container, az: Guard, prefix: str, namespace: str, table: str, table_id: UUID, location: str,
                  request: Request, delegation: str | None) -> Access:
    """As a table's load: seeing it is enough for its description; its files need can_read_data (read-only
    credentials) or can_write_data."""
    rights = await az.storage_rights(authorization.tabular(GENERIC_TABLE, table_id),
                                     authorization.no_tabular(GENERIC_TABLE, parse_namespace(namespace), table))
    if not gives_storage_access(location, rights):
        return NO_ACCESS
    wh = settings_of(await active_warehouse(container, prefix))
    return await run_in_threadpool(container.table_access.for_table, wh, table_id, location, delegation,
                                   str(request.base_url), False, rights == WRITE, GENERIC_TABLE)


def _described(description: dict[str, Any]) -> dict[str, Any]:
    """GenericTableData's fields of what the table was created with; the ones never given are left out."""
    return {key: value for key, value in description.items() if value is not None}
