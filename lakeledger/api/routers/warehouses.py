from uuid import UUID

from lakeledger.bootstrap import Container
from lakeledger.domain.errors import NoSuchWarehouse, WarehouseInactive
from lakeledger.projections.catalog_queries import WarehouseRow


async def active_warehouse(container: Container, prefix: str) -> WarehouseRow:
    """The warehouse a catalog prefix names (its id), which must exist and be active."""
    try:
        warehouse_id = UUID(prefix)
    except ValueError:
        raise NoSuchWarehouse(f"Warehouse does not exist: {prefix}") from None
    row = await container.queries.warehouse(warehouse_id)
    if row is None:
        raise NoSuchWarehouse(f"Warehouse does not exist: {prefix}")
    if row.status != "active":
        raise WarehouseInactive(f"Warehouse {row.name} is deactivated")
    return row
