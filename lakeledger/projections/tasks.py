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
from lakeledger.domain.table_maintenance import TableMaintenance, run_task_id
from lakeledger.domain.tabular import GENERIC_TABLE, TABLE, VIEW, Tabular
from lakeledger.domain.tasks import CANCELLED, EXPIRATION, FAILED, PURGE, SCHEDULED, SUCCESS, task_id
from lakeledger.domain.view import View

_NAMES = ("Dropped", "Undropped", "Expired", "Purged", "ExpiryRescheduled", "PurgeCancelled", "PurgeRetryDue",
          "PurgeStarted", "PurgeFailed")
EVENTS = tuple(getattr(cls, name) for cls in (Tabular, Table, View, GenericTable) for name in _NAMES) + (
    Table.Unregistered, TableMaintenance.RunScheduled, TableMaintenance.RunStarted, TableMaintenance.RunSucceeded,
    TableMaintenance.RunFailed, TableMaintenance.RunCancelled, TableMaintenance.RunRescheduled,
    TableMaintenance.StopRequested)

TASK_KINDS = (TABLE, VIEW, GENERIC_TABLE)
_INSERT = ("INSERT INTO ll_tasks (task_id, warehouse_id, queue, entity_type, entity_id, entity_name, status,"
           " scheduled_for, created_at, updated_at, data) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
           " ON CONFLICT (task_id) DO NOTHING")
# what a change does to the scheduled task(s) of one object: ``queues`` says which
_OPEN = (" WHERE entity_id = %(id)s AND queue = ANY(%(queues)s) AND status IN ('SCHEDULED', 'RUNNING', 'STOPPING')")
_STOPPING = ("UPDATE ll_tasks SET status = 'STOPPING', updated_at = %(at)s WHERE entity_id = %(id)s"
             " AND queue = ANY(%(queues)s) AND status = 'RUNNING'")
_END = ("UPDATE ll_tasks SET status = %(status)s, updated_at = %(at)s, message = %(message)s, picked_up_at = NULL"
        + _OPEN + " RETURNING task_id")
_MOVE = "UPDATE ll_tasks SET scheduled_for = %(due)s, updated_at = %(at)s" + _OPEN
# an attempt that ends takes the task's outcome; one started and never ended is abandoned by the next start
_END_ATTEMPT = ("UPDATE ll_task_attempts SET status = %(status)s, ended_at = %(at)s, message = %(message)s"
                " WHERE task_id = ANY(%(tasks)s) AND status = 'RUNNING'")
_START = ("UPDATE ll_tasks SET status = 'RUNNING', attempts = %(attempt)s, picked_up_at = %(at)s, updated_at = %(at)s,"
          " last_error = NULL" + _OPEN + " RETURNING task_id, scheduled_for")
_ADD_ATTEMPT = ("INSERT INTO ll_task_attempts (task_id, attempt, status, worker, scheduled_for, started_at)"
                " VALUES (%s, %s, 'RUNNING', %s, %s, %s) ON CONFLICT (task_id, attempt) DO NOTHING")
_FAIL = ("UPDATE ll_tasks SET status = 'SCHEDULED', scheduled_for = %(due)s, updated_at = %(at)s, picked_up_at = NULL,"
         " last_error = %(message)s" + _OPEN + " RETURNING task_id")
_FIGURES = "UPDATE ll_tasks SET data = data || %(figures)s WHERE task_id = %(task)s"
ABANDONED = "Abandoned: its worker stopped before an outcome (the next attempt took over)"


class TasksProjection:
    name = "tasks"
    tables = ("ll_tasks", "ll_task_attempts")
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

    @apply.register
    def _(self, e: Tabular.PurgeStarted, cur: Cursor) -> None:
        _start(cur, e, e.originator_id, PURGE)

    @apply.register
    def _(self, e: Tabular.PurgeFailed, cur: Cursor) -> None:
        _fail(cur, e, e.originator_id, PURGE, e.retry_at, e.error)


    # --- maintenance runs (lakeledger/domain/table_maintenance.py): one open run per table and queue ------------

    @apply.register
    def _(self, e: TableMaintenance.RunScheduled, cur: Cursor) -> None:
        cur.execute(_INSERT, (run_task_id(e.table_id, e.queue, e.run), e.warehouse_id, e.queue, TABLE, e.table_id,
                              list(e.table_name), SCHEDULED, e.due_at, e.timestamp, e.timestamp,
                              Jsonb({"run": e.run, "reason": e.reason, "settings": e.settings})))

    @apply.register
    def _(self, e: TableMaintenance.RunStarted, cur: Cursor) -> None:
        _start(cur, e, e.table_id, e.queue)

    @apply.register
    def _(self, e: TableMaintenance.RunSucceeded, cur: Cursor) -> None:
        cur.execute(_FIGURES, {"figures": Jsonb({"figures": e.figures, "seconds": e.seconds}),
                               "task": run_task_id(e.table_id, e.queue, e.run)})
        _end(cur, e, (e.queue,), SUCCESS, ", ".join(f"{k}={v}" for k, v in e.figures.items()) or "done",
             entity=e.table_id)

    @apply.register
    def _(self, e: TableMaintenance.RunFailed, cur: Cursor) -> None:
        if e.retry_at is None:
            _end(cur, e, (e.queue,), FAILED, e.error, entity=e.table_id)
        else:
            _fail(cur, e, e.table_id, e.queue, e.retry_at, e.error)

    @apply.register
    def _(self, e: TableMaintenance.RunCancelled, cur: Cursor) -> None:
        _end(cur, e, (e.queue,), CANCELLED, e.reason, entity=e.table_id)

    @apply.register
    def _(self, e: TableMaintenance.StopRequested, cur: Cursor) -> None:
        cur.execute(_STOPPING, {"at": e.timestamp, "id": e.table_id, "queues": [e.queue]})

    @apply.register
    def _(self, e: TableMaintenance.RunRescheduled, cur: Cursor) -> None:
        cur.execute(_MOVE, {"due": e.due_at, "at": e.timestamp, "id": e.table_id, "queues": [e.queue]})


def _start(cur: Cursor, e: Any, entity: UUID, queue: str) -> None:
    attempt = _int32(e.attempt)
    cur.execute(_START, {"attempt": attempt, "at": e.timestamp, "id": entity, "queues": [queue]})
    started = cur.fetchall()
    tasks = [task for task, _ in started]
    cur.execute(_END_ATTEMPT, {"status": FAILED, "at": e.timestamp, "message": ABANDONED, "tasks": tasks})
    for task, due in started:
        cur.execute(_ADD_ATTEMPT, (task, attempt, e.worker, due, e.timestamp))


def _fail(cur: Cursor, e: Any, entity: UUID, queue: str, retry_at: Any, error: str) -> None:
    cur.execute(_FAIL, {"due": retry_at, "at": e.timestamp, "message": error, "id": entity, "queues": [queue]})
    tasks = [task for (task,) in cur.fetchall()]
    cur.execute(_END_ATTEMPT, {"status": FAILED, "at": e.timestamp, "message": error, "tasks": tasks})


def _int32(value: int) -> int:
    # an attempt number counts attempts: one beyond ``int`` only a log written by hand could hold, stored at the bound
    return max(-(2**31), min(2**31 - 1, value))


def _end(cur: Cursor, e: Any, queues: tuple[str, ...], status: str, message: str, entity: UUID | None = None) -> None:
    entity = entity if entity is not None else e.originator_id
    cur.execute(_END, {"status": status, "at": e.timestamp, "message": message, "id": entity, "queues": list(queues)})
    tasks = [task for (task,) in cur.fetchall()]
    if tasks:
        cur.execute(_END_ATTEMPT, {"status": status, "at": e.timestamp, "message": message, "tasks": tasks})
