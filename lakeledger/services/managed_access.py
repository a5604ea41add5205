"""Managed access on a warehouse or namespace (lakeledger/domain/managed_access.py): the switch, recorded on the
object's own aggregate; the catalog projection keeps the flag, the tuple projection the wildcard tuples the
authorization model reads (lakeledger/projections/authz_tuples.py)."""

from uuid import UUID

from lakeledger.domain.errors import NoSuchNamespace
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.warehouse import Warehouse
from lakeledger.services import resolve
from lakeledger.services.unit_of_work import Ledger


class ManagedAccessService:
    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def set(self, kind: str, object_id: UUID, managed_access: bool, by: Provenance) -> None:
        """Turns managed access on or off for a warehouse or a live namespace (``kind``); the same value again
        appends nothing."""
        def command() -> None:
            item: Warehouse | Namespace
            if kind == "warehouse":
                item = resolve.warehouse_aggregate(self.ledger, object_id)
            else:
                found = self.ledger.log.get(Namespace, object_id)
                if found is None or found.dropped:
                    raise NoSuchNamespace(f"Namespace does not exist: {object_id}")
                item = found
            item.set_managed_access(managed_access, by)
            self.ledger.append(item)

        self.ledger.retrying(command)
