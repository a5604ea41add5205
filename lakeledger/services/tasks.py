"""Controlling tasks (cancel, run-now) and setting a queue's configuration, as events in the log.

A control is a change to the object the task works on, recorded on its aggregate (lakeledger/domain/tabular.py), so the
workers that already run the work exactly once honour it without a lock of their own: a cancelled expiry is off the
schedule and the aggregate refuses to expire it, a run-now moves the timer to now (the expirer wakes on the append),
and a cancelled purge is no longer awaited, whichever worker gets to it. What each queue's actions do is that queue's
entry in ``QUEUES``; a new queue plugs in there and writes its tasks into the same read model."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.tasks import (
    CANCEL,
    EXPIRATION,
    PURGE,
    RUN_NOW,
    TaskQueueConfig,
    check_queue_config,
    queue_config_id,
)
from lakeledger.services import resolve
from lakeledger.services.unit_of_work import Ledger

# (the object's aggregate, now, who) -> whether anything changed
Control = Callable[[Tabular, datetime, Provenance], bool]


@dataclass(frozen=True)
class Queue:
    """One queue: what its tasks' actions do to the object they work on."""

    name: str
    actions: dict[str, Control]


QUEUES: dict[str, Queue] = {
    EXPIRATION: Queue(EXPIRATION, {CANCEL: lambda t, now, by: t.reschedule_expiry(None, by),
                                   RUN_NOW: lambda t, now, by: t.reschedule_expiry(now, by)}),
    PURGE: Queue(PURGE, {CANCEL: lambda t, now, by: t.cancel_purge(by),
                         RUN_NOW: lambda t, now, by: t.purge_now(now, by)}),
}


@dataclass(frozen=True)
class TaskTarget:
    """A scheduled task named by a control: its queue and the object it works on."""

    queue: str
    entity_id: UUID


def check_action(action: str) -> str:
    if action not in (CANCEL, RUN_NOW):
        raise BadRequest(f"Unsupported task action {action!r}: Lakeledger's expiries and purges take "
                         f"{CANCEL!r} and {RUN_NOW!r} (they never run long enough to be stopped)")
    return action


class TaskService:
    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def control(self, warehouse_id: UUID, targets: list[TaskTarget], action: str, by: Provenance) -> int:
        """Applies ``action`` to every target in one append; returns how many changed (a task the action no longer
        affects, because it ran or was cancelled meanwhile, records nothing)."""
        check_action(action)

        def command() -> int:
            now = self.ledger.now()
            objects: dict[UUID, Tabular] = {}
            changed: dict[UUID, Tabular] = {}
            for target in targets:
                found = objects.get(target.entity_id) or self.ledger.log.get(Tabular, target.entity_id)
                if found is None or found.warehouse_id != warehouse_id:
                    continue
                objects[target.entity_id] = found
                if QUEUES[target.queue].actions[action](found, now, by):
                    changed[target.entity_id] = found
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
