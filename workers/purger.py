"""Deletes a table's files once its deletion is final (a hard drop, or the expiry of a soft one) and its drop
asked for a purge.

It follows the log like a projection (its position is tracked the same way, and one process at a time holds
it), so every purge runs once per final deletion whichever worker gets to it, and a purge interrupted by a
crash is simply run again: deleting what is already gone is a no-op, and ``Purged`` is recorded once. It runs
here, never in a request. It only ever deletes at or below the table's own location, never the warehouse root,
and not at all while another table or view owns a location that overlaps it."""

import logging
from typing import Any
from uuid import uuid4

from eventsourcing.utils import get_topic
from psycopg import Cursor

from lakeledger.domain.provenance import SYSTEM, Provenance
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import TABLE, Tabular
from lakeledger.domain.warehouse import Warehouse
from lakeledger.projections.catalog_queries import OVERLAPPING_TABULAR
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage import Storages

log = logging.getLogger("lakeledger.purger")


class Purger:
    name = "purger"
    tables: tuple[str, ...] = ()
    # drops and expiries are recorded under Tabular's classes; the subclasses' names are listed too
    topics = tuple(get_topic(cls) for cls in (Tabular.Dropped, Tabular.Expired, Table.Dropped, Table.Expired))

    def __init__(self, ledger: Ledger, storages: Storages, max_files_per_second: float = 0):
        self.ledger = ledger
        self.storages = storages
        self.max_files_per_second = max_files_per_second

    def apply(self, event: Any, cur: Cursor) -> None:
        if event.typ != TABLE or not event.purge_requested:
            return
        if isinstance(event, Tabular.Dropped) and event.expires_at is not None:
            return  # soft: the files stay until it expires
        self._purge(event, cur)

    def _purge(self, event: Any, cur: Cursor) -> None:
        table = self.ledger.log.get(Tabular, event.originator_id)
        if table is None or not table.awaits_purge:
            return  # purged already (a crash after the record, before the position moved), or registered again
        warehouse = self.ledger.log.get(Warehouse, event.warehouse_id)
        if warehouse is None:
            return
        cur.execute(OVERLAPPING_TABULAR, {"warehouse_id": event.warehouse_id, "location": event.location,
                                          "exclude": event.originator_id})
        other = cur.fetchone()
        removed = 0
        if other is not None:
            log.warning("Not purging %s (table %s): table or view %s owns %s", event.location,
                        event.originator_id, other[0], other[1])
        else:
            try:
                removed = self.storages.of(warehouse).delete_tree(event.location, self.max_files_per_second)
            except Exception:
                # A purge that cannot run must not stop the log behind it; the files stay, and the log says so.
                log.exception("Purge of %s (table %s) failed", event.location, event.originator_id)
                return
        table.record_purge(removed, Provenance(SYSTEM, f"purge-{uuid4()}"))
        self.ledger.append(table)
        log.info("Purged %s files of table %s at %s", removed, event.originator_id, event.location)
