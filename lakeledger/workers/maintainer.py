"""The workers that keep tables healthy: ``MaintenanceChecks`` looks at each table an enabled policy reaches and
schedules a run of each action whose trigger holds (lakeledger/domain/maintenance_triggers.py); ``MaintenanceRuns``
runs the due runs as Spark jobs (lakeledger/maintenance/spark.py), one at a time per worker process.

A run is claimed by a Postgres session lock on a connection held for the whole job: any number of `lakeledger workers`
may take part, and each run has one worker at a time. A worker killed mid-job loses its connection, so its lock; the
run is still due (its task RUNNING with no outcome), and the next worker to look takes it over, its start naming the
abandoned attempt. Everything a run records is an event on the table's TableMaintenance aggregate, appended only by
the claim's holder."""

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import psycopg
from psycopg import Cursor

from lakeledger.domain.maintenance_policy import DATA_COMPACTION, SNAPSHOT_EXPIRY, TABLE, effective
from lakeledger.domain.maintenance_triggers import (
    TableFigures,
    check_due,
    due_reason,
    enabled,
    next_check,
    small_file_bytes,
)
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table_maintenance import (
    POLICY_OF_QUEUE,
    QUEUE_OF_POLICY,
    Backoff,
    RunRefused,
    TableMaintenance,
    maintenance_id,
    run_task_id,
)
from lakeledger.domain.warehouse import Warehouse
from lakeledger.maintenance import procedures
from lakeledger.maintenance.figures import table_figures
from lakeledger.maintenance.spark import CATALOG, Job, JobFailed, JobStopped, JobStopRequested, SparkJobs
from lakeledger.projections import maintenance_policies_queries, maintenance_queries
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.maintenance_queries import LiveTable, TableToCheck
from lakeledger.services.metadata_files import MetadataFiles
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage import Storages
from lakeledger.workers.purger import bounded_error
from lakeledger.workers.timed_work import TimedWork

logger = logging.getLogger("lakeledger.maintenance")

ACTOR = "system:maintenance"
# a table whose look failed (its metadata unreadable, its storage down) is looked at again this much later
FAILED_CHECK_PAUSE = timedelta(minutes=5)
_NO_TABLE = UUID(int=0)


def _settings(found: dict[str, Any], policy_type: str) -> dict[str, Any]:
    return {name: setting.value for name, setting in found[policy_type].items()}


class MaintenanceChecks(TimedWork):
    """Looks at the tables an enabled policy may reach, a batch at a time, and schedules what is due."""

    name = "maintenance-checks"
    logger = logger
    batch = 100
    failure_message = "Maintenance check pass failed"
    shortest_pause_seconds = 1.0

    def __init__(self, ledger: Ledger, pool: Any, files: MetadataFiles, storages: Storages, check_seconds: float):
        super().__init__(check_seconds)
        self.ledger, self.pool, self.files, self.storages = ledger, pool, files, storages
        self.after = _NO_TABLE

    def seconds_until_next_due(self) -> float | None:
        return None  # every check_seconds

    def batch_was_last(self, taken: int, done_in_pass: int) -> bool:
        if taken < self.batch:
            self.after = _NO_TABLE  # the next pass starts over
            return True
        return False

    def run_batch(self) -> tuple[int, int]:
        with self.pool.connection() as conn, conn.cursor() as cur:
            if maintenance_queries.read_only(cur):
                return 0, 0  # nothing is scheduled while no commit would be let through
            tables = maintenance_queries.tables_to_check(cur, self.after, self.batch)
            scheduled = 0
            for table in tables:
                try:
                    scheduled += self.check(cur, table)
                except Exception:  # one table whose metadata cannot be read holds up no other
                    logger.warning("Maintenance check of table %s failed", table.id, exc_info=True)
                    conn.rollback()
                    now = self.ledger.now()
                    maintenance_queries.record_table_check(cur, table.id, now, now + FAILED_CHECK_PAUSE)
                conn.commit()
        if tables:
            self.after = tables[-1].id
        return len(tables), scheduled

    def check(self, cur: Cursor, table: TableToCheck) -> int:
        """Schedules the table's due actions; how many."""
        levels = maintenance_policies_queries.levels(cur, TABLE, table.id, table.warehouse_id)
        if not levels:
            return 0
        policy = effective(levels)
        now = self.ledger.now()
        figures: TableFigures | None = None  # read once, for the first due queue
        scheduled = 0
        looked: dict[str, tuple[Any, datetime | None]] = {}  # enabled queue -> (its interval, its last look)
        for policy_type, queue in QUEUE_OF_POLICY.items():
            settings = _settings(policy, policy_type)
            if not enabled(settings):
                continue
            looked[queue] = (settings["schedule-interval"], table.checks.get(queue))
            changed_at = table.time_travel_retention_set_at if policy_type == SNAPSHOT_EXPIRY else None
            if not check_due(settings, table.checks.get(queue), now, changed_at):
                continue
            if figures is None:
                figures = self._figures(table, small_file_bytes(_settings(policy, DATA_COMPACTION)))
            reason = due_reason(policy_type, settings, figures, now, table.time_travel_retention)
            if reason is not None and self._schedule(table, queue, reason, settings):
                scheduled += 1
            maintenance_queries.record_check(cur, table.id, queue, now)
            looked[queue] = (settings["schedule-interval"], now)
        maintenance_queries.record_table_check(cur, table.id, now, next_check(looked, now))
        return scheduled

    def _figures(self, table: TableToCheck, small_bytes: int) -> TableFigures:
        return _figures(self.ledger, self.files, self.storages, table.warehouse_id, table.metadata_location,
                        small_bytes)

    def _schedule(self, table: TableToCheck, queue: str, reason: str, settings: dict[str, Any]) -> bool:
        by = Provenance(ACTOR, f"maintenance-check-{uuid4()}")

        def command() -> bool:
            found = self.ledger.log.get(TableMaintenance, maintenance_id(table.id, queue))
            changed = TableMaintenance.schedule(found, table.warehouse_id, table.id, [*table.namespace, table.name],
                                                queue, self.ledger.now(), reason, settings, by)
            if changed is None:
                return False
            self.ledger.append(changed)
            logger.info("Scheduled %s of table %s: %s", queue, table.id, reason)
            return True

        return self.ledger.retrying(command)


class MaintenanceRuns(TimedWork):
    """Runs the due maintenance runs, one job at a time."""

    name = "maintenance-runs"
    logger = logger
    batch = 10
    failure_message = "Maintenance run pass failed"
    shortest_pause_seconds = 0.5
    wakes_on_append = True

    def __init__(self, ledger: Ledger, pool: Any, conninfo: str, files: MetadataFiles, storages: Storages,
                 jobs: SparkJobs, tasks_view: ProjectionDriver, backoff: Backoff, poll_seconds: float):
        super().__init__(poll_seconds, min_gap_seconds=0.2)
        self.ledger, self.pool, self.conninfo, self.jobs = ledger, pool, conninfo, jobs
        self.files, self.storages = files, storages
        self.tasks_view = tasks_view
        self.backoff = backoff
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.read_model = tasks_view.name
        self._stop = threading.Event()
        self._done_in_batch = 0

    def run(self, stop: threading.Event, wake: threading.Event) -> None:
        self._stop = stop  # a job in flight is killed when the worker stops
        super().run(stop, wake)

    def seconds_until_next_due(self) -> float | None:
        with self.pool.connection() as conn, conn.cursor() as cur:
            return maintenance_queries.seconds_until_next_run(cur)

    def batch_was_last(self, taken: int, done_in_pass: int) -> bool:
        # due runs that all belong to live workers are no reason to look again at once
        return taken < self.batch or self._done_in_batch == 0

    def run_batch(self) -> tuple[int, int]:
        self.tasks_view.caught_up()
        with self.pool.connection() as conn, conn.cursor() as cur:
            # a job's commits would be refused: due runs wait for the mode to end rather than spend their attempts
            due = [] if maintenance_queries.read_only(cur) else maintenance_queries.due_runs(cur, self.batch)
        self._done_in_batch = 0
        for table_id, queue in due:
            if self._stop.is_set():
                break
            if self.run_one(table_id, queue):
                self._done_in_batch += 1
        return len(due), self._done_in_batch

    def run_one(self, table_id: UUID, queue: str) -> bool:
        """Claims the run and runs it; False when another worker holds it or it is no longer due."""
        with psycopg.connect(self.conninfo, autocommit=True) as claim:
            row = claim.execute("SELECT pg_try_advisory_lock(%s)", (_lock_key(table_id, queue),)).fetchone()
            if row is None or not row[0]:
                return False
            return self._claimed(table_id, queue)

    def _claimed(self, table_id: UUID, queue: str) -> bool:
        run = self.ledger.log.get(TableMaintenance, maintenance_id(table_id, queue))
        if run is None or not run.is_due(self.ledger.now()) or run.open_run is None:
            return False  # ended, or moved on, since the read model said so
        task = run_task_id(table_id, queue, run.open_run)
        by = Provenance(ACTOR, f"maintenance-{task}-{run.attempts + 1}")
        with self.pool.connection() as conn, conn.cursor() as cur:
            table = maintenance_queries.live_table(cur, table_id)
        if table is None:
            self._record(table_id, queue, lambda r: r.cancel("its table is gone", by, running_too=True))
            return True
        if run.attempts == 0 and (gone := self._no_longer_due(table, queue, run.settings)) is not None:
            self._record(table_id, queue, lambda r: r.cancel(gone, by))
            logger.info("Maintenance run %s cancelled: %s", task, gone)
            return True
        attempt = self._record(table_id, queue, lambda r: r.start(self.worker, by))
        started = time.monotonic()
        try:
            # the retention as the warehouse has it now, not as when the run was scheduled: one set since counts
            calls = procedures.calls(POLICY_OF_QUEUE[queue], run.settings, [*table.namespace, table.name], CATALOG,
                                     self.ledger.now(), table.time_travel_retention)
            figures = self.jobs.run(Job(table.warehouse_name, calls, by.request_id), self._stop,
                                    lambda: self._stop_requested(task))
        except JobStopped:
            logger.info("Maintenance run %s stopped with its worker; the next worker takes it over", task)
            return False
        except JobStopRequested as stopped:
            logger.info("Maintenance run %s (attempt %s) stopped by a task control", task, attempt)
            reason = str(stopped)
            self._record(table_id, queue,
                         lambda r: r.fail(attempt, reason, self.ledger.now(), self.backoff, by, stopped=True))
            return True
        except Exception as e:
            error = str(e) if isinstance(e, JobFailed) else bounded_error(e)
            logger.warning("Maintenance run %s (attempt %s) failed: %s", task, attempt, error)
            self._record(table_id, queue,
                         lambda r: r.fail(attempt, error, self.ledger.now(), self.backoff, by))
            return True
        seconds = time.monotonic() - started
        self._record(table_id, queue, lambda r: r.succeed(attempt, figures, seconds, by))
        logger.info("Maintenance run %s succeeded in %.1f s: %s", task, seconds, figures)
        return True

    def _stop_requested(self, task: UUID) -> bool:
        self.tasks_view.caught_up()
        with self.pool.connection() as conn, conn.cursor() as cur:
            return maintenance_queries.stop_requested(cur, task)

    def _no_longer_due(self, table: LiveTable, queue: str, settings: dict[str, Any]) -> str | None:
        """Why a run's trigger no longer holds at its first start, or None when it still does. Runs scheduled in one
        look wait for each other: a data compaction rewrites the manifests a metadata compaction was scheduled for, an
        expiry ends the snapshots another one counted. A later attempt's trigger held at the first."""
        policy_type = POLICY_OF_QUEUE[queue]
        small_bytes = small_file_bytes(settings) if policy_type == DATA_COMPACTION else 0
        try:
            figures = _figures(self.ledger, self.files, self.storages, table.warehouse_id, table.metadata_location,
                               small_bytes)
        except Exception:  # unreadable now: the job tries, and its attempt records what fails
            logger.warning("Maintenance run of %s on table %s: its trigger could not be checked again", queue,
                           table.name, exc_info=True)
            return None
        if due_reason(policy_type, settings, figures, self.ledger.now(), table.time_travel_retention) is not None:
            return None
        return "no longer due when its turn came: its trigger does not hold on the table as it is now"

    def _record(self, table_id: UUID, queue: str, change: Callable[[TableMaintenance], Any]) -> Any:
        """Applies ``change`` to the run as the log has it and appends it, again on a conflict."""

        def command() -> Any:
            run = self.ledger.log.get(TableMaintenance, maintenance_id(table_id, queue))
            if run is None:
                raise RunRefused(f"no {queue} runs of table {table_id}")
            result = change(run)
            self.ledger.append(run)
            return result

        return self.ledger.retrying(command)


def _figures(ledger: Ledger, files: MetadataFiles, storages: Storages, warehouse_id: UUID,
             metadata_location: str | None, small_bytes: int) -> TableFigures:
    warehouse = ledger.log.get(Warehouse, warehouse_id)
    if warehouse is None or metadata_location is None:
        return TableFigures(0, None, 0, 0, 0, 0)
    storage = storages.of(warehouse)
    return table_figures(files.parsed(metadata_location, storage), storage, small_bytes)


def _lock_key(table_id: UUID, queue: str) -> int:
    """The run's session lock: 64 bits of its aggregate's id, as Postgres' signed bigint."""
    key = maintenance_id(table_id, queue).int >> 64
    return key - (1 << 64) if key >= 1 << 63 else key
