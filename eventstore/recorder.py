"""eventsourcing's Postgres recorder, with one addition: a hook that runs inside the append
transaction once the events have their log positions, while the events-table lock still orders
every append. The catalog read model is kept there, so it is never behind the log it comes from,
and conditions checked there cannot be raced. The inserted rows already carry their append times: the
database sets them in the insert, after the lock (migrations/0005_append_time.sql), so an append
time is as ordered as a position; the hook runs between that and the commit, which is why resolving a
recent instant waits for an append in flight (eventstore/append_time.py)."""

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import Cursor

IN_TRANSACTION = "in_transaction"


class AppendRefused(BaseException):
    """Carries the hook's exception out of the recorder. It derives from BaseException because the
    library's insert path catches ``Exception`` inside its transaction block and would commit the
    events anyway; a BaseException leaves the block, and the transaction rolls back."""

    def __init__(self, error: Exception):
        super().__init__(error)
        self.error = error


class LedgerRecorder(PostgresApplicationRecorder):
    def _fetch_ids_after_insert_events(self, curs: Cursor, stored_events: Sequence[StoredEvent],
                                       **kwargs: Any) -> Sequence[int] | None:
        ids = super()._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        hook = kwargs.get(IN_TRANSACTION)
        if hook is not None and ids:
            try:
                hook(curs.connection, list(ids))
            except Exception as e:
                raise AppendRefused(e) from e
        return ids
