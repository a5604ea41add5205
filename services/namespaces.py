from uuid import uuid4

from ..domain.errors import AlreadyExists
from ..domain.name_claim import NAMESPACE
from ..domain.names import check_namespace, dotted
from ..domain.namespace import Namespace
from ..domain.provenance import Provenance
from . import resolve
from .conditions import namespace_exists, namespace_is_empty, warehouse_is_active
from .unit_of_work import Ledger


class NamespaceService:
    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def create(self, warehouse_id: str, path: list[str], properties: dict[str, str], by: Provenance) -> Namespace:
        levels = check_namespace(path)

        def command() -> Namespace:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            parent = resolve.namespace(self.ledger, wh, levels[:-1]) if len(levels) > 1 else None
            ns_id = uuid4()
            claim = self.ledger.claim(NAMESPACE, parent.id if parent else wh.id, levels[-1], ns_id,
                                      "Namespace", by)
            ns = Namespace.create(ns_id, wh.id, parent.id if parent else None, levels, properties, by)
            self.ledger.append(claim, ns, conditions=[namespace_exists(parent.id, dotted(levels[:-1])) if parent
                                                      else warehouse_is_active(wh.id, wh.name)])
            return ns

        return self.ledger.retrying(command, AlreadyExists, f"Namespace already exists: {dotted(levels)}")

    def update_properties(self, warehouse_id: str, path: list[str], updates: dict[str, str], removals: list[str],
                          by: Provenance) -> tuple[list, list, list]:
        levels = check_namespace(path)

        def command() -> tuple[list, list, list]:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            result = ns.update_properties(updates, removals, by)
            self.ledger.append(ns)
            return result

        return self.ledger.retrying(command)

    def drop(self, warehouse_id: str, path: list[str], by: Provenance) -> None:
        levels = check_namespace(path)

        def command() -> None:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            claim = self.ledger.release(NAMESPACE, ns.parent_id or wh.id, ns.name, ns.id, by)
            ns.drop(by)
            self.ledger.append(claim, ns, conditions=[namespace_is_empty(ns.id, dotted(levels))])

        self.ledger.retrying(command)
