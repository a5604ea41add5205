"""Questions the access-history read model (lakeledger/projections/access_history.py) answers for the API, about the
tuples that hold now; who held what at a past instant is lakeledger/services/access_history.py."""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

CURRENT_TUPLES = ('SELECT relation, "user" FROM ll_access_ranges WHERE object = %(object)s AND to_seq IS NULL'
                  " ORDER BY from_seq, id")


@dataclass(frozen=True)
class HeldTuple:
    """A relation a user (or a role's members, ``role:<id>#assignee``) holds on an object now."""
    relation: str
    user: str


# A grant's grantee: a user, or every member of a role (hierarchy tuples name objects, membership tuples are on roles)
_GRANTEE = """("user" LIKE 'user:%%' OR ("user" LIKE 'role:%%' AND "user" LIKE '%%#assignee'))"""

HELD_GRANTS = ('SELECT id, object, relation, "user", from_at, NULL::uuid AS warehouse_id FROM ll_access_ranges'
               f" WHERE object = %(object)s AND to_seq IS NULL AND relation = ANY(%(relations)s) AND {_GRANTEE}"
               ' AND (%(grantee)s::text IS NULL OR "user" = %(grantee)s) AND id > %(after)s ORDER BY id'
               " LIMIT %(limit)s")

# the objects of a project, each with its warehouse (a dropped table's grants wait, unlisted, for an undrop)
PROJECT_GRANTS = (
    "WITH objects(object, warehouse_id) AS ("
    " SELECT 'project:' || %(project)s::text, NULL::uuid"
    " UNION ALL SELECT 'warehouse:' || w.id, w.id FROM ll_warehouses w WHERE w.project_id = %(project)s"
    " UNION ALL SELECT 'namespace:' || n.id, n.warehouse_id FROM ll_namespaces n"
    "  JOIN ll_warehouses w ON w.id = n.warehouse_id WHERE w.project_id = %(project)s"
    " UNION ALL SELECT t.typ || ':' || t.id, t.warehouse_id FROM ll_tabulars t"
    "  JOIN ll_warehouses w ON w.id = t.warehouse_id WHERE w.project_id = %(project)s AND t.deleted_at IS NULL"
    " UNION ALL SELECT 'tag-definition:' || d.id, NULL::uuid FROM ll_tag_definitions d"
    "  WHERE d.project_id = %(project)s)"
    ' SELECT r.id, r.object, r.relation, r."user", r.from_at, o.warehouse_id FROM ll_access_ranges r'
    ' JOIN objects o ON o.object = r.object WHERE r."user" = %(grantee)s AND r.to_seq IS NULL'
    " AND r.id > %(after)s ORDER BY r.id LIMIT %(limit)s")


@dataclass(frozen=True)
class HeldGrant:
    """A relation a grantee holds on an object now, from the range that began it (``id``: its page key);
    ``warehouse_id`` where the question asked for it."""
    id: int
    object: str
    relation: str
    user: str
    from_at: datetime
    warehouse_id: UUID | None


class AccessHistoryQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def current_tuples(self, object_: str) -> list[HeldTuple]:
        """Every tuple on ``object_`` that holds now, in the order they began."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(HeldTuple))
            await cur.execute(CURRENT_TUPLES, {"object": object_})
            return await cur.fetchall()

    async def _all(self, sql: str, params: dict) -> list[HeldGrant]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(HeldGrant))
            await cur.execute(sql, params)
            return await cur.fetchall()

    async def grants_on(self, object_: str, relations: list[str], grantee: str | None, after: int | None,
                        limit: int | None) -> list[HeldGrant]:
        return await self._all(HELD_GRANTS, {"object": object_, "relations": relations, "grantee": grantee,
                                             "after": after or 0, "limit": limit})

    async def grants_in_project(self, project_id: UUID, grantee: str, after: int | None,
                         limit: int | None) -> list[HeldGrant]:
        return await self._all(PROJECT_GRANTS, {"project": project_id, "grantee": grantee, "after": after or 0,
                                                "limit": limit})
