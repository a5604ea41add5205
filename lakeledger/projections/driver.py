"""Moves a projection along the log.

Any process may advance a projection: the position row is locked ``FOR UPDATE`` while a batch is
applied, and the read-model writes and the new position commit in one transaction, so a batch is
applied exactly once whoever runs it. The catalog projection is applied inside each append's own
transaction (``apply_in_transaction``), so a write is visible the moment it commits (read-your-writes
from any process); ``advance()`` (the workers) steps aside when another process already holds the
row, and ``rebuild`` replays everything into new tables that replace the live ones when complete.
"""

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from psycopg import Connection, Cursor
from psycopg.rows import tuple_row
from psycopg_pool import ConnectionPool

from lakeledger.domain.errors import CatchingUp, ReadModelStuck
from lakeledger.eventstore.identity import event_type
from lakeledger.eventstore.log import EventLog, StoredNotification
from lakeledger.operations.health import reason
from lakeledger.projections import logged
from lakeledger.projections.storable import bounded_fields

BATCH = 1000


class Projection(Protocol):
    # read-only members: a projection's class attributes (``tables = ("ll_a", "ll_b")``) then match
    @property
    def name(self) -> str: ...

    @property
    def tables(self) -> tuple[str, ...]: ...

    @property
    def topics(self) -> tuple[str, ...]:
        """The event topics it reads; empty means all."""
        ...

    def apply(self, event: object, cur: Cursor) -> None: ...


class ProjectionDriver:
    # how long a request that needs this read model at the head waits for another process applying it
    # (LAKELEDGER__READ_MODEL_WAIT_SECONDS) before it answers 503
    wait_seconds: float = 60.0

    def __init__(self, projection: Projection, log: EventLog, pool: ConnectionPool):
        self.projection = projection
        self.log = log
        self.pool = pool

    @property
    def name(self) -> str:
        return self.projection.name

    def caught_up(self, upto: int | None = None) -> int:
        """Blocks until the read model has applied the log up to ``upto`` (default: the head as of now), applying
        what is missing itself, or waiting while another process applies it; ``CatchingUp`` after
        ``wait_seconds``. Returns the position reached."""
        deadline = time.monotonic() + self.wait_seconds
        while True:
            advanced = self.advance()
            if advanced is not None:
                return advanced
            # another process holds the position row: it is applying; ours follows once it commits
            if upto is not None and (reached := self.position()) >= upto:
                return reached
            if time.monotonic() > deadline:
                raise CatchingUp(f"The {self.name} read model is being brought up to the log by another process"
                                 f" (still after {self.wait_seconds:g} s); retry shortly")
            time.sleep(0.01)

    def position(self) -> int:
        """The log position this read model has applied up to, as committed."""
        with self.pool.connection() as conn:
            row = conn.execute("SELECT position FROM ll_projection_positions WHERE name = %s", (self.name,)).fetchone()
        if row is None:
            raise RuntimeError(f"Projection {self.name} is not registered; run `lakeledger migrate`")
        return row[0]

    def advance(self) -> int | None:
        """Applies pending events, unless another process is applying them right now (then returns
        None: that process will). ``ReadModelStuck`` names the event it cannot apply, if one fails alone."""
        try:
            return self._advance()
        except Exception as error:
            raise self.stuck_on(error) from error

    def stuck_on(self, error: Exception) -> Exception:
        """``error`` as ``ReadModelStuck`` when an event this read model has not applied fails alone (``diagnose``);
        otherwise ``error`` itself (Postgres out of reach, a lock timeout: nothing the log holds)."""
        if isinstance(error, ReadModelStuck):
            return error
        try:
            found = self.diagnose()
        except Exception:  # the database is what fails: the original error says so
            return error
        if found is None:
            return error
        position, topic, failure = found
        return ReadModelStuck(self.name, position, event_type(topic), reason(failure))

    def diagnose(self) -> tuple[int, str, Exception] | None:
        """The first event after this read model's position that its writer fails on when applied alone, with the
        failure; None when each applies. Each event goes in a savepoint of a transaction that is rolled back:
        nothing is kept. Only run after a failure."""
        with self.pool.connection() as conn, conn.transaction(force_rollback=True), conn.cursor() as cur:
            cur.execute("SELECT position FROM ll_projection_positions WHERE name = %s FOR UPDATE SKIP LOCKED",
                        (self.name,))
            row = cur.fetchone()
            if row is None:
                return None
            for item in logged.read(conn, self.log, row[0], None, BATCH, self.projection.topics):
                try:
                    with conn.transaction():
                        logged.write(self._writer(), [item], cur)
                except Exception as failure:  # noqa: BLE001 - what the alarm reports
                    return item.position, item.topic, failure
        return None

    def _advance(self) -> int | None:
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute("SELECT position FROM ll_projection_positions WHERE name = %s FOR UPDATE SKIP LOCKED",
                        (self.name,))
            row = cur.fetchone()
            if row is None:
                return None
            position = self._apply_after(row[0], cur)
            if position != row[0]:
                cur.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now() WHERE name = %s",
                            (position, self.name))
        return position

    def apply_in_transaction(self, conn: Connection, appended: list[StoredNotification],
                             checks: Sequence[Callable[[Cursor], None]] = ()) -> None:
        """Applies just-appended events inside their own append transaction (an ``EventLog.save``
        hook). Appends are serialised by the events-table lock, so the projection moves in exact log
        order. The usual case (everything before these events applied) costs one conditional update
        of the position; otherwise the gap is applied first. ``checks`` then see the read model as
        of just before these events, and may refuse them by raising."""
        first, last = appended[0].position, appended[-1].position
        with conn.cursor(row_factory=tuple_row) as cur:
            cur.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now()"
                        " WHERE name = %s AND position = %s RETURNING position", (last, self.name, first - 1))
            if cur.fetchone() is None:
                cur.execute("SELECT position FROM ll_projection_positions WHERE name = %s FOR UPDATE", (self.name,))
                row = cur.fetchone()
                if row is None:
                    raise RuntimeError(f"Projection {self.name} is not registered; run `lakeledger migrate`")
                position = self._apply_after(row[0], cur, upto=first - 1)
                appended = [stored for stored in appended if stored.position > position]
                cur.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now() WHERE name = %s",
                            (max(position, last), self.name))
            for check in checks:
                check(cur)
            for stored in appended:
                self.projection.apply(bounded_fields(stored.event), cur)

    def apply_in_one_trip(self, cur: Cursor, events: list[Any]) -> None:
        """``apply_in_transaction``'s work sent without waiting for an answer: the events are applied, then the
        database moves the position past them, or refuses the append when this read model has not applied every
        event before them (lakeledger/migrations/0017_append_in_one_round_trip.sql); the caller then appends again with
        ``apply_in_transaction``."""
        for event in events:
            self.projection.apply(bounded_fields(event), cur)
        cur.execute("SELECT ll_advance_past_append(%s, %s)", (self.name, len(events)))

    def rebuild(self, progress=None) -> int:
        """Replays the whole log into new tables beside the live ones and swaps them in when complete
        (lakeledger/projections/rebuild.py): readers and writers wait only for the swap."""
        from lakeledger.projections.rebuild import Rebuild

        conninfo = self.pool.conninfo
        return Rebuild([self], self.log, conninfo() if callable(conninfo) else conninfo, progress).run()

    def _apply_after(self, position: int, cur: Cursor, upto: int | None = None) -> int:
        topics = self.projection.topics
        # With a topic filter the batches skip what the projection ignores, so the position it
        # reaches is the head as seen before reading, not the last event it applied.
        head = upto if upto is not None else (logged.head(cur.connection) if topics else None)
        while True:
            batch = logged.read(cur.connection, self.log, position, head, BATCH, topics)
            if batch:
                logged.write(self._writer(), batch, cur)
                position = batch[-1].position
            if len(batch) < BATCH:
                return max(position, head or 0)

    def _writer(self) -> logged.BatchWriter:
        """The projection's own batch writer when it has one (many rows per statement), else its ``apply``."""
        live = getattr(self.projection, "live_writer", None)
        return live() if live is not None else logged.EachEvent(self.projection)
