"""Setting and removing maintenance policies (lakeledger/domain/maintenance_policy.py) on a warehouse, a namespace
or a table. The settings are validated before anything is read, the object's liveness is checked inside the append
against the catalog as every earlier append left it (a table dropped meanwhile refuses the change, nothing is
appended), and the read model is applied in the same transaction."""

from typing import Any
from uuid import UUID

from psycopg import Cursor

from lakeledger.domain.errors import NoSuchNamespace, NoSuchTable, NoSuchWarehouse
from lakeledger.domain.maintenance_policy import (
    NAMESPACE,
    TABLE,
    WAREHOUSE,
    MaintenancePolicy,
    check_parameters,
    check_policy_type,
    policies_id,
)
from lakeledger.domain.provenance import Provenance
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.tags_queries import live_target
from lakeledger.services.conditions import Condition
from lakeledger.services.unit_of_work import Ledger

_MISSING = {WAREHOUSE: NoSuchWarehouse, NAMESPACE: NoSuchNamespace, TABLE: NoSuchTable}


class MaintenancePolicyService:
    def __init__(self, ledger: Ledger, view: ProjectionDriver):
        self.ledger = ledger
        self.view = view  # the maintenance-policies read model, applied inside these appends

    def set(self, warehouse_id: UUID, target_type: str, target_id: UUID, policy_type: str, parameters: Any,
            by: Provenance) -> dict[str, Any]:
        """Replaces what the object sets for ``policy_type``; returns the settings as recorded. The same settings
        again record nothing."""
        checked = check_parameters(policy_type, parameters)  # 400 before anything is read

        def command() -> dict[str, Any]:
            found = self.ledger.log.get(MaintenancePolicy, policies_id(target_type, target_id))
            changed = MaintenancePolicy.set(found, warehouse_id, target_type, target_id, policy_type, checked, by)
            if changed is not None:
                self.ledger.append(changed, conditions=[_live(warehouse_id, target_type, target_id)],
                                   views=(self.view,))
            return checked

        return self.ledger.retrying(command)

    def remove(self, warehouse_id: UUID, target_type: str, target_id: UUID, policy_type: str,
               by: Provenance) -> None:
        """The object inherits every setting of ``policy_type`` again; removing what is not set records nothing."""
        check_policy_type(policy_type)

        def command() -> None:
            found = self.ledger.log.get(MaintenancePolicy, policies_id(target_type, target_id))
            changed = MaintenancePolicy.remove(found, policy_type, by)
            if changed is not None:
                self.ledger.append(changed, conditions=[_live(warehouse_id, target_type, target_id)],
                                   views=(self.view,))

        self.ledger.retrying(command)


def _live(warehouse_id: UUID, kind: str, target_id: UUID) -> Condition:
    def check(cur: Cursor) -> None:
        if not live_target(cur, kind, warehouse_id, target_id):
            raise _MISSING[kind](f"{kind.capitalize()} does not exist in warehouse {warehouse_id}: {target_id}")
    return check
