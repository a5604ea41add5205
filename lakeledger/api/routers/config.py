from uuid import UUID

from fastapi import APIRouter, Depends, Header, Query

from lakeledger.api import authorization, time_travel
from lakeledger.api.access import planning_config
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import CatalogConfig, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.projects import project_id_of
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest, NoSuchWarehouse, WarehouseInactive
from lakeledger.domain.storage_profile import catalog_defaults
from lakeledger.domain.warehouse import parse_storage_profile
from lakeledger.projections.catalog_queries import WarehouseRow

router = APIRouter(tags=["Configuration API"], responses=errors(400, 403, 404))

# Exactly what this server serves; clients skip what is not listed.
ENDPOINTS = [
    "GET /v1/{prefix}/namespaces",
    "POST /v1/{prefix}/namespaces",
    "GET /v1/{prefix}/namespaces/{namespace}",
    "HEAD /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}",
    "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables",
    "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister",
    "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/register",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
    "POST /v1/{prefix}/tables/rename",
    "POST /v1/{prefix}/transactions/commit",
    "GET /v1/{prefix}/namespaces/{namespace}/views",
    "POST /v1/{prefix}/namespaces/{namespace}/views",
    "GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}",
    "POST /v1/{prefix}/namespaces/{namespace}/register-view",
    "POST /v1/{prefix}/views/rename",
    "POST /v1/{prefix}/events",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks",
]


@router.get("/config", responses=ok(CatalogConfig, "The catalog configuration of a warehouse"))
async def get_config(container: ContainerDep, warehouse: str | None = Query(default=None),
                     x_project_id: str | None = Header(default=None),
                     az: Guard = Depends(guard)) -> JSONResponse:
    warehouse = warehouse or container.settings.default_warehouse
    if not warehouse:
        raise BadRequest("Query parameter 'warehouse' is required: the name of a warehouse "
                         "(or set LAKELEDGER__DEFAULT_WAREHOUSE)")
    row = await _warehouse(container, x_project_id, warehouse)
    when = None
    if row is None and time_travel.MARK in warehouse:
        # <warehouse>@<instant> or <warehouse>@seq:<n>: a read-only view of the past (lakeledger/api/time_travel.py)
        warehouse, _, when = warehouse.rpartition(time_travel.MARK)
        row = await _warehouse(container, x_project_id, warehouse)
    if row is None:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse}")
    await az.require("can_get_config", authorization.warehouse(row.id), NoSuchWarehouse(f"Warehouse does not exist: "
                                                                                   f"{warehouse}"))
    if row.status != "active":
        raise WarehouseInactive(f"Warehouse {row.name} is deactivated")
    prefix, endpoints = str(row.id), ENDPOINTS
    if when is not None:
        prefix = time_travel.past_prefix(row.id, await time_travel.resolve(container, row.id, when))
        endpoints = time_travel.READ_ENDPOINTS
    defaults = catalog_defaults(parse_storage_profile(row.storage_profile), row.delete_profile.get("type") == "soft")
    # pyiceberg reads the planning mode from its catalog properties; Java from loadTable's config (as well)
    defaults.update(planning_config(container.settings))
    return JSONResponse({
        "defaults": defaults,
        # URL-encoded, as clients expect it; paths accept it and the unit separator 0x1F
        "overrides": {"prefix": prefix, "namespace-separator": container.settings.namespace_separator},
        "endpoints": endpoints,
        "idempotency-key-lifetime": f"PT{container.settings.idempotency_key_lifetime_minutes}M",
    })


async def _warehouse(container: Container, x_project_id: str | None, ref: str) -> WarehouseRow | None:
    """The warehouse a client names, by id or by name in its project."""
    try:
        row = await container.queries.warehouse(UUID(ref))
    except ValueError:
        row = None
    if row is not None:
        return row
    project, slash, name = ref.partition("/")
    if slash:
        # <project-id>/<name>: Lakekeeper's way to name a warehouse of another project than the header's
        try:
            return await container.queries.warehouse_by_name(UUID(project), name)
        except ValueError:
            pass
    return await container.queries.warehouse_by_name(project_id_of(x_project_id, container), ref)
