"""Catalog time travel on the wire: ``warehouse=<name>@<RFC 3339 instant>`` or ``<name>@seq:<n>`` in
/config, answered with the prefix ``<warehouse-id>@seq:<n>``, under which the warehouse reads as it was
at that log position.

An instant is resolved once, by /config, and the prefix carries the position: every later request of
that client reads exactly the same state, whatever has been appended since. The read routes serve such
a prefix from the catalog with validity ranges (lakeledger/projections/catalog_versions.py) instead of the live
read model, through ``as_of``; every write to it is refused before it reaches a route, by ``ReadOnlyPast``."""

from dataclasses import replace
from datetime import datetime
from uuid import UUID

from fastapi.concurrency import run_in_threadpool

from lakeledger.api.errors import error_response
from lakeledger.api.identifiers import warehouse_id_of
from lakeledger.domain import instants
from lakeledger.domain.errors import BadRequest, NoSuchWarehouse
from lakeledger.projections.catalog_queries import GenericTableRow, NamespaceRow, WarehouseRow
from lakeledger.projections.catalog_versions_queries import CatalogVersionsQueries

MARK = "@"
SEQ = "seq:"

# What a read-only client may call; /config lists only these for a past prefix.
READ_ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
]


def parse_instant(text: str) -> datetime:
    try:
        return instants.parse_instant(text)
    except ValueError as e:
        raise BadRequest(str(e)) from None


def parse_position(text: str) -> int:
    digits = text[len(SEQ):]
    if not digits.isascii() or not digits.isdigit() or len(digits) > 18:
        raise BadRequest(f"A log position is a non-negative integer (like seq:42), not {text!r}")
    return int(digits)


def past_prefix(warehouse_id: UUID, position: int) -> str:
    return f"{warehouse_id}{MARK}{SEQ}{position}"


async def resolve(ll, warehouse_id: UUID, when: str) -> int:
    """The log position ``when`` (an instant or ``seq:<n>``) names, for /config; 4xx when it names none,
    or when the warehouse did not exist yet at that position."""
    service = ll.time_travel
    if when.startswith(SEQ):
        position = await run_in_threadpool(service.settled, parse_position(when))
    else:
        # the database's clock says what is past (lakeledger/services/time_travel.py), not this process's
        position = await run_in_threadpool(service.position_at, parse_instant(when))
    await run_in_threadpool(service.ready, position)
    if not await CatalogVersionsQueries.at(ll.queries, warehouse_id, position).existed():
        raise NoSuchWarehouse(f"The warehouse did not exist yet at {when} (log position {position})")
    return position


async def as_of(ll, prefix: str) -> tuple:
    """(catalog, prefix) for a read route: ``ll`` and ``prefix`` unchanged for a live prefix; for a past
    one, a catalog whose queries answer from the catalog of then, and the plain warehouse id as prefix."""
    if MARK not in prefix:
        return ll, prefix
    warehouse, _, when = prefix.rpartition(MARK)
    if not when.startswith(SEQ):
        raise BadRequest(f"A time-travel prefix ends with @seq:<log position>, not {prefix!r}")
    warehouse_id = warehouse_id_of(warehouse)
    position = await run_in_threadpool(ll.time_travel.settled, parse_position(when))
    await run_in_threadpool(ll.time_travel.ready, position)
    return PastCatalog(ll, CatalogVersionsQueries.at(ll.queries, warehouse_id, position)), warehouse


class PastCatalog:
    """What the read routes use of the composition root, for the past: settings, the metadata-file
    cache (files never change, so it serves the past as well) and read-model queries answered from the
    catalog of then. It has no services, so nothing can be written through it."""

    def __init__(self, ll, then: CatalogVersionsQueries):
        self.settings = ll.settings
        self.files = ll.files
        self.storages = ll.storages
        self.table_access = ll.table_access
        # who may read the past is decided on today's grants
        self.authorizer = ll.authorizer
        self.queries = PastQueries(ll.queries, then)


class PastQueries:
    """The subset of AsyncCatalogQueries the read routes call, with the same answers' shapes."""

    def __init__(self, live, then: CatalogVersionsQueries):
        self._live = live
        self._then = then
        self._existed: bool | None = None

    async def warehouse(self, warehouse_id: UUID) -> WarehouseRow | None:
        # The warehouse row of now (name, status, storage access); it must also have existed then.
        if warehouse_id != self._then.warehouse_id:
            return None
        if self._existed is None:
            self._existed = await self._then.existed()
        return await self._live.warehouse(warehouse_id) if self._existed else None

    async def _visible(self, warehouse_id: UUID) -> bool:
        return await self.warehouse(warehouse_id) is not None

    async def namespace(self, warehouse_id: UUID, path: list[str]) -> NamespaceRow | None:
        return await self._then.namespace(path) if await self._visible(warehouse_id) else None

    async def child_namespaces(self, warehouse_id: UUID, parent: list[str] | None, after: list[str] | None,
                               limit: int | None) -> list[list[str]]:
        return await self._then.child_namespaces(parent, after, limit) if await self._visible(warehouse_id) else []

    async def active_table(self, warehouse_id: UUID, namespace: list[str], name: str) -> tuple | None:
        return await self._then.tabular("table", namespace, name) if await self._visible(warehouse_id) else None

    async def active_view(self, warehouse_id: UUID, namespace: list[str], name: str) -> tuple | None:
        return await self._then.tabular("view", namespace, name) if await self._visible(warehouse_id) else None

    async def active_generic_table(self, warehouse_id: UUID, namespace: list[str], name: str) -> tuple | None:
        if not await self._visible(warehouse_id):
            return None
        return await self._then.tabular("generic-table", namespace, name)

    async def generic_table(self, table_id: UUID) -> GenericTableRow | None:
        # set once at its creation: what it was created with is what it was at any time it existed (only whether
        # it is protected is today's); its name then is the one asked for (a past catalog matches names exactly)
        row = await self._live.generic_table(table_id)
        return None if row is None else replace(row, name=None)

    async def tabulars(self, namespace_id: UUID, typ: str, after: str | None, limit: int | None) -> list[str]:
        return await self._then.tabular_names(namespace_id, typ, after, limit)

    async def namespace_ids(self, warehouse_id: UUID, paths: list[list[str]]) -> dict[tuple[str, ...], UUID]:
        return await self._then.namespace_ids(paths) if await self._visible(warehouse_id) else {}

    async def tabular_ids(self, namespace_id: UUID, typ: str, names: list[str]) -> dict[str, UUID]:
        return await self._then.tabular_ids(namespace_id, typ, names)


class ReadOnlyPast:
    """Refuses every write to a past prefix before routing: the past cannot be changed, and refusing
    here means no route, service or idempotency record is ever involved. Metrics reports are let
    through: engines send them after reading, and they change nothing; so are scan planning's requests
    (plan, fetch tasks, cancel a plan): they read, and a plan holds no state to change."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            prefix, rest = _split(scope["path"])
            on_table = len(rest) >= 5 and rest[0] == "namespaces" and rest[2] == "tables"
            reads = on_table and (rest[4:] in (["metrics"], ["plan"], ["tasks"])
                                  or (scope["method"] == "DELETE" and len(rest) == 6 and rest[4] == "plan"))
            if prefix is not None and MARK in prefix and not reads:
                response = error_response(
                    403, "ForbiddenException",
                    f"{prefix} is a read-only view of the catalog as it was: {scope['method']} is refused; "
                    "write through the warehouse's live prefix")
                return await response(scope, receive, send)
        await self.app(scope, receive, send)


def _split(path: str) -> tuple[str | None, list[str]]:
    """(prefix, the segments after it) of a catalog path, under /catalog/v1, the /v1 root alias or the generic tables'
    /lakekeeper/v1."""
    parts = path.split("/")
    if parts[1:3] in (["catalog", "v1"], ["lakekeeper", "v1"]) and len(parts) > 3:
        return parts[3], parts[4:]
    if parts[1:2] == ["v1"] and len(parts) > 2:
        return parts[2], parts[3:]
    return None, []
