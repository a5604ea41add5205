"""Background work seen as tasks, in Lakekeeper's terms: queues, statuses, task ids, and each queue's configuration.

A task is not a thing of its own in the log: it is how the events of an object's life read as work to do. A soft drop
schedules an expiry (queue ``tabular_expiration``, called ``soft_deletion`` in Lakekeeper's newer documents), a drop
that asks for a purge schedules a purge (``tabular_purge``). Its id is derived from the drop event (the object's id and
the drop's version), so a rebuilt read model gives every task the id it had."""

from typing import Any
from uuid import UUID, uuid5

from eventsourcing.utils import get_topic
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from lakeledger.domain.base import CatalogAggregate, OpensOrContinues
from lakeledger.domain.errors import BadRequest, NotFound
from lakeledger.domain.provenance import Provenance

EXPIRATION = "tabular_expiration"
PURGE = "tabular_purge"
# Lakekeeper's other names of a queue (its newer documents call the expiry queue ``soft_deletion``)
QUEUE_ALIASES = {"soft_deletion": EXPIRATION}

# Lakekeeper's TaskStatus
SCHEDULED, RUNNING, STOPPING, CANCELLED, SUCCESS, FAILED = (
    "SCHEDULED", "RUNNING", "STOPPING", "CANCELLED", "SUCCESS", "FAILED")
STATUSES = (SCHEDULED, RUNNING, STOPPING, CANCELLED, SUCCESS, FAILED)

# Lakekeeper's ControlTaskAction types
CANCEL, RUN_NOW, RUN_AT, STOP = "cancel", "run-now", "run-at", "stop"
MAX_CONTROLLED = 100  # task ids one control request may name, as Lakekeeper allows

_TASKS = UUID("8d1f3a6c-52e9-5b07-9c4e-6a2f1d7b3e90")
_QUEUE_CONFIGS = UUID("e4b27c19-3a8d-5f61-b0c2-7d95e1a4f386")


def task_id(queue: str, entity_id: UUID, drop_version: int) -> UUID:
    """The id of the ``queue`` task a drop (version ``drop_version`` of the object ``entity_id``) scheduled."""
    return uuid5(_TASKS, f"{queue}:{entity_id}:{drop_version}")


def queue_name(name: str) -> str:
    """The queue a name (ours or Lakekeeper's other one) means."""
    return QUEUE_ALIASES.get(name, name)


class QueueConfig(BaseModel):
    """Lakekeeper's Set…QueueConfig body: ``queue-config`` is an object (Lakekeeper defines no field of its own for
    these two queues), ``max-seconds-since-last-heartbeat`` a non-negative whole number or null."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    queue_config: dict[str, Any] = Field(alias="queue-config")
    max_seconds_since_last_heartbeat: StrictInt | None = Field(default=None, alias="max-seconds-since-last-heartbeat",
                                                               ge=0)


def check_queue_config(body: object) -> QueueConfig:
    try:
        return QueueConfig.model_validate(body)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise BadRequest(f"Invalid task queue config: {where}: {first['msg']}") from None


def queue_config_id(warehouse_id: UUID, queue: str) -> UUID:
    return uuid5(_QUEUE_CONFIGS, f"{warehouse_id}:{queue}")


class TaskQueueConfig(CatalogAggregate):
    """One queue's configuration in one warehouse, as last set."""

    class Set(OpensOrContinues):
        """The whole configuration, replaced; the first one opens the aggregate's history."""

        warehouse_id: UUID
        queue: str
        queue_config: dict[str, Any]
        max_seconds_since_last_heartbeat: int | None

        def apply(self, aggregate: "TaskQueueConfig") -> None:
            aggregate.queue_config = dict(self.queue_config)
            aggregate.max_seconds_since_last_heartbeat = self.max_seconds_since_last_heartbeat

    def __init__(self, warehouse_id: UUID, queue: str, queue_config: dict[str, Any],
                 max_seconds_since_last_heartbeat: int | None, actor: str, request_id: str):
        self.warehouse_id, self.queue = warehouse_id, queue
        self.queue_config = dict(queue_config)
        self.max_seconds_since_last_heartbeat = max_seconds_since_last_heartbeat

    @classmethod
    def set(cls, found: "TaskQueueConfig | None", warehouse_id: UUID, queue: str, config: QueueConfig,
            by: Provenance) -> "TaskQueueConfig | None":
        """With a ``Set`` pending; None when the configuration already says exactly this."""
        fields = {"warehouse_id": warehouse_id, "queue": queue, "queue_config": config.queue_config,
                  "max_seconds_since_last_heartbeat": config.max_seconds_since_last_heartbeat,
                  "actor": by.actor, "request_id": by.request_id}
        if found is None:
            return cls._create(cls.Set, id=queue_config_id(warehouse_id, queue), **fields)
        if (found.queue_config, found.max_seconds_since_last_heartbeat) == (
                config.queue_config, config.max_seconds_since_last_heartbeat):
            return None
        found.trigger_event(cls.Set, originator_topic=get_topic(cls), **fields)
        return found


def unknown_task(task: UUID, warehouse: object) -> NotFound:
    return NotFound(f"Task does not exist in warehouse {warehouse}: {task}")
