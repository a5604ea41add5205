"""Questions the access-history read model (lakeledger/projections/access_history.py) answers for the API, about the
tuples that hold now; who held what at a past instant is lakeledger/services/access_history.py."""

from dataclasses import dataclass

from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

CURRENT_TUPLES = ('SELECT relation, "user" FROM ll_access_ranges WHERE object = %(object)s AND to_seq IS NULL'
                  " ORDER BY from_seq, id")


@dataclass(frozen=True)
class HeldTuple:
    """A relation a user (or a role's members, ``role:<id>#assignee``) holds on an object now."""
    relation: str
    user: str


class AccessHistoryQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def current_tuples(self, object_: str) -> list[HeldTuple]:
        """Every tuple on ``object_`` that holds now, in the order they began."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(HeldTuple))
            await cur.execute(CURRENT_TUPLES, {"object": object_})
            return await cur.fetchall()
