"""Deletes a dropped table's files when its drop asked for a purge.

It follows the log like a projection (its position is tracked the same way), so every purge runs
once per drop whichever worker gets to it, and a purge interrupted by a crash is simply run again:
deleting what is already gone is a no-op. It only ever deletes at or below the table's own location,
and never the warehouse root."""

import logging
from typing import Any

from eventsourcing.utils import get_topic
from psycopg import Cursor

from ..domain.tabular import TABLE, Tabular
from ..domain.warehouse import Warehouse
from ..eventstore.log import EventLog
from ..storage import storage_for

log = logging.getLogger("lakeledger.purger")


class Purger:
    name = "purger"
    tables: tuple[str, ...] = ()
    topics = (get_topic(Tabular.Dropped),)

    def __init__(self, event_log: EventLog):
        self.log = event_log

    def apply(self, event: Any, cur: Cursor) -> None:
        if not isinstance(event, Tabular.Dropped) or event.typ != TABLE or not event.purge_requested:
            return
        warehouse = self.log.get(Warehouse, event.warehouse_id)
        if warehouse is None:
            return
        try:
            removed = storage_for(warehouse.profile()).delete_tree(event.location)
        except Exception:
            # A purge that cannot run must not stop the log behind it; the files stay, and say so.
            log.exception("Purge of %s (table %s) failed", event.location, event.originator_id)
            return
        log.info("Purged %s files of table %s at %s", removed, event.originator_id, event.location)
