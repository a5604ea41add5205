"""Questions to the catalog with validity ranges (lakeledger/projections/catalog_versions.py): the catalog as of log
position p, in the shapes the live read model answers them (lakeledger/projections/catalog_queries.py) and the pure fold
answers them (lakeledger/projections/as_of.py). A row holds at p when from_seq <= p < to_seq.

Each is one indexed query whatever the log's length. A page of names leaves the plan to Postgres, with the
position in the statement (no generic plan): in name order when most of the namespace's names held at p, from
the rows that began by p (or ended after it) when few did."""

from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from lakeledger.projections.catalog_queries import AsyncCatalogQueries, NamespaceRow

_AT = " from_seq <= %(p)s AND to_seq > %(p)s"

WAREHOUSE_EXISTED = "SELECT EXISTS (SELECT 1 FROM ll_warehouse_origins WHERE id = %(w)s AND from_seq <= %(p)s)"

NAMESPACE = ("SELECT id, path, properties FROM ll_namespace_versions"
             " WHERE warehouse_id = %(w)s AND path = %(path)s AND" + _AT + " LIMIT 1")

CHILD_NAMESPACES = ("SELECT path FROM ll_namespace_versions WHERE warehouse_id = %(w)s AND parent = %(parent)s"
                    " AND" + _AT + "{after} ORDER BY path LIMIT %(limit)s")

NAMESPACE_IDS = ("SELECT id, path FROM ll_namespace_versions WHERE warehouse_id = %(w)s AND parent = %(parent)s"
                 " AND path[cardinality(path)] = ANY(%(names)s) AND" + _AT)

# the placement of a name at p and the metadata file it pointed at then: the last version from at or before p
TABULAR = ("SELECT pl.id, m.metadata_location, m.location FROM ll_tabular_placements pl CROSS JOIN LATERAL ("
           " SELECT metadata_location, location FROM ll_tabular_metadata_versions"
           " WHERE id = pl.id AND from_seq <= %(p)s ORDER BY from_seq DESC LIMIT 1) m"
           " WHERE pl.warehouse_id = %(w)s AND pl.namespace = %(namespace)s AND pl.name = %(name)s"
           " AND pl.typ = %(typ)s AND pl.from_seq <= %(p)s AND pl.to_seq > %(p)s LIMIT 1")

TABULAR_NAMES = ("SELECT name FROM ll_tabular_placements WHERE namespace_id = %(namespace_id)s AND typ = %(typ)s"
                 " AND" + _AT + "{after} ORDER BY name LIMIT %(limit)s")

TABULAR_IDS = ("SELECT name, id FROM ll_tabular_placements WHERE namespace_id = %(namespace_id)s AND typ = %(typ)s"
               " AND name = ANY(%(names)s) AND" + _AT)


class CatalogVersionsQueries:
    """The catalog of one warehouse as of one log position."""

    def __init__(self, pool: AsyncConnectionPool, warehouse_id: UUID, position: int):
        self.pool = pool
        self.warehouse_id = warehouse_id
        self.position = position

    @classmethod
    def at(cls, live: AsyncCatalogQueries, warehouse_id: UUID, position: int) -> "CatalogVersionsQueries":
        """The warehouse as of ``position``, asked over the live read model's connections."""
        return cls(live.pool, warehouse_id, position)

    async def _all(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            # planned for this position: whether a walk in name order or from the validity ranges is cheaper
            # depends on it
            await cur.execute(sql, {"w": self.warehouse_id, "p": self.position, **params}, prepare=False)
            return await cur.fetchall()

    async def existed(self) -> bool:
        """The warehouse had been created at or before the position."""
        rows = await self._all(WAREHOUSE_EXISTED, {})
        return rows[0]["exists"]

    async def namespace(self, path: list[str]) -> NamespaceRow | None:
        rows = await self._all(NAMESPACE, {"path": list(path)})
        return NamespaceRow(rows[0]["id"], list(rows[0]["path"]), rows[0]["properties"]) if rows else None

    async def child_namespaces(self, parent: list[str] | None, after: list[str] | None,
                               limit: int | None) -> list[list[str]]:
        sql = CHILD_NAMESPACES.format(after="" if after is None else " AND path > %(after)s::text[]")
        rows = await self._all(sql, {"parent": list(parent or []), "after": after, "limit": limit})
        return [list(r["path"]) for r in rows]

    async def namespace_ids(self, paths: list[list[str]]) -> dict[tuple[str, ...], UUID]:
        by_parent: dict[tuple[str, ...], list[list[str]]] = {}
        for path in paths:
            by_parent.setdefault(tuple(path[:-1]), []).append(list(path))
        found = {}
        for parent, siblings in by_parent.items():
            for r in await self._all(NAMESPACE_IDS, {"parent": list(parent), "names": [p[-1] for p in siblings]}):
                found[tuple(r["path"])] = r["id"]
        return found

    async def tabular(self, typ: str, namespace: list[str], name: str) -> tuple | None:
        """(id, metadata location, location) of the table or view of that name then."""
        rows = await self._all(TABULAR, {"typ": typ, "namespace": list(namespace), "name": name})
        return (rows[0]["id"], rows[0]["metadata_location"], rows[0]["location"]) if rows else None

    async def tabular_names(self, namespace_id: UUID, typ: str, after: str | None, limit: int | None) -> list[str]:
        sql = TABULAR_NAMES.format(after="" if after is None else " AND name > %(after)s")
        rows = await self._all(sql, {"namespace_id": namespace_id, "typ": typ, "after": after, "limit": limit})
        return [r["name"] for r in rows]

    async def tabular_ids(self, namespace_id: UUID, typ: str, names: list[str]) -> dict[str, UUID]:
        rows = await self._all(TABULAR_IDS, {"namespace_id": namespace_id, "typ": typ, "names": list(names)})
        return {r["name"]: r["id"] for r in rows}
