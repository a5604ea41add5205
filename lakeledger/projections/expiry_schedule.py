"""The expiry schedule: when each soft-deleted table, view or namespace is due to be deleted for good.

A timer is set by a soft drop and cleared by the undrop or the expiry that ends it. The schedule only says
when to look; the aggregate decides (lakeledger/domain/deletion.py), so a timer that is stale, or fired by two workers
at once, records at most one expiry. Rebuilt from the log like any read model, it survives every restart."""

from functools import singledispatchmethod
from typing import Any

from eventsourcing.utils import get_topic
from psycopg import Cursor

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.view import View

NAMESPACE = "namespace"

_EVENTS = (Tabular.Dropped, Tabular.Undropped, Tabular.Expired, Tabular.ExpiryRescheduled,
           Table.Dropped, Table.Unregistered, Table.Undropped, Table.Expired, Table.ExpiryRescheduled,
           View.Dropped, View.Undropped, View.Expired, View.ExpiryRescheduled,
           GenericTable.Dropped, GenericTable.Undropped, GenericTable.Expired, GenericTable.ExpiryRescheduled,
           Namespace.Dropped, Namespace.Undropped, Namespace.Expired)


class ExpirySchedule:
    name = "expiry-schedule"
    tables = ("ll_expiry_schedule",)
    topics = tuple(get_topic(cls) for cls in _EVENTS)

    @singledispatchmethod
    def apply(self, event: Any, cur: Cursor) -> None:
        pass

    @apply.register
    def _(self, e: Tabular.Dropped, cur: Cursor) -> None:
        self._set(cur, e.originator_id, e.typ, e.expires_at)

    @apply.register
    def _(self, e: Namespace.Dropped, cur: Cursor) -> None:
        self._set(cur, e.originator_id, NAMESPACE, e.expires_at)

    @apply.register
    def _(self, e: Tabular.ExpiryRescheduled, cur: Cursor) -> None:
        # run-now moves the timer to the moment it was asked; cancel (None) takes it off the schedule
        if e.expires_at is None:
            cur.execute("DELETE FROM ll_expiry_schedule WHERE entity_id = %s", (e.originator_id,))
        else:
            self._set(cur, e.originator_id, e.typ, e.expires_at)

    @apply.register
    def _(self, e: Tabular.Undropped | Tabular.Expired | Namespace.Undropped | Namespace.Expired, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_expiry_schedule WHERE entity_id = %s", (e.originator_id,))

    @staticmethod
    def _set(cur: Cursor, entity_id: Any, entity_type: str, due_at: Any) -> None:
        if due_at is None:
            return
        cur.execute("INSERT INTO ll_expiry_schedule (entity_id, entity_type, due_at) VALUES (%s, %s, %s)"
                    " ON CONFLICT (entity_id) DO UPDATE SET due_at = EXCLUDED.due_at", (entity_id, entity_type, due_at))

    @staticmethod
    def due(cur: Cursor, now: Any, limit: int) -> list[tuple[Any, str]]:
        cur.execute("SELECT entity_id, entity_type FROM ll_expiry_schedule WHERE due_at <= %s"
                    " ORDER BY due_at, entity_id LIMIT %s", (now, limit))
        return [(row[0], row[1]) for row in cur.fetchall()]

    @staticmethod
    def next_due(cur: Cursor) -> Any:
        cur.execute("SELECT min(due_at) FROM ll_expiry_schedule")
        row = cur.fetchone()
        assert row is not None  # an aggregate's one row
        return row[0]
