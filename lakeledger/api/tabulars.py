"""What the table and view routers share: a namespace's id, the paged list of one kind of tabular, and the
warehouse id a lookup starts from."""

from uuid import UUID

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, fetch_visible
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.pagination import NAME, Page
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.domain.errors import NoSuchNamespace, NoSuchWarehouse
from lakeledger.domain.names import dotted


async def namespace_id(ll, warehouse_id: UUID, path: list[str]) -> UUID:
    row = await ll.queries.namespace(warehouse_id, path)
    if row is None:
        raise NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
    return row["id"]


async def listed(ll, prefix: str, namespace: str, typ: str, paging: Page, az: Guard) -> JSONResponse:
    """ListTablesResponse / ListViewsResponse: the live tables or views of a namespace the caller may see, by
    name."""
    wh = await active_warehouse(ll, prefix)
    path = parse_namespace(namespace)
    container_id = await namespace_id(ll, wh["id"], path)
    await az.require(f"can_list_{typ}s", authorization.namespace(container_id),
                     NoSuchNamespace(f"Namespace does not exist: {dotted(path)}"))

    async def objects(names):
        ids = await ll.queries.tabular_ids(container_id, typ, list(names))
        return [authorization.tabular(typ, ids[n]) if n in ids else None for n in names]

    names, token = await fetch_visible(
        az, paging, lambda after, limit: ll.queries.tabulars(container_id, typ, after, limit), NAME,
        lambda name: name, objects, "can_include_in_list")
    return JSONResponse({"identifiers": [{"namespace": path, "name": n} for n in names], "next-page-token": token})


def warehouse_id_of(prefix: str) -> UUID:
    try:
        return UUID(prefix)
    except ValueError:
        raise NoSuchWarehouse(f"Warehouse does not exist: {prefix}") from None
