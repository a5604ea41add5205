"""What the table and view routers share: finding a live table or view for a read (and answering whether it is
there), the checks before a create or a register, the rename, the paged list of one kind and a namespace's id.
``typ`` says which kind: "table", "view" or "generic-table", the word of the read model and of authorization's
objects."""

from collections.abc import Callable
from typing import Any
from uuid import UUID

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, fetch_visible, relation_word
from lakeledger.api.identifiers import parse_namespace, warehouse_id_of
from lakeledger.api.models import RenameTableRequest
from lakeledger.api.pagination import NAME, Page
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.api.time_travel import as_of
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import NoSuchNamespace
from lakeledger.domain.names import check_name, dotted
from lakeledger.domain.provenance import Provenance
from lakeledger.projections.catalog_queries import NamespaceRow


async def namespace_row(container, warehouse_id: UUID, path: list[str]) -> NamespaceRow:
    row = await container.queries.namespace(warehouse_id, path)
    if row is None:
        raise NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
    return row


async def listed(container, prefix: str, namespace: str, typ: str, paging: Page, az: Guard,
                 identified: bool = False) -> JSONResponse:
    """ListTablesResponse / ListViewsResponse / ListGenericTablesResponse: the live tables, views or generic tables of
    a namespace the caller may see, by name; ``identified``: each with its id (as Lakekeeper lists generic tables,
    whose other answers do not carry it)."""
    wh = await active_warehouse(container, prefix)
    path = parse_namespace(namespace)
    found = await namespace_row(container, wh.id, path)
    container_id, path = found.id, found.path  # the namespace as spelt, whatever case the request used
    await az.require(f"can_list_{relation_word(typ)}s", authorization.namespace(container_id),
                     NoSuchNamespace(f"Namespace does not exist: {dotted(path)}"))

    async def objects(names):
        ids = await container.queries.tabular_ids(container_id, typ, list(names))
        return [authorization.tabular(typ, ids[n]) if n in ids else None for n in names]

    names, token = await fetch_visible(
        az, paging, lambda after, limit: container.queries.tabulars(container_id, typ, after, limit), NAME,
        lambda name: name, objects, "can_include_in_list")
    ids = await container.queries.tabular_ids(container_id, typ, list(names)) if identified and names else {}
    identifiers = [{"namespace": path, "name": n, **({"id": str(ids[n])} if n in ids else {})} for n in names]
    return JSONResponse({"identifiers": identifiers, "next-page-token": token})


async def find(container, prefix: str, namespace: str, name: str, typ: str, az: Guard,
               action: str | None = authorization.SEE) -> tuple:
    """The read model's row of the live table or view (id, metadata_location, location, ...), or the 404 for what is
    missing: the warehouse, or else the table or view, also when the caller may not see it; 403 when it may see it
    but not do ``action`` (None: the caller decides). ``container``: the live one, or a catalog of the past.

    A table or view in a namespace that does not exist is a missing table or view, not a missing namespace: the spec
    lists only NoSuchTable for loadTable, and Java clients fall back to metadata tables and branch_/tag_ names
    (`db.t.files` = table "files" in "db.t") only on it; for a view Iceberg's reference server answers NoSuchView
    (Java's loadView raises it), as it does for a table of that name."""
    path = parse_namespace(namespace)
    check_name(name, typ.capitalize())
    warehouse_id = warehouse_id_of(prefix)
    row = await authorization.active_lookup(container.queries, typ)(warehouse_id, path, name)
    if row is not None:
        if action is not None:
            await az.require(action, authorization.tabular(typ, row[0]), authorization.no_tabular(typ, path, name))
        return row
    await active_warehouse(container, prefix)
    raise authorization.no_tabular(typ, path, name)


async def found(container, prefix: str, namespace: str, name: str, typ: str, az: Guard) -> Response:
    """204 when the live table or view is there for the caller to see (now, or at a past prefix's time), else
    ``find``'s 404."""
    container, prefix = await as_of(container, prefix)
    await find(container, prefix, namespace, name, typ, az)
    return Response(status_code=204)


async def creation(container: Container, az: Guard, prefix: str, namespace: str, typ: str,
                   request: Request) -> dict[str, Any]:
    """The body of a create or a register as the client sent it (the created object records it), once the caller
    may create a ``typ`` in the namespace."""
    raw: dict[str, Any] = await request.json()
    await authorization.create_in(container, az, prefix, parse_namespace(namespace), f"can_create_{relation_word(typ)}")
    return raw


async def rename(container: Container, az: Guard, by: Provenance, prefix: str, typ: str, body: RenameTableRequest,
                 service_rename: Callable[[str, tuple[list[str], str], tuple[list[str], str], Provenance], None]
                 ) -> Response:
    await authorization.rename(container, az, prefix, typ, body)
    await run_in_threadpool(service_rename, prefix, (body.source.namespace, body.source.name),
                            (body.destination.namespace, body.destination.name), by)
    return Response(status_code=204)
