"""Questions the tasks read model answers (lakeledger/projections/tasks.py): a warehouse's tasks, filtered and paged
newest first, one task by id, a task's attempts, and what the queues hold for the metrics."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool


@dataclass(frozen=True)
class TaskFilter:
    queues: list[str] | None = None
    statuses: list[str] | None = None
    entities: list[tuple[str, UUID]] | None = None  # (entity type, id); an empty list matches nothing
    created_after: datetime | None = None
    created_before: datetime | None = None


@dataclass(frozen=True)
class TaskRow:
    task_id: UUID
    warehouse_id: UUID
    project_id: UUID
    queue: str
    entity_type: str
    entity_id: UUID
    entity_name: list[str]
    status: str
    scheduled_for: datetime
    created_at: datetime
    updated_at: datetime | None
    message: str | None
    data: dict[str, Any] = field(default_factory=dict)
    attempts: int = 0  # attempts started so far
    picked_up_at: datetime | None = None  # the running attempt's start
    last_error: str | None = None  # the last attempt's error while the task waits for its retry


@dataclass(frozen=True)
class AttemptRow:
    attempt: int
    status: str
    worker: str
    scheduled_for: datetime
    started_at: datetime
    ended_at: datetime | None
    message: str | None


@dataclass(frozen=True)
class QueueRow:
    """What one queue holds: tasks waiting (of which ``failed`` wait after a failed attempt), running, and how long
    the oldest due one has waited in seconds (0: none due)."""

    queue: str
    queued: int
    running: int
    failed: int
    oldest_due_seconds: float


_SELECT = (
    "SELECT t.task_id, t.warehouse_id, w.project_id, t.queue, t.entity_type, t.entity_id, t.entity_name, t.status,"
    " t.scheduled_for, t.created_at, t.updated_at, t.message, t.data, t.attempts, t.picked_up_at, t.last_error"
    " FROM ll_tasks t JOIN ll_warehouses w ON w.id = t.warehouse_id"
)
_LIST = (
    _SELECT + " WHERE t.warehouse_id = %(warehouse)s"
    " AND (%(queues)s::text[] IS NULL OR t.queue = ANY(%(queues)s))"
    " AND (%(statuses)s::text[] IS NULL OR t.status = ANY(%(statuses)s))"
    " AND (%(types)s::text[] IS NULL OR (t.entity_type, t.entity_id) IN"
    " (SELECT * FROM unnest(%(types)s::text[], %(ids)s::uuid[])))"
    " AND (%(after)s::timestamptz IS NULL OR t.created_at > %(after)s)"
    " AND (%(before)s::timestamptz IS NULL OR t.created_at < %(before)s)"
    " AND (%(page_at)s::timestamptz IS NULL OR (t.created_at, t.task_id) < (%(page_at)s, %(page_id)s::uuid))"
    " ORDER BY t.created_at DESC, t.task_id DESC LIMIT %(limit)s"
)
_ONE = _SELECT + " WHERE t.warehouse_id = %(warehouse)s AND t.task_id = ANY(%(ids)s)"
_ATTEMPTS = ("SELECT attempt, status, worker, scheduled_for, started_at, ended_at, message FROM ll_task_attempts"
             " WHERE task_id = %(task)s ORDER BY attempt DESC LIMIT %(limit)s")
# one pass over the open tasks' partial index (ll_tasks_open), whatever the number of ended ones
QUEUES = ("SELECT queue, count(*) FILTER (WHERE status = 'SCHEDULED') AS queued,"
          " count(*) FILTER (WHERE status IN ('RUNNING', 'STOPPING')) AS running,"
          " count(*) FILTER (WHERE status = 'SCHEDULED' AND last_error IS NOT NULL) AS failed,"
          " coalesce(extract(epoch FROM now() - min(scheduled_for) FILTER"
          "  (WHERE status = 'SCHEDULED' AND scheduled_for <= now())), 0)::float8 AS oldest_due_seconds"
          " FROM ll_tasks WHERE status IN ('SCHEDULED', 'RUNNING', 'STOPPING') GROUP BY queue ORDER BY queue")


class TaskQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def tasks(self, warehouse_id: UUID, where: TaskFilter, after: tuple[datetime, UUID] | None,
                    limit: int) -> list[TaskRow]:
        entities = where.entities
        params = {"warehouse": warehouse_id, "queues": where.queues, "statuses": where.statuses,
                  "types": None if entities is None else [t for t, _ in entities],
                  "ids": None if entities is None else [i for _, i in entities],
                  "after": where.created_after, "before": where.created_before,
                  "page_at": after[0] if after else None, "page_id": after[1] if after else None, "limit": limit}
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(TaskRow))
            await cur.execute(_LIST, params)
            return await cur.fetchall()

    async def by_ids(self, warehouse_id: UUID, task_ids: list[UUID]) -> list[TaskRow]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(TaskRow))
            await cur.execute(_ONE, {"warehouse": warehouse_id, "ids": task_ids})
            return await cur.fetchall()

    async def attempts(self, task: UUID, limit: int) -> list[AttemptRow]:
        """The task's attempts, newest first."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(AttemptRow))
            await cur.execute(_ATTEMPTS, {"task": task, "limit": limit})
            return await cur.fetchall()
