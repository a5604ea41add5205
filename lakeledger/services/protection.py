"""Protection: a flag on a warehouse, namespace, table or view that refuses drops without ``force``."""

from uuid import UUID

from lakeledger.domain.errors import NoSuchGenericTable, NoSuchNamespace, NoSuchTable, NoSuchView
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import GENERIC_TABLE, TABLE, Tabular
from lakeledger.domain.warehouse import Warehouse
from lakeledger.services import resolve
from lakeledger.services.unit_of_work import Ledger

NAMESPACE = "namespace"


class ProtectionService:
    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def set(self, warehouse_id: str, kind: str, entity_id: UUID, protected: bool, by: Provenance) -> None:
        def command() -> None:
            item: Warehouse | Namespace | Tabular
            if kind == "warehouse":
                item = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            else:
                item = self._live(warehouse_id, kind, entity_id)
            item.set_protection(protected, by)
            self.ledger.append(item)

        self.ledger.retrying(command)

    def _live(self, warehouse_id: str, kind: str, entity_id: UUID) -> Namespace | Tabular:
        wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
        if kind == NAMESPACE:
            ns = self.ledger.log.get(Namespace, entity_id)
            if ns is None or ns.dropped or ns.warehouse_id != wh.id:
                raise NoSuchNamespace(f"Namespace does not exist: {entity_id}")
            return ns
        tabular = self.ledger.log.get(Tabular, entity_id)
        if tabular is None or tabular.dropped or tabular.kind != kind or tabular.warehouse_id != wh.id:
            missing = {TABLE: NoSuchTable, GENERIC_TABLE: NoSuchGenericTable}.get(kind, NoSuchView)
            raise missing(f"{kind.capitalize()} does not exist: {entity_id}")
        return tabular
