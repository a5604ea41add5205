"""Moves the OpenFGA tuple projection (lakeledger/projections/authz_tuples.py) along the log.

Like every projection, one process at a time holds its position row (``FOR UPDATE``) while it applies a batch,
and the mirror of the tuples and the new position commit together; OpenFGA is written just before that commit.
Three callers: the workers (``advance``, stepping aside when another process holds the row), a request that has
just appended a tuple-changing event (``catch_up``, which waits for the row: its answer must not come before its
own tuples are in OpenFGA), and ``lakeledger rebuild`` (a new mirror from the whole log, the store made to match it,
then swapped in: ``before_swap``).

The mirror names the store it describes. When the store is another one (a memory OpenFGA restarted and
``migrate`` made a new store, or the settings point elsewhere), the projection starts over from the beginning of
the log for it: the new store is filled from the log alone."""

import logging
from collections.abc import Iterable
from typing import Protocol

from psycopg import Cursor

from lakeledger.authz.objects import RelationTuple
from lakeledger.eventstore.log import EventLog
from lakeledger.projections.authz_tuples import RELEVANT, AuthzTuplesProjection
from lakeledger.projections.driver import ProjectionDriver

logger = logging.getLogger("lakeledger.authz")

_LOCK = "SELECT position FROM ll_projection_positions WHERE name = %s FOR UPDATE"


class TupleStore(Protocol):
    """The OpenFGA store the tuples go to (lakeledger/authz/openfga.py), as the remembered decisions pass it on."""

    @property
    def store_id(self) -> str: ...

    def tuples(self) -> list[RelationTuple]: ...

    def write(self, writes: Iterable[RelationTuple] = (), deletes: Iterable[RelationTuple] = ()) -> None: ...


class TupleProjectionRunner(ProjectionDriver):
    projection: AuthzTuplesProjection

    def __init__(self, projection: AuthzTuplesProjection, log: EventLog, pool, authorizer: TupleStore):
        super().__init__(projection, log, pool)
        self.authorizer = authorizer

    def advance(self) -> int | None:
        try:
            return self._run(_LOCK + " SKIP LOCKED")
        except Exception as error:
            raise self.stuck_on(error) from error

    def catch_up(self, position: int) -> int | None:
        """Applies everything up to at least ``position`` (a request's own append) before returning."""
        return self._run(_LOCK, until=position)

    def follow(self, kinds: set[type], position: int) -> None:
        """After an append (lakeledger/services/unit_of_work.py): its tuples are in OpenFGA before its request answers.
        The change itself is in the log whatever OpenFGA says; if OpenFGA cannot take the tuples now, the workers write
        them when it can, and the request still answers for what it did."""
        if kinds & RELEVANT:
            try:
                self.catch_up(position)
            except Exception:
                logger.warning("OpenFGA did not take the tuples of position %s yet; the workers will retry", position,
                            exc_info=True)

    def before_swap(self, conn, locked: bool) -> None:
        """A blue/green rebuild (lakeledger/projections/rebuild.py) fills a new mirror; OpenFGA's store is made to match
        it. Before the lock, the whole store is compared with the new mirror and corrected (the long part: a store
        emptied or changed behind our back is filled again); under the lock, only what the last events changed is
        written, and the mirror then names this store."""
        if not locked:
            # ``conn`` reads the new mirror: the rebuild puts its tables first in the search path
            wanted = {RelationTuple(u, r, o) for o, r, u in conn.execute('SELECT object, relation, "user" FROM '
                                                                        "ll_authz_tuples").fetchall()}
            conn.commit()
            have = set(self.authorizer.tuples())
            self.projection.begin()  # from here, the changes the locked step writes
            if wanted != have:
                self.authorizer.write(writes=list(wanted - have), deletes=list(have - wanted))
            return
        writes, deletes = self.projection.pending()
        if writes or deletes:
            self.authorizer.write(writes, deletes)
        conn.execute("INSERT INTO ll_authz_tuples_store (only_row, store_id) VALUES (true, %s)"
                     " ON CONFLICT (only_row) DO UPDATE SET store_id = EXCLUDED.store_id", (self.authorizer.store_id,))

    def _run(self, lock: str, until: int | None = None) -> int | None:
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.execute(lock, (self.name,))
            row = cur.fetchone()
            if row is None:
                return None
            position = row[0]
            if not self._claim_store(cur):
                position = 0
            elif until is not None and position >= until:
                return position
            return self._apply_and_write(cur, position)

    def _claim_store(self, cur: Cursor) -> bool:
        """Whether the mirror (and the position) describe the configured store; if not, they are reset for it."""
        cur.execute("SELECT store_id FROM ll_authz_tuples_store")
        row = cur.fetchone()
        if row is not None and row[0] == self.authorizer.store_id:
            return True
        cur.execute("DELETE FROM ll_authz_tuples")
        cur.execute("INSERT INTO ll_authz_tuples_store (only_row, store_id) VALUES (true, %s)"
                    " ON CONFLICT (only_row) DO UPDATE SET store_id = EXCLUDED.store_id", (self.authorizer.store_id,))
        return False

    def _apply_and_write(self, cur: Cursor, position: int) -> int:
        self.projection.begin()
        try:
            reached = self._apply_after(position, cur)
        finally:
            writes, deletes = self.projection.pending()
        if writes or deletes:
            self.authorizer.write(writes, deletes)
        cur.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now() WHERE name = %s",
                    (reached, self.name))
        return reached
