"""Finding aggregates by the names clients use, through the name claims in the log (so commands
never decide on a read model that might lag)."""

from uuid import UUID

from ..domain.errors import NoSuchNamespace, NoSuchTable, NoSuchWarehouse
from ..domain.name_claim import NAMESPACE, TABULAR
from ..domain.names import dotted
from ..domain.namespace import Namespace
from ..domain.table import Table
from ..domain.warehouse import Warehouse
from .unit_of_work import Ledger


def warehouse(ledger: Ledger, warehouse_id: UUID | str, active: bool = True) -> Warehouse:
    try:
        wid = warehouse_id if isinstance(warehouse_id, UUID) else UUID(str(warehouse_id))
    except ValueError:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}") from None
    found = ledger.log.get(Warehouse, wid)
    if found is None or found.deleted:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
    if active:
        found.ensure_active()
    return found


def namespace(ledger: Ledger, wh: Warehouse, path: tuple[str, ...]) -> Namespace:
    container = wh.id
    for level in path:
        holder = ledger.holder(NAMESPACE, container, level)
        if holder is None:
            raise NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
        container = holder
    found = ledger.log.get(Namespace, container)
    if found is None or found.dropped:
        raise NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
    return found


def table_id(ledger: Ledger, ns: Namespace, name: str) -> UUID | None:
    return ledger.holder(TABULAR, ns.id, name)


def table(ledger: Ledger, ns: Namespace, name: str) -> Table:
    holder = table_id(ledger, ns, name)
    found = ledger.log.get(Table, holder) if holder is not None else None
    if found is None or found.dropped:
        raise NoSuchTable(f"Table does not exist: {dotted([*ns.path, name])}")
    return found
