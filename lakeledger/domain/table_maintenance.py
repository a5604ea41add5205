"""The maintenance runs of one table, one action at a time: scheduled when the table's effective policy is due (its
trigger holds), started by a worker, ended with the figures of what was done, failed and tried again with a growing
pause, or cancelled. Each is an event, so the history and the Events/CloudEvents streams show maintenance like any
change, and the task API reads runs as tasks of the action's queue (lakeledger/domain/tasks.py).

One aggregate per table and action (id derived from both): a run is scheduled only while none is open, and two workers
racing to schedule or to start the same run conflict on the aggregate's version, so exactly one wins. A worker holds
its run by a Postgres session lock while the job runs (lakeledger/workers/maintainer.py); a worker killed mid-run
leaves a started attempt with no outcome, and the next start names it as abandoned."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

from eventsourcing.utils import get_topic

from lakeledger.domain.base import CatalogAggregate, OpensOrContinues
from lakeledger.domain.maintenance_policy import (
    DATA_COMPACTION,
    METADATA_COMPACTION,
    ORPHAN_FILE_REMOVAL,
    SNAPSHOT_EXPIRY,
)
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tasks import task_id

# Each policy type's task queue, named as Lakekeeper names its queues (snake case)
QUEUE_OF_POLICY = {DATA_COMPACTION: "data_compaction", METADATA_COMPACTION: "metadata_compaction",
                   SNAPSHOT_EXPIRY: "snapshot_expiry", ORPHAN_FILE_REMOVAL: "orphan_file_removal"}
POLICY_OF_QUEUE = {queue: policy for policy, queue in QUEUE_OF_POLICY.items()}
MAINTENANCE_QUEUES = tuple(POLICY_OF_QUEUE)

_UPKEEP = UUID("5b0e7d42-91c3-5a6f-8d2e-c4a1f9b37e05")


def maintenance_id(table_id: UUID, queue: str) -> UUID:
    """The aggregate holding the runs of ``queue``'s action on the table."""
    return uuid5(_UPKEEP, f"{table_id}:{queue}")


def run_task_id(table_id: UUID, queue: str, run: int) -> UUID:
    """The task id of run ``run`` (1 for the first) of ``queue``'s action on the table."""
    return task_id(queue, table_id, run)


class RunRefused(Exception):
    """The change does not apply to the run as it stands (another worker moved it on)."""


@dataclass(frozen=True)
class Backoff:
    """How long a failed attempt waits before the next one: ``first_seconds``, doubling per failed attempt up to
    ``longest_seconds``; after ``max_attempts`` failed attempts the run fails for good (the next check schedules a
    new one when the trigger still holds)."""

    first_seconds: float
    longest_seconds: float = 3600.0
    max_attempts: int = 5

    def retry_at(self, now: datetime, attempt: int) -> datetime | None:
        if attempt >= self.max_attempts:
            return None
        return now + timedelta(seconds=min(self.longest_seconds, self.first_seconds * 2 ** (attempt - 1)))


class TableMaintenance(CatalogAggregate):
    """Runs of one maintenance action on one table."""

    class _Run(CatalogAggregate.Event):
        warehouse_id: UUID
        table_id: UUID
        queue: str
        run: int

    class RunScheduled(OpensOrContinues):
        """Run ``run`` is due at ``due_at``: ``reason`` says which trigger held (with the table's figures), and
        ``settings`` are the effective policy's settings the run will use (where each came from is the policy's
        history)."""

        warehouse_id: UUID
        table_id: UUID
        queue: str
        run: int
        table_name: list[str]
        due_at: datetime
        reason: str
        settings: dict[str, Any]

        def apply(self, aggregate: "TableMaintenance") -> None:
            aggregate.warehouse_id, aggregate.table_id, aggregate.queue = self.warehouse_id, self.table_id, self.queue
            aggregate.runs = self.run
            aggregate.open_run = self.run
            aggregate.due_at = self.due_at
            aggregate.settings = dict(self.settings)
            aggregate.table_name = list(self.table_name)
            aggregate.attempts = 0
            aggregate.running = None

    class RunStarted(_Run):
        """Attempt ``attempt`` of the run started on ``worker`` (host and process); ``abandoned`` names an attempt
        that started before and never ended (its worker died)."""

        attempt: int
        worker: str
        abandoned: int | None

        def apply(self, aggregate: "TableMaintenance") -> None:
            aggregate.attempts = self.attempt
            aggregate.running = self.attempt
            aggregate.stop_requested = None

    class RunSucceeded(_Run):
        """The run's attempt ended well; ``figures`` are what Iceberg's procedures reported (files rewritten, bytes,
        snapshots expired, orphans deleted ...), ``seconds`` how long the job took."""

        attempt: int
        figures: dict[str, int]
        seconds: float

        def apply(self, aggregate: "TableMaintenance") -> None:
            aggregate._close(self.timestamp)

    class RunFailed(_Run):
        """The run's attempt failed with ``error``; tried again at ``retry_at``, or never (None: the run failed)."""

        attempt: int
        error: str
        retry_at: datetime | None

        def apply(self, aggregate: "TableMaintenance") -> None:
            aggregate.running = None
            aggregate.stop_requested = None
            if self.retry_at is None:
                aggregate._close(self.timestamp)
            else:
                aggregate.due_at = self.retry_at

    class RunCancelled(_Run):
        """The run will not take place (a task control, or its table is gone)."""

        reason: str

        def apply(self, aggregate: "TableMaintenance") -> None:
            aggregate._close(self.timestamp)

    class StopRequested(_Run):
        """A task control (Lakekeeper's ``stop``) asked running attempt ``attempt`` to stop: the worker holding the
        run kills its job and records the attempt failed, and the run is tried again."""

        attempt: int

        def apply(self, aggregate: "TableMaintenance") -> None:
            aggregate.stop_requested = self.attempt

    class RunRescheduled(_Run):
        """A task control moved the waiting run (for its due time or a retry) to ``due_at``: now (run-now) or the
        time it named (run-at)."""

        due_at: datetime

        def apply(self, aggregate: "TableMaintenance") -> None:
            aggregate.due_at = self.due_at

    def __init__(self, **_: Any):
        self.warehouse_id = self.table_id = UUID(int=0)
        self.queue = ""
        self.runs = 0
        self.open_run: int | None = None
        self.due_at: datetime | None = None
        self.settings: dict[str, Any] = {}
        self.table_name: list[str] = []
        self.attempts = 0
        self.running: int | None = None
        self.stop_requested: int | None = None  # the running attempt a task control asked to stop
        self.last_ended_at: datetime | None = None

    def _close(self, at: datetime) -> None:
        self.open_run = None
        self.running = None
        self.stop_requested = None
        self.due_at = None
        self.last_ended_at = at

    # --- commands ------------------------------------------------------------------------------------------------

    @classmethod
    def schedule(cls, found: "TableMaintenance | None", warehouse_id: UUID, table_id: UUID, table_name: list[str],
                 queue: str, due_at: datetime, reason: str, settings: Mapping[str, Any],
                 by: Provenance) -> "TableMaintenance | None":
        """With the next run scheduled; None when a run is open already (it covers what this one would do)."""
        if found is not None and found.open_run is not None:
            return None
        run = (found.runs if found is not None else 0) + 1
        fields = {"warehouse_id": warehouse_id, "table_id": table_id, "queue": queue, "run": run,
                  "table_name": list(table_name), "due_at": due_at, "reason": reason, "settings": dict(settings),
                  "actor": by.actor, "request_id": by.request_id}
        if found is None:
            return cls._create(cls.RunScheduled, id=maintenance_id(table_id, queue), **fields)
        found.trigger_event(cls.RunScheduled, originator_topic=get_topic(cls), **fields)
        return found

    def _fields(self, by: Provenance) -> dict[str, Any]:
        if self.open_run is None:
            raise RunRefused(f"no {self.queue} run of table {self.table_id} is open")
        return {"warehouse_id": self.warehouse_id, "table_id": self.table_id, "queue": self.queue,
                "run": self.open_run, "actor": by.actor, "request_id": by.request_id}

    def is_due(self, now: datetime) -> bool:
        return self.open_run is not None and self.due_at is not None and self.due_at <= now

    def start(self, worker: str, by: Provenance) -> int:
        """Records that ``worker`` (holding the run's claim) starts the next attempt; returns its number."""
        attempt = self.attempts + 1
        self.trigger_event(self.RunStarted, attempt=attempt, worker=worker, abandoned=self.running,
                           **self._fields(by))
        return attempt

    def succeed(self, attempt: int, figures: Mapping[str, int], seconds: float, by: Provenance) -> None:
        self._attempt_running(attempt)
        self.trigger_event(self.RunSucceeded, attempt=attempt, figures=dict(figures), seconds=round(seconds, 3),
                           **self._fields(by))

    def fail(self, attempt: int, error: str, now: datetime, backoff: Backoff, by: Provenance,
             stopped: bool = False) -> datetime | None:
        """Records the failed attempt; when the next one is due (None: the run failed for good). An attempt
        ``stopped`` by a task control is always tried again, after the first pause: a stop is not a failure of the
        work."""
        self._attempt_running(attempt)
        retry_at = backoff.retry_at(now, attempt)
        if retry_at is None and stopped:
            retry_at = now + timedelta(seconds=backoff.first_seconds)
        self.trigger_event(self.RunFailed, attempt=attempt, error=error, retry_at=retry_at, **self._fields(by))
        return retry_at

    def _attempt_running(self, attempt: int) -> None:
        if self.running != attempt:
            raise RunRefused(f"attempt {attempt} of the {self.queue} run of table {self.table_id} is not running "
                             f"(another worker took the run over)")

    def cancel(self, reason: str, by: Provenance, running_too: bool = False) -> bool:
        """Ends the open run unrun; False (nothing recorded) when none is open or an attempt runs (it finishes: a
        Spark job's commits cannot be called back), unless ``running_too`` (the claim's holder, whose attempt is an
        abandoned one)."""
        if self.open_run is None or (self.running is not None and not running_too):
            return False
        self.trigger_event(self.RunCancelled, reason=reason, **self._fields(by))
        return True

    def request_stop(self, by: Provenance) -> bool:
        """Asks the running attempt to stop; False (nothing recorded) when none runs or its stop was asked already."""
        if self.running is None or self.stop_requested == self.running:
            return False
        self.trigger_event(self.StopRequested, attempt=self.running, **self._fields(by))
        return True

    def reschedule(self, due_at: datetime, now: datetime, by: Provenance) -> bool:
        """Moves a waiting run to ``due_at`` (run-now: now); False (nothing recorded) when none waits (none is open,
        or it is running) or it would change nothing (already due when asked to run now, or due at that time)."""
        if self.open_run is None or self.running is not None or self.due_at == due_at:
            return False
        if due_at <= now and self.due_at is not None and self.due_at <= now:
            return False
        self.trigger_event(self.RunRescheduled, due_at=due_at, **self._fields(by))
        return True
