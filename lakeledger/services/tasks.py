"""Controlling tasks (cancel, run-now, run-at, stop) and setting a queue's configuration, as events in the log.

A control is a change recorded on the aggregate the task's work is kept on: the object itself for expiries and purges
(lakeledger/domain/tabular.py), the table's runs of the action for maintenance (lakeledger/domain/table_maintenance.py).
So the workers that already run the work exactly once honour it without a lock of their own: a cancelled expiry is off
the schedule and the aggregate refuses to expire it, a run-now moves the timer to now (the expirer wakes on the append),
a cancelled purge is no longer awaited, a cancelled maintenance run is closed, whichever worker gets to it. What each
queue's actions do is that queue's entry in ``QUEUES``; a new queue plugs in there and writes its tasks into the same
read model."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table_maintenance import MAINTENANCE_QUEUES, TableMaintenance, maintenance_id
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.tasks import (
    CANCEL,
    EXPIRATION,
    PURGE,
    RUN_AT,
    RUN_NOW,
    RUNNING,
    SCHEDULED,
    STOP,
    TaskQueueConfig,
    check_queue_config,
    queue_config_id,
)
from lakeledger.services import resolve
from lakeledger.services.unit_of_work import Ledger

# (the aggregate the task's work is kept on, when it is to run: now for run-now, the time named for run-at; now; who)
# -> whether anything changed
Control = Callable[[Any, datetime, datetime, Provenance], bool]


@dataclass(frozen=True)
class TaskTarget:
    """A scheduled task named by a control: its queue and the object it works on."""

    queue: str
    entity_id: UUID


@dataclass(frozen=True)
class Queue:
    """One queue: which aggregate keeps its tasks' work, and what its tasks' actions do to it."""

    name: str
    aggregate: type
    aggregate_id: Callable[[TaskTarget], UUID]
    actions: dict[str, Control]


def _maintenance(queue: str) -> Queue:
    return Queue(queue, TableMaintenance, lambda target: maintenance_id(target.entity_id, target.queue),
                 {CANCEL: lambda m, when, now, by: m.cancel(f"Cancelled by {by.actor}", by),
                  RUN_NOW: lambda m, when, now, by: m.reschedule(when, now, by),
                  RUN_AT: lambda m, when, now, by: m.reschedule(when, now, by),
                  STOP: lambda m, when, now, by: m.request_stop(by)})


QUEUES: dict[str, Queue] = {
    EXPIRATION: Queue(EXPIRATION, Tabular, lambda target: target.entity_id,
                      {CANCEL: lambda t, when, now, by: t.reschedule_expiry(None, by),
                       RUN_NOW: lambda t, when, now, by: t.reschedule_expiry(when, by),
                       RUN_AT: lambda t, when, now, by: t.reschedule_expiry(when, by)}),
    # a purge runs when its drop is final: it can be made due now, not moved to another time of its own
    PURGE: Queue(PURGE, Tabular, lambda target: target.entity_id,
                 {CANCEL: lambda t, when, now, by: t.cancel_purge(by),
                  RUN_NOW: lambda t, when, now, by: t.purge_now(now, by)}),
    **{queue: _maintenance(queue) for queue in MAINTENANCE_QUEUES},
}


def check_action(action: str, scheduled_for: datetime | None = None) -> str:
    if action not in (CANCEL, RUN_NOW, RUN_AT, STOP):
        raise BadRequest(f"Unsupported task action {action!r}: Lakeledger's tasks take {CANCEL!r}, {RUN_NOW!r}, "
                         f"{RUN_AT!r} and {STOP!r}")
    if action == RUN_AT and scheduled_for is None:
        raise BadRequest(f"{RUN_AT!r} needs scheduled-for, an RFC 3339 date-time")
    if scheduled_for is not None and scheduled_for.tzinfo is None:
        raise BadRequest("scheduled-for needs an offset (RFC 3339), e.g. 2026-12-31T23:59:59Z")
    return action


def acts_on(action: str) -> tuple[str, ...]:
    """The task statuses the action changes: a stop ends a running attempt, the others move or end a waiting task."""
    return (RUNNING,) if action == STOP else (SCHEDULED,)


def check_queues(targets: "list[TaskTarget]", action: str) -> None:
    """Every target's queue takes the action: else a 400 naming the first that does not, before anything is read."""
    for target in targets:
        if action not in QUEUES[target.queue].actions:
            raise BadRequest(f"{target.queue} tasks do not take {action!r}: they take "
                             f"{', '.join(repr(a) for a in QUEUES[target.queue].actions)}")


class TaskService:
    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def control(self, warehouse_id: UUID, targets: list[TaskTarget], action: str, by: Provenance,
                scheduled_for: datetime | None = None) -> int:
        """Applies ``action`` to every target in one append; returns how many changed (a task the action no longer
        affects, because it ran or was cancelled meanwhile, records nothing). ``scheduled_for``: run-at's time."""
        check_action(action, scheduled_for)
        check_queues(targets, action)

        def command() -> int:
            now = self.ledger.now()
            when = scheduled_for if action == RUN_AT and scheduled_for is not None else now
            objects: dict[UUID, Any] = {}
            changed: dict[UUID, Any] = {}
            for target in targets:
                queue = QUEUES[target.queue]
                aggregate_id = queue.aggregate_id(target)
                found = objects.get(aggregate_id) or self.ledger.log.get(queue.aggregate, aggregate_id)
                if found is None or found.warehouse_id != warehouse_id:
                    continue
                objects[aggregate_id] = found
                if queue.actions[action](found, when, now, by):
                    changed[aggregate_id] = found
            if changed:
                self.ledger.append(*changed.values())
            return len(changed)

        return self.ledger.retrying(command)

    def queue_config(self, warehouse_id: UUID, queue: str) -> dict[str, Any]:
        """The queue's configuration as last set (Lakekeeper's Get…QueueConfig); an empty one when never set."""
        found = self.ledger.log.get(TaskQueueConfig, queue_config_id(warehouse_id, queue))
        if found is None:
            return {"queue-config": {}, "max-seconds-since-last-heartbeat": None}
        return {"queue-config": found.queue_config,
                "max-seconds-since-last-heartbeat": found.max_seconds_since_last_heartbeat}

    def set_queue_config(self, warehouse_id: UUID, queue: str, body: object, by: Provenance) -> None:
        """Replaces the queue's configuration; the same configuration again records nothing."""
        config = check_queue_config(body)  # 400 before anything is read

        def command() -> None:
            resolve.warehouse(self.ledger, str(warehouse_id))
            found = self.ledger.log.get(TaskQueueConfig, queue_config_id(warehouse_id, queue))
            changed = TaskQueueConfig.set(found, warehouse_id, queue, config, by)
            if changed is not None:
                self.ledger.append(changed)

        self.ledger.retrying(command)
