"""What the table and view routers share: a namespace's id, the paged list of one kind of tabular, and the
warehouse id a lookup starts from."""

from uuid import UUID

from lakeledger.domain.errors import NoSuchNamespace, NoSuchWarehouse
from lakeledger.domain.names import dotted
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.pagination import NAME, Page, fetch
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse


async def namespace_id(ll, warehouse_id: UUID, path: list[str]) -> UUID:
    row = await ll.queries.namespace(warehouse_id, path)
    if row is None:
        raise NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
    return row["id"]


async def listed(ll, prefix: str, namespace: str, typ: str, paging: Page) -> JSONResponse:
    """ListTablesResponse / ListViewsResponse: the live tables or views of a namespace, by name."""
    wh = await active_warehouse(ll, prefix)
    path = parse_namespace(namespace)
    container_id = await namespace_id(ll, wh["id"], path)
    names, token = await fetch(paging, lambda after, limit: ll.queries.tabulars(container_id, typ, after, limit), NAME)
    return JSONResponse({"identifiers": [{"namespace": path, "name": n} for n in names], "next-page-token": token})


def warehouse_id_of(prefix: str) -> UUID:
    try:
        return UUID(prefix)
    except ValueError:
        raise NoSuchWarehouse(f"Warehouse does not exist: {prefix}") from None
