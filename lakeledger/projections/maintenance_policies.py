"""The maintenance-policies read model: ``ll_maintenance_policies``, the settings each object sets itself per policy
type, as they are now (lakeledger/domain/maintenance_policy.py).

Applied inside every append of a policy event (lakeledger/services/maintenance_policies.py ``views``), so an answer
right after a change shows it. Every statement is driven by the event's own fields (times are the events' own), so
a rebuild writes identical rows."""

from functools import singledispatchmethod
from typing import Any

from eventsourcing.utils import get_topic
from psycopg import Cursor
from psycopg.types.json import Jsonb

from lakeledger.domain.maintenance_policy import MaintenancePolicy

EVENTS = (MaintenancePolicy.Set, MaintenancePolicy.Removed)


class MaintenancePoliciesProjection:
    name = "maintenance-policies"
    tables = ("ll_maintenance_policies",)
    topics: tuple[str, ...] = tuple(get_topic(cls) for cls in EVENTS)

    @singledispatchmethod
    def apply(self, event: Any, cur: Cursor) -> None:
        """Other events are not this read model's."""

    @apply.register
    def _(self, e: MaintenancePolicy.Set, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_maintenance_policies (target_id, target_type, policy_type, warehouse_id,"
                    " parameters, set_at, set_by, request_id) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (target_id, target_type, policy_type) DO UPDATE SET"
                    " warehouse_id = EXCLUDED.warehouse_id, parameters = EXCLUDED.parameters,"
                    " set_at = EXCLUDED.set_at, set_by = EXCLUDED.set_by, request_id = EXCLUDED.request_id",
                    (e.target_id, e.target_type, e.policy_type, e.warehouse_id, Jsonb(e.parameters), e.timestamp,
                     e.actor, e.request_id))

    @apply.register
    def _(self, e: MaintenancePolicy.Removed, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_maintenance_policies WHERE target_id = %s AND target_type = %s"
                    " AND policy_type = %s", (e.target_id, e.target_type, e.policy_type))
