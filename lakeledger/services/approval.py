"""Change approval: a hook asked before a drop or a commit is appended, which may refuse it.

Like Lakekeeper's contract verification, it lets an organisation's own rules (a data contract, a change
freeze, a required ticket) stop a change at the catalog, for every engine alike. The hook sees what is about
to happen and who asks; it answers approved, or refused with a reason that the client gets back in a 403.
Nothing reaches the log unless the hook approved it."""

from dataclasses import dataclass, field
from typing import Any, Protocol
from uuid import UUID

from lakeledger.domain.provenance import Provenance

DROP = "drop"
COMMIT = "commit"


@dataclass(frozen=True)
class ProposedChange:
    action: str  # "drop" or "commit"
    entity_type: str  # "table", "view" or "namespace"
    entity_id: UUID
    warehouse_id: UUID
    name: list[str]  # namespace levels, then the table or view name
    by: Provenance
    details: dict[str, Any] = field(default_factory=dict)  # a commit's requirements and updates; a drop's options

    def as_json(self) -> dict[str, Any]:
        return {"action": self.action, "entity-type": self.entity_type, "entity-id": str(self.entity_id),
                "warehouse-id": str(self.warehouse_id), "name": list(self.name), "actor": self.by.actor,
                "request-id": self.by.request_id, "details": self.details}


class ChangeApproval(Protocol):
    def review(self, change: ProposedChange) -> None:
        """Returns when the change may go ahead; raises ChangeRefused (with the reason) when it may not."""


class ApproveAll:
    """No hook configured: every change goes ahead."""

    def review(self, change: ProposedChange) -> None:
        return None


def proposed_drop(tabular: Any, by: Provenance, **options: Any) -> ProposedChange:
    return ProposedChange(DROP, tabular.kind, tabular.id, tabular.warehouse_id, [*tabular.namespace, tabular.name], by,
                          {k.replace("_", "-"): v for k, v in options.items()})


def proposed_commit(table: Any, by: Provenance, requirements: list[Any], updates: list[Any]) -> ProposedChange:
    return ProposedChange(COMMIT, table.kind, table.id, table.warehouse_id, [*table.namespace, table.name], by,
                          {"requirements": requirements, "updates": updates})
