"""Deletes a table's files once its deletion is final (a hard drop, or the expiry of a soft one) and its drop
asked for a purge.

It follows the log like a projection (its position is tracked the same way, and one process at a time holds
it), so every purge runs once per final deletion whichever worker gets to it, and a purge interrupted by a
crash is simply run again: deleting what is already gone is a no-op, and ``Purged`` is recorded once. It runs
here, never in a request. It only ever deletes at or below the table's own location, never the warehouse root,
and not at all while another table or view owns a location that overlaps it.

A purge that fails (the storage unreachable, its credential revoked) must not hold up the log behind it: it is
written to ``ll_purge_retries`` in the transaction that moves the purger past the drop, and ``PurgeRetries``
tries it again with a pause that doubles each time, until the storage lets it through.

Each attempt is in the log: ``PurgeStarted`` once the claim is held (the purger's place in the log, or the failed
purge's row locked ``FOR UPDATE SKIP LOCKED``), appended in its own transaction before any file is touched, then
``Purged`` or ``PurgeFailed``. The claim alone decides who runs a purge, and the aggregate's version makes a second
start of the same attempt a conflict. A worker killed mid-purge leaves a started attempt with no outcome; the claim
comes back (the position did not move, the row lock is gone), and the next attempt's start names it as abandoned."""

import logging
import os
import re
import socket
from datetime import timedelta
from typing import Any
from uuid import UUID, uuid4

from eventsourcing.utils import get_topic
from psycopg import Cursor

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import GENERIC_TABLE, TABLE, Tabular
from lakeledger.domain.warehouse import Warehouse
from lakeledger.projections.catalog_queries import OVERLAPPING_TABULAR, overlap_params
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage import Storages
from lakeledger.workers.timed_work import TimedWork

logger = logging.getLogger("lakeledger.purger")

MAX_RETRY_PAUSE_SECONDS = 3600.0
RETRY_BATCH = 20
MAX_ERROR_CHARS = 500
ACTOR = "system:purger"
_QUERY_STRING = re.compile(r"(\w+://[^\s?]*)\?\S*")  # a presigned URL's query holds its signature

_REMEMBER_FAILURE = (
    "INSERT INTO ll_purge_retries (table_id, warehouse_id, location, attempts, next_attempt_at, last_error)"
    " VALUES (%(table_id)s, %(warehouse_id)s, %(location)s, 1, now() + make_interval(secs => %(pause)s), %(error)s)"
    " ON CONFLICT (table_id) DO UPDATE SET attempts = ll_purge_retries.attempts + 1,"
    " next_attempt_at = now() + make_interval(secs => %(pause)s), last_error = EXCLUDED.last_error")
_DUE = ("SELECT table_id, warehouse_id, location, attempts FROM ll_purge_retries WHERE next_attempt_at <= now()"
        " ORDER BY next_attempt_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED")
_NEXT_DUE = "SELECT extract(epoch FROM min(next_attempt_at) - now()) FROM ll_purge_retries"
_DUE_NOW = "UPDATE ll_purge_retries SET next_attempt_at = now() WHERE table_id = %(table_id)s"
_FORGET = "DELETE FROM ll_purge_retries WHERE table_id = %(table_id)s"


class Purger:
    name = "purger"
    tables: tuple[str, ...] = ()
    # drops and expiries are recorded under Tabular's classes; the subclasses' names are listed too
    # a run-now of a failed purge (Tabular.PurgeRetryDue) makes its retry due at once
    topics = tuple(get_topic(cls) for cls in (Tabular.Dropped, Tabular.Expired, Table.Dropped, Table.Expired,
                                              GenericTable.Dropped, GenericTable.Expired, Tabular.PurgeRetryDue,
                                              Table.PurgeRetryDue, GenericTable.PurgeRetryDue))

    def __init__(self, ledger: Ledger, storages: Storages, max_files_per_second: float = 0,
                 retry_seconds: float = 60.0):
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.ledger = ledger
        self.storages = storages
        self.max_files_per_second = max_files_per_second
        self.retry_seconds = retry_seconds

    def apply(self, event: Any, cur: Cursor) -> None:
        if isinstance(event, Tabular.PurgeRetryDue):
            cur.execute(_DUE_NOW, {"table_id": event.originator_id})
            return
        if event.typ not in (TABLE, GENERIC_TABLE) or not event.purge_requested:
            return
        if isinstance(event, Tabular.Dropped) and event.expires_at is not None:
            return  # soft: the files stay until it expires
        self._purge(event, cur)

    def _purge(self, event: Any, cur: Cursor) -> None:
        error = self.purge(event.originator_id, event.warehouse_id, event.location, cur, self.retry_seconds)
        if error is not None:
            cur.execute(_REMEMBER_FAILURE, {"table_id": event.originator_id, "warehouse_id": event.warehouse_id,
                                            "location": event.location, "pause": self.retry_seconds, "error": error})

    def retry_due(self, cur: Cursor) -> tuple[int, int]:
        """One pass over the failed purges whose pause is over: (how many were tried, how many went through)."""
        cur.execute(_DUE, {"limit": RETRY_BATCH})
        due = cur.fetchall()
        done = 0
        for table_id, warehouse_id, location, attempts in due:
            pause = min(MAX_RETRY_PAUSE_SECONDS, self.retry_seconds * 2 ** attempts)
            error = self.purge(table_id, warehouse_id, location, cur, pause)
            if error is None:
                cur.execute(_FORGET, {"table_id": table_id})
                done += 1
            else:
                cur.execute(_REMEMBER_FAILURE, {"table_id": table_id, "warehouse_id": warehouse_id,
                                                "location": location, "pause": pause, "error": error})
        return len(due), done

    def purge(self, table_id: UUID, warehouse_id: UUID, location: str, cur: Cursor,
              pause: float) -> str | None:
        """Deletes the table's files and records it; None when done (or nothing is left to do), else the error
        (recorded as a failed attempt, to be tried again in ``pause`` seconds)."""
        table = self.ledger.log.get(Tabular, table_id)
        if table is None or not table.awaits_purge:
            return None  # purged already (a crash after the record, before the position moved), or registered again
        warehouse = self.ledger.log.get(Warehouse, warehouse_id)
        if warehouse is None:
            return None
        by = Provenance(ACTOR, f"purge-{uuid4()}")
        attempt = table.start_purge(self.worker, by)
        self.ledger.append(table)
        cur.execute(OVERLAPPING_TABULAR, overlap_params(warehouse_id, location, table_id))
        other = cur.fetchone()
        removed = 0
        if other is not None:
            logger.warning(
                "Not purging %s (table %s): table or view %s owns %s", location, table_id, other[0], other[1]
            )
        else:
            try:
                removed = self.storages.of(warehouse).delete_tree(location, self.max_files_per_second)
            except Exception as exc:
                logger.warning("Purge of %s (table %s) failed; it will be tried again: %s", location, table_id, exc,
                               exc_info=True)
                error = bounded_error(exc)
                table.fail_purge(attempt, error, self.ledger.now() + timedelta(seconds=pause), by)
                self.ledger.append(table)
                return error
        table.record_purge(removed, by)
        self.ledger.append(table)
        logger.info("Purged %s files of table %s at %s", removed, table_id, location)
        return None


def bounded_error(exc: Exception) -> str:
    """What a failed attempt records: the exception's type and message, without URLs' query strings (a presigned
    URL's signature), at most ``MAX_ERROR_CHARS``."""
    text = _QUERY_STRING.sub(r"\1?…", f"{type(exc).__name__}: {exc}")
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"


class PurgeRetries(TimedWork):
    """Tries failed purges again (see ``Purger.retry_due``); any number of workers may run it at once, each
    taking the rows no other holds."""

    name = "purge-retries"
    logger = logger
    batch = RETRY_BATCH
    failure_message = "Purge retry pass failed"
    shortest_pause_seconds = 0.5

    def __init__(self, purger: Purger, pool, poll_seconds: float = 60.0):
        # A failure recorded from now on is due no sooner than the purger's first pause, so sleeping at most that
        # long (and less when a known retry is due sooner) never looks late, and an idle server wakes once a pause.
        super().__init__(min(poll_seconds, purger.retry_seconds))
        self.purger = purger
        self.pool = pool

    def seconds_until_next_due(self) -> float | None:
        """By the database's clock, which set the retries' times."""
        with self.pool.connection() as conn, conn.cursor() as cur:
            cur.execute(_NEXT_DUE)
            seconds = cur.fetchone()[0]
        return None if seconds is None else float(seconds)

    def run_batch(self) -> tuple[int, int]:
        with self.pool.connection() as conn, conn.cursor() as cur:
            return self.purger.retry_due(cur)
