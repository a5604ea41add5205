"""The tasks read model: ``ll_tasks``, every expiry and purge a drop scheduled, and how each stands
(lakeledger/domain/tasks.py).

A soft drop schedules an expiry for its ``expires_at``; a drop asking for a purge schedules a purge, due when the drop
is final (at once for a hard drop, at the expiry for a soft one). An undrop cancels what is still scheduled, an expiry
or a purge recorded ends its task in success, and the task controls' events (cancel, run-now) move or end them. Every
statement is driven by the event's own fields and times, so a rebuild writes identical rows. Failed purge attempts are
worker state (``ll_purge_retries``, lakeledger/workers/purger.py), joined in when the tasks are read."""

from functools import singledispatchmethod
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic
from psycopg import Cursor
from psycopg.types.json import Jsonb

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import GENERIC_TABLE, TABLE, VIEW, Tabular
from lakeledger.domain.tasks import CANCELLED, EXPIRATION, PURGE, SCHEDULED, SUCCESS, task_id
from lakeledger.domain.view import View

_NAMES = ("Dropped", "Undropped", "Expired", "Purged", "ExpiryRescheduled", "PurgeCancelled", "PurgeRetryDue")
EVENTS = tuple(getattr(cls, name) for cls in (Tabular, Table, View, GenericTable) for name in _NAMES) + (
    Table.Unregistered,)

TASK_KINDS = (TABLE, VIEW, GENERIC_TABLE)
_INSERT = ("INSERT INTO ll_tasks (task_id, warehouse_id, queue, entity_type, entity_id, entity_name, status,"
           " scheduled_for, created_at, updated_at, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
           " ON CONFLICT (task_id) DO NOTHING")
# what a change does to the scheduled task(s) of one object: ``queues`` says which
_END = ("UPDATE ll_tasks SET status = %(status)s, updated_at = %(at)s, message = %(message)s"
        " WHERE entity_id = %(id)s AND queue = ANY(%(queues)s) AND status = 'SCHEDULED'")
_MOVE = ("UPDATE ll_tasks SET scheduled_for = %(due)s, updated_at = %(at)s"
         " WHERE entity_id = %(id)s AND queue = ANY(%(queues)s) AND status = 'SCHEDULED'")


class TasksProjection:
    name = "tasks"
    tables = ("ll_tasks",)
    topics: tuple[str, ...] = tuple(get_topic(cls) for cls in EVENTS)

    @singledispatchmethod
    def apply(self, event: Any, cur: Cursor) -> None:
        """Other events are not this read model's."""

    @apply.register
    def _(self, e: Tabular.Dropped, cur: Cursor) -> None:
        if e.typ not in TASK_KINDS:
            return  # a log from elsewhere may name a kind no task answers for
        name = [*e.namespace, e.name]
        data = {"location": e.location, "purge-requested": e.purge_requested}
        if e.expires_at is not None:
            cur.execute(_INSERT, (task_id(EXPIRATION, e.originator_id, e.originator_version), e.warehouse_id,
                                  EXPIRATION, e.typ, e.originator_id, name, SCHEDULED, e.expires_at, e.timestamp,
                                  e.timestamp, Jsonb(data)))
        if e.purge_requested:
            due = e.expires_at if e.expires_at is not None else e.timestamp
            cur.execute(_INSERT, (task_id(PURGE, e.originator_id, e.originator_version), e.warehouse_id, PURGE, e.typ,
                                  e.originator_id, name, SCHEDULED, due, e.timestamp, e.timestamp,
                                  Jsonb({"location": e.location})))

    @apply.register
    def _(self, e: Tabular.Undropped, cur: Cursor) -> None:
        _end(cur, e, (EXPIRATION, PURGE), CANCELLED, f"Undropped by {e.actor}")

    @apply.register
    def _(self, e: Tabular.Expired, cur: Cursor) -> None:
        _end(cur, e, (EXPIRATION,), SUCCESS, "Deleted for good")
        # the purge that waited for the expiry is due now
        cur.execute(_MOVE, {"due": e.timestamp, "at": e.timestamp, "id": e.originator_id, "queues": [PURGE]})

    @apply.register
    def _(self, e: Tabular.Purged, cur: Cursor) -> None:
        _end(cur, e, (PURGE,), SUCCESS, f"{e.files_removed} files removed")

    @apply.register
    def _(self, e: Tabular.ExpiryRescheduled, cur: Cursor) -> None:
        if e.expires_at is None:  # a purge waiting for the expiry will not run either
            _end(cur, e, (EXPIRATION, PURGE), CANCELLED, f"Cancelled by {e.actor}")
        else:
            cur.execute(_MOVE, {"due": e.expires_at, "at": e.timestamp, "id": e.originator_id,
                                "queues": [EXPIRATION, PURGE]})

    @apply.register
    def _(self, e: Tabular.PurgeCancelled, cur: Cursor) -> None:
        _end(cur, e, (PURGE,), CANCELLED, f"Cancelled by {e.actor}")

    @apply.register
    def _(self, e: Tabular.PurgeRetryDue, cur: Cursor) -> None:
        cur.execute(_MOVE, {"due": e.timestamp, "at": e.timestamp, "id": e.originator_id, "queues": [PURGE]})


def _end(cur: Cursor, e: Any, queues: tuple[str, ...], status: str, message: str) -> None:
    entity: UUID = e.originator_id
    cur.execute(_END, {"status": status, "at": e.timestamp, "message": message, "id": entity, "queues": list(queues)})
