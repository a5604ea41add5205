"""Questions the maintenance-policies read model answers: the settings an object sets itself, and every level an
object inherits from (itself, its namespace and that namespace's parents, its warehouse) with what each sets, in one
indexed query, so a runner reading a table's effective policy pays one round trip (``levels``; the merge is
lakeledger/domain/maintenance_policy.py ``effective``). Asynchronously for the API, on a ``Cursor`` for the workers
and for checks inside an append."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

from lakeledger.domain.maintenance_policy import WAREHOUSE, Level, Source


@dataclass(frozen=True)
class PolicyRow:
    """What one object sets for one policy type, and who set it when."""
    policy_type: str
    parameters: dict[str, Any]
    set_at: datetime
    set_by: str
    request_id: str


@dataclass(frozen=True)
class LevelRow:
    """One level above (or at) an object: ``depth`` 0 is the object itself, then its namespace and each parent,
    the warehouse last. ``policy_type`` and ``parameters`` are None for a level that sets nothing."""
    depth: int
    kind: str
    id: UUID
    name: list[str]
    policy_type: str | None
    parameters: dict[str, Any] | None


_OWN = ("SELECT policy_type, parameters, set_at, set_by, request_id FROM ll_maintenance_policies"
        " WHERE target_id = %(id)s AND target_type = %(kind)s ORDER BY policy_type")

# The object (a live table, a namespace or a warehouse) and everything above it: nearest first. A table's name is
# its namespace's path and its own name; the warehouse's, its name.
_LEVELS = (
    "WITH RECURSIVE start AS ("
    " SELECT 0 AS depth, 'table' AS kind, t.id, t.namespace || t.name AS name, t.namespace_id AS up,"
    " t.warehouse_id FROM ll_tabulars t WHERE %(kind)s = 'table' AND t.id = %(id)s AND t.typ = 'table'"
    " AND t.dropped_at IS NULL"
    "), chain (depth, id, parent_id, path, warehouse_id) AS ("
    " SELECT s.depth + 1, n.id, n.parent_id, n.path, n.warehouse_id FROM start s JOIN ll_namespaces n ON n.id = s.up"
    " UNION ALL SELECT 0, n.id, n.parent_id, n.path, n.warehouse_id FROM ll_namespaces n"
    " WHERE %(kind)s = 'namespace' AND n.id = %(id)s"
    " UNION ALL SELECT c.depth + 1, n.id, n.parent_id, n.path, n.warehouse_id FROM chain c"
    " JOIN ll_namespaces n ON n.id = c.parent_id"
    "), levels AS ("
    " SELECT depth, kind, id, name, warehouse_id FROM start"
    " UNION ALL SELECT depth, 'namespace', id, path, warehouse_id FROM chain"
    " UNION ALL SELECT 1000000, 'warehouse', w.id, ARRAY[w.name], w.id FROM ll_warehouses w"
    " WHERE w.id = %(warehouse)s AND (%(kind)s = 'warehouse' AND w.id = %(id)s"
    " OR EXISTS (SELECT 1 FROM start WHERE start.warehouse_id = w.id)"
    " OR EXISTS (SELECT 1 FROM chain WHERE chain.warehouse_id = w.id))"
    ")"
    " SELECT l.depth, l.kind, l.id, l.name, p.policy_type, p.parameters FROM levels l"
    " LEFT JOIN ll_maintenance_policies p ON p.target_id = l.id AND p.target_type = l.kind"
    " ORDER BY l.depth, p.policy_type")


def _levels_params(kind: str, object_id: UUID, warehouse_id: UUID) -> dict[str, Any]:
    return {"kind": kind, "id": object_id, "warehouse": warehouse_id}


def as_levels(rows: Sequence[LevelRow]) -> list[Level]:
    """The rows as the domain's levels, nearest first; empty when the object is not there (or not in the
    warehouse asked about)."""
    found: dict[tuple[int, UUID], Level] = {}
    for row in rows:
        level = found.setdefault((row.depth, row.id), Level(Source(row.kind, row.id, tuple(row.name)), {}))
        if row.policy_type is not None and isinstance(row.parameters, dict):
            level.policies[row.policy_type] = row.parameters
    levels = list(found.values())
    return levels if levels and levels[-1].source.kind == WAREHOUSE else []


class MaintenancePolicyQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def own(self, kind: str, object_id: UUID) -> list[PolicyRow]:
        """What the object sets itself, by policy type."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(PolicyRow))
            await cur.execute(_OWN, {"id": object_id, "kind": kind})
            return await cur.fetchall()

    async def levels(self, kind: str, object_id: UUID, warehouse_id: UUID) -> list[Level]:
        """The object (live, in the warehouse) and every level it inherits from, nearest first."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(LevelRow))
            await cur.execute(_LEVELS, _levels_params(kind, object_id, warehouse_id))
            return as_levels(await cur.fetchall())


# --- for the workers -------------------------------------------------------------------------------------------

def levels(cur: Cursor, kind: str, object_id: UUID, warehouse_id: UUID) -> list[Level]:
    """``MaintenancePolicyQueries.levels`` on a connection of one's own (a maintenance runner's)."""
    rows = cur.connection.cursor(row_factory=class_row(LevelRow))
    rows.execute(_LEVELS, _levels_params(kind, object_id, warehouse_id))
    return as_levels(rows.fetchall())

