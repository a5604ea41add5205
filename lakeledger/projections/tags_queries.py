"""Questions the tags read model answers: for the API (asynchronously), and for the write side's checks inside an
append (``Cursor`` functions, run under the append lock by lakeledger/services/tags.py).

A target is *live* while it can be used (a warehouse, a namespace not dropped, a table, view or generic table not
dropped) and *kept* while it can still come back (also in the recycle bin): tags are answered, attached and
removed on live targets; a definition is in use while an attachment's target is kept."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

from lakeledger.domain.names import CASE_INSENSITIVE, name_key
from lakeledger.domain.tag import COLUMN, NAMESPACE, WAREHOUSE
from lakeledger.projections.tags import NO_FIELD
from lakeledger.projections.users_roles_queries import like_pattern

DEFINITION_COLUMNS = ("id, project_id, name, description, scope, value_kind, allowed_values, created_at,"
                      " updated_at")

_TABULAR_OF = {"table": "table", "view": "view", "generic-table": "generic-table", COLUMN: "table"}

# whether target %(id)s of kind %(kind)s in warehouse %(warehouse)s is live
LIVE_TARGET = {
    WAREHOUSE: "SELECT EXISTS (SELECT 1 FROM ll_warehouses WHERE id = %(id)s AND id = %(warehouse)s)",
    NAMESPACE: "SELECT EXISTS (SELECT 1 FROM ll_namespaces WHERE id = %(id)s AND warehouse_id = %(warehouse)s)",
    **{kind: "SELECT EXISTS (SELECT 1 FROM ll_tabulars WHERE id = %(id)s AND warehouse_id = %(warehouse)s"
             f" AND typ = '{typ}' AND dropped_at IS NULL)" for kind, typ in _TABULAR_OF.items()},
}

# an attachment (alias t) whose target is kept
_KEPT = ("(CASE t.target_type WHEN 'warehouse' THEN EXISTS (SELECT 1 FROM ll_warehouses w WHERE w.id = t.target_id)"
         " WHEN 'namespace' THEN EXISTS (SELECT 1 FROM ll_namespaces n WHERE n.id = t.target_id)"
         " OR EXISTS (SELECT 1 FROM ll_dropped_namespaces d WHERE d.id = t.target_id)"
         " ELSE EXISTS (SELECT 1 FROM ll_tabulars b WHERE b.id = t.target_id AND b.deleted_at IS NULL) END)")


# the tag definitions of a project, which its deletion deletes with it
PROJECT_TAG_DEFINITIONS = "SELECT id FROM ll_tag_definitions WHERE project_id = %(id)s ORDER BY id"

@dataclass(frozen=True)
class DefinitionRow:
    """A tag definition, in DEFINITION_COLUMNS' order."""
    id: UUID
    project_id: UUID
    name: str
    description: str | None
    scope: list[str]
    value_kind: str
    allowed_values: list[str]
    created_at: datetime
    updated_at: datetime | None


@dataclass(frozen=True)
class TagRow:
    """A tag on a target: the definition's id and name and the attachment's value and times. ``source_type`` and
    ``source_id`` name the ancestor (warehouse or namespace) an inherited tag is attached to (None: the target's
    own); ``field_id`` the column of a column tag."""
    definition_id: UUID
    name: str
    value: str | None
    created_at: datetime
    updated_at: datetime | None
    warehouse_id: UUID
    source_type: str | None = None
    source_id: UUID | None = None
    field_id: int | None = None


@dataclass(frozen=True)
class AttachmentRow:
    """Where a definition is attached."""
    warehouse_id: UUID
    target_type: str
    target_id: UUID
    field_id: int
    value: str | None
    created_at: datetime
    updated_at: datetime | None


Row = TypeVar("Row")

_TAG = ("SELECT t.definition_id, d.name, t.value, t.created_at, t.updated_at, t.warehouse_id{extra}"
        " FROM ll_tags t JOIN ll_tag_definitions d ON d.id = t.definition_id")


class TagQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def _all(self, row: type[Row], sql: str, params: dict[str, Any]) -> list[Row]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(row))
            await cur.execute(sql, params)
            return await cur.fetchall()

    async def definition(self, project_id: UUID, definition_id: UUID) -> DefinitionRow | None:
        rows = await self._all(DefinitionRow, f"SELECT {DEFINITION_COLUMNS} FROM ll_tag_definitions"
                               " WHERE id = %(id)s AND project_id = %(project)s",
                               {"id": definition_id, "project": project_id})
        return rows[0] if rows else None

    async def exists(self, definition_id: UUID) -> bool:
        """In any project."""
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM ll_tag_definitions WHERE id = %s)",
                                     (definition_id,))
            row = await cur.fetchone()
        return row is not None and bool(row[0])

    async def definitions(self, project_id: UUID, name: str | None, after: list | None,
                          limit: int | None) -> list[DefinitionRow]:
        """``name``: a case-insensitive part of the name; ordered by creation."""
        if name is not None and "\x00" in name:
            return []
        return await self._all(
            DefinitionRow,
            f"SELECT {DEFINITION_COLUMNS} FROM ll_tag_definitions WHERE project_id = %(project)s"
            " AND (%(name)s::text IS NULL OR name ILIKE '%%' || %(name)s || '%%')"
            " AND (%(after_time)s::timestamptz IS NULL OR (created_at, id) > (%(after_time)s, %(after_id)s::uuid))"
            " ORDER BY created_at, id LIMIT %(limit)s",
            {"project": project_id, "name": like_pattern(name) if name else None,
             "after_time": datetime.fromisoformat(after[0]) if after else None,
             "after_id": after[1] if after else None, "limit": limit})

    async def live(self, kind: str, warehouse_id: UUID, target_id: UUID) -> bool:
        async with self.pool.connection() as conn:
            cur = await conn.execute(LIVE_TARGET[kind], {"id": target_id, "warehouse": warehouse_id})
            row = await cur.fetchone()
        return row is not None and bool(row[0])

    async def tags(self, kind: str, target_id: UUID) -> list[TagRow]:
        """The tags attached to the target itself, by name."""
        return await self._all(
            TagRow, _TAG.format(extra="") + " WHERE t.target_id = %(id)s AND t.target_type = %(kind)s"
            f" AND t.field_id = {NO_FIELD} ORDER BY lower(d.name), d.id", {"id": target_id, "kind": kind})

    async def inherited(self, warehouse_id: UUID, namespace_id: UUID | None) -> list[TagRow]:
        """The tags of the warehouse and of the namespace ``namespace_id`` and its ancestors: nearest first (the
        namespace itself, its parent, ..., the warehouse)."""
        return await self._all(
            TagRow,
            "WITH RECURSIVE up (id, parent_id, depth) AS ("
            " SELECT id, parent_id, 0 FROM ll_namespaces WHERE id = %(ns)s"
            " UNION ALL SELECT n.id, n.parent_id, up.depth + 1 FROM ll_namespaces n JOIN up ON n.id = up.parent_id)"
            + _TAG.format(extra=", t.target_type AS source_type, t.target_id AS source_id")
            + " LEFT JOIN up ON t.target_type = 'namespace' AND up.id = t.target_id"
            " WHERE (t.target_type = 'warehouse' AND t.target_id = %(warehouse)s) OR up.id IS NOT NULL"
            " ORDER BY coalesce(up.depth, 1000000), lower(d.name), d.id",
            {"warehouse": warehouse_id, "ns": namespace_id})

    async def parent_namespace(self, kind: str, target_id: UUID) -> UUID | None:
        """Where a target's inherited tags start: a namespace itself, a table's, view's or generic table's
        namespace."""
        if kind == NAMESPACE:
            return target_id
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT namespace_id FROM ll_tabulars WHERE id = %s", (target_id,))
            row = await cur.fetchone()
        return row[0] if row else None

    async def column_tags(self, table_id: UUID, field_id: int | None = None) -> list[TagRow]:
        """The tags of the table's columns (of one column when ``field_id`` is given), by field id then name."""
        return await self._all(
            TagRow, _TAG.format(extra=", NULL AS source_type, NULL::uuid AS source_id, t.field_id")
            + " WHERE t.target_id = %(id)s AND t.target_type = 'column'"
            " AND (%(field)s::integer IS NULL OR t.field_id = %(field)s) ORDER BY t.field_id, lower(d.name), d.id",
            {"id": table_id, "field": field_id})

    async def attachments(self, definition_id: UUID, value: str | None, target_type: str | None,
                          created_after: datetime | None, created_before: datetime | None, warehouse_id: UUID | None,
                          after: list | None, limit: int | None) -> list[AttachmentRow]:
        """Where the definition is attached (targets kept, recycle bin included), in the order attached."""
        if value is not None and "\x00" in value:
            return []
        return await self._all(
            AttachmentRow,
            "SELECT t.warehouse_id, t.target_type, t.target_id, t.field_id, t.value, t.created_at, t.updated_at"
            f" FROM ll_tags t WHERE t.definition_id = %(id)s AND {_KEPT}"
            " AND (%(value)s::text IS NULL OR t.value = %(value)s)"
            " AND (%(type)s::text IS NULL OR t.target_type = %(type)s)"
            " AND (%(since)s::timestamptz IS NULL OR t.created_at > %(since)s)"
            " AND (%(until)s::timestamptz IS NULL OR t.created_at < %(until)s)"
            " AND (%(warehouse)s::uuid IS NULL OR t.warehouse_id = %(warehouse)s)"
            " AND (%(after_time)s::timestamptz IS NULL OR (t.created_at, t.target_id::text || '/' || t.target_type"
            " || '/' || t.field_id) > (%(after_time)s, %(after_id)s))"
            " ORDER BY t.created_at, t.target_id::text || '/' || t.target_type || '/' || t.field_id LIMIT %(limit)s",
            {"id": definition_id, "value": value, "type": target_type, "since": created_after,
             "until": created_before, "warehouse": warehouse_id,
             "after_time": datetime.fromisoformat(after[0]) if after else None,
             "after_id": after[1] if after else None, "limit": limit})

    async def tabulars_tagged(self, warehouse_id: UUID, names: list[str]) -> set[UUID]:
        """The tables, views and generic tables of the warehouse carrying every one of the tags ``names``
        (case-insensitive), directly."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT t.target_id FROM ll_tags t JOIN ll_tag_definitions d ON d.id = t.definition_id"
                " WHERE t.warehouse_id = %(warehouse)s AND t.target_type IN ('table', 'view', 'generic-table')"
                " AND d.name_key = ANY(%(names)s) GROUP BY t.target_id"
                " HAVING count(DISTINCT d.name_key) = cardinality(%(names)s)",
                {"warehouse": warehouse_id, "names": sorted({name_key(n, CASE_INSENSITIVE) for n in names})})
            return {row[0] for row in await cur.fetchall()}


# --- inside an append ----------------------------------------------------------------------------------------

def live_target(cur: Cursor, kind: str, warehouse_id: UUID, target_id: UUID) -> bool:
    cur.execute(LIVE_TARGET[kind], {"id": target_id, "warehouse": warehouse_id})
    row = cur.fetchone()
    return row is not None and bool(row[0])


def kept_attachments(cur: Cursor, definition_id: UUID) -> int:
    cur.execute(f"SELECT count(*) FROM ll_tags t WHERE t.definition_id = %(id)s AND {_KEPT}", {"id": definition_id})
    row = cur.fetchone()
    return int(row[0]) if row else 0


def warehouse_project(cur: Cursor, warehouse_id: UUID) -> UUID | None:
    cur.execute("SELECT project_id FROM ll_warehouses WHERE id = %s", (warehouse_id,))
    row = cur.fetchone()
    return row[0] if row else None
