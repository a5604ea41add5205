"""Questions the catalog read model answers. SQL lives here once; ``CatalogQueries`` runs it
synchronously for the write side's checks, ``AsyncCatalogQueries`` asynchronously for the API."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, TypeVar
from uuid import UUID

from psycopg import Connection
from psycopg.rows import args_row, class_row, dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from lakeledger.domain.names import CASE_INSENSITIVE, name_key, path_key
from lakeledger.domain.storage_profile import overlaps
from lakeledger.domain.warehouse import parse_storage_profile
from lakeledger.projections.coalesced import Coalesced
from lakeledger.projections.tags_queries import PROJECT_TAG_DEFINITIONS
from lakeledger.projections.users_roles_queries import PROJECT_ROLES, like_pattern

WAREHOUSE_COLUMNS = ("id, project_id, name, storage_profile, storage_secret, delete_profile, drop_purge_default,"
                     " status, protected, created_at, updated_at, name_matching, allowed_format_versions,"
                     " default_format_version, managed_by, time_travel_retention")


def _matched(warehouse_id: str, exact: str, folded: str) -> str:
    """SQL for the key a name (or path) given in a request has under the warehouse's rule (lakeledger/domain/names.py
    ``name_key``): the caller hands both keys (``keyed``), the warehouse's row picks one. One value for the whole
    statement, so the key columns' indexes answer the lookup as they would an equality with a constant."""
    return (f"(CASE WHEN (SELECT name_matching FROM ll_warehouses WHERE id = {warehouse_id}) = 'case-insensitive'"
            f" THEN {folded} ELSE {exact} END)")


def keyed(prefix: str, name: str | list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``prefix`` (the name or path as given) and ``prefix``_folded, its key in a case-insensitive warehouse."""
    if isinstance(name, str):
        return {prefix: name, f"{prefix}_folded": name_key(name, CASE_INSENSITIVE)}
    return {prefix: list(name), f"{prefix}_folded": path_key(name, CASE_INSENSITIVE)}


_NAMESPACE_KEY = _matched("%(warehouse_id)s", "%(namespace)s::text[]", "%(namespace_folded)s::text[]")
_NAME_KEY = _matched("%(warehouse_id)s", "%(name)s", "%(name_folded)s")

NAMESPACE_HAS_CHILDREN = (
    "SELECT EXISTS (SELECT 1 FROM ll_namespaces WHERE parent_id = %(id)s)"
    " OR EXISTS (SELECT 1 FROM ll_tabulars WHERE namespace_id = %(id)s AND dropped_at IS NULL)")

WAREHOUSE_HAS_NAMESPACES = "SELECT EXISTS (SELECT 1 FROM ll_namespaces WHERE warehouse_id = %(id)s)"

PROJECT_HAS_WAREHOUSES = "SELECT EXISTS (SELECT 1 FROM ll_warehouses WHERE project_id = %(id)s)"
# a role or tag definition came to the project after its deletion read what it holds
PROJECT_GREW = ("SELECT EXISTS (SELECT 1 FROM ll_roles WHERE project_id = %(id)s AND id <> ALL(%(roles)s))"
                " OR EXISTS (SELECT 1 FROM ll_tag_definitions WHERE project_id = %(id)s AND id <> ALL(%(tags)s))")

WAREHOUSE_IS_ACTIVE = "SELECT EXISTS (SELECT 1 FROM ll_warehouses WHERE id = %(id)s AND status = 'active')"

# A dropped table or view not done with: soft-deleted (it may come back), or awaiting the purge it asked for.
_DROP_UNFINISHED = "(deleted_at IS NULL OR (purge_requested AND purged_at IS NULL))"

# Another table or view at the same place, in a folder above it, or inside it. Index-driven at any size
# (ll_tabulars_by_location_c, bytewise order): the places above are an equality lookup over the new location's
# own '/'-prefixes, the places inside a range [location + '/', location + '0') — '0' is the byte after '/'.
# ``overlap_params`` builds the parameters. A dropped table not done with still owns its location.
_OVERLAP_CANDIDATE = (
    "SELECT id, location FROM ll_tabulars WHERE warehouse_id = %(warehouse_id)s AND {match}"
    f" AND id <> %(exclude)s AND (dropped_at IS NULL OR {_DROP_UNFINISHED}) LIMIT 1")
# One lookup per prefix and one range, rather than an OR or `= ANY(...)`: each is then an index condition on
# both columns at any size (on a small catalog the planner would otherwise read the warehouse's rows).
OVERLAPPING_TABULAR = (
    "(SELECT o.id, o.location FROM unnest(%(itself_or_above)s::text[]) AS p(place) CROSS JOIN LATERAL ("
    + _OVERLAP_CANDIDATE.format(match="location COLLATE \"C\" = p.place") + ") o LIMIT 1) UNION ALL ("
    + _OVERLAP_CANDIDATE.format(match="location COLLATE \"C\" >= %(inside_from)s"
                                      " AND location COLLATE \"C\" < %(inside_to)s") + ") LIMIT 1")


def overlap_params(warehouse_id: UUID, location: str, exclude: UUID) -> dict[str, Any]:
    """OVERLAPPING_TABULAR's parameters: the same rule as ``location = l OR starts_with(new, l || '/') OR
    starts_with(l, new || '/')``, in a form an index answers."""
    above = [location[:i] for i, char in enumerate(location) if char == "/"]
    return {"warehouse_id": warehouse_id, "exclude": exclude, "itself_or_above": [location, *above],
            "inside_from": location + "/", "inside_to": location + "0"}


# Live tables and views of a warehouse whose lower-cased name starts with a prefix: [from, to) in "C" order, keyset
# paged by (lower(name), id) (lakeledger/migrations/0018_tabular_name_search.sql).
_NAME_PREFIX = (
    "SELECT id, typ, namespace, name, lower(name) AS key FROM ll_tabulars WHERE warehouse_id = %(warehouse_id)s"
    ' AND dropped_at IS NULL AND lower(name) COLLATE "C" >= %(from)s AND lower(name) COLLATE "C" < %(to)s'
)
_NAME_ORDER = " ORDER BY lower(name) COLLATE \"C\", id LIMIT %(limit)s"
TABULARS_BY_NAME_PREFIX = _NAME_PREFIX + _NAME_ORDER
_NAME_AFTER = " AND (lower(name) COLLATE \"C\", id) > (%(after_key)s COLLATE \"C\", %(after_id)s::uuid)"
TABULARS_BY_NAME_PREFIX_AFTER = _NAME_PREFIX + _NAME_AFTER + _NAME_ORDER


# Lakekeeper's fuzzy search of a warehouse's tabulars (POST .../search-tabular), ranked: 0 the tabular or the namespace
# whose id the term is, 1 the name or the dotted namespace.name equal (any case), 2 a name starting with the term,
# 3 the term inside namespace.name; live ones only, the best 10.
_DOTTED = "(array_to_string(namespace, '.') || '.' || name)"
SEARCH_TABULARS = (
    "SELECT id, typ, namespace, name, rank FROM (SELECT id, typ, namespace, name, CASE"
    " WHEN id::text = %(term)s OR namespace_id::text = %(term)s THEN 0"
    f" WHEN lower(name) = lower(%(term)s) OR lower({_DOTTED}) = lower(%(term)s) THEN 1"
    " WHEN name ILIKE %(pattern)s || '%%' THEN 2"
    f" WHEN {_DOTTED} ILIKE '%%' || %(pattern)s || '%%' THEN 3 END AS rank"
    " FROM ll_tabulars WHERE warehouse_id = %(warehouse_id)s AND dropped_at IS NULL"
    " AND (%(among)s::uuid[] IS NULL OR id = ANY(%(among)s))) found"
    " WHERE rank IS NOT NULL ORDER BY rank, lower(name), id LIMIT %(limit)s")
SEARCH_LIMIT = 10


def name_prefix_range(prefix: str) -> tuple[str, str]:
    """[from, to) of the names that start with ``prefix`` (lower-cased), in code point ("C") order."""
    low = prefix.lower()
    return low, low[:-1] + chr(ord(low[-1]) + 1)


# Namespaces below one (itself included) and the live tables and views in them, for a recursive drop.
NAMESPACE_TREE = (
    "WITH RECURSIVE tree AS (SELECT id, path FROM ll_namespaces WHERE id = %(id)s"
    " UNION ALL SELECT n.id, n.path FROM ll_namespaces n JOIN tree ON n.parent_id = tree.id)"
    " SELECT 'namespace' AS kind, id, path FROM tree"
    " UNION ALL SELECT t.typ, t.id, NULL FROM ll_tabulars t JOIN tree ON t.namespace_id = tree.id"
    " WHERE t.dropped_at IS NULL")

# A recursive drop must take exactly the tree it saw: nothing created in it since.
TREE_GREW = (
    "SELECT EXISTS (SELECT 1 FROM ll_namespaces WHERE parent_id = ANY(%(namespaces)s) AND id <> ALL(%(namespaces)s))"
    " OR EXISTS (SELECT 1 FROM ll_tabulars WHERE namespace_id = ANY(%(namespaces)s) AND dropped_at IS NULL"
    "            AND id <> ALL(%(tabulars)s))")

# What a namespace move carries (lakeledger/services/namespace_moves.py): the namespace, every namespace below it, live
# or soft-dropped, and the tables and views in them that are not deleted for good (an undrop brings a soft-dropped one
# back under the new path). The soft-dropped tables and views are found through the warehouse's recycle bin index.
_SPACES_BELOW = (
    "WITH RECURSIVE tree AS (SELECT id FROM ll_namespaces WHERE id = %(id)s"
    " UNION ALL SELECT below.id FROM tree CROSS JOIN LATERAL ("
    "  SELECT id FROM ll_namespaces WHERE parent_id = tree.id"
    "  UNION ALL SELECT id FROM ll_dropped_namespaces WHERE parent_id = tree.id) below)")
MOVED_TREE = (
    f"{_SPACES_BELOW} SELECT 'namespace' AS kind, id FROM tree"
    " UNION ALL SELECT t.typ, t.id FROM ll_tabulars t JOIN tree ON t.namespace_id = tree.id WHERE t.dropped_at IS NULL"
    " UNION ALL SELECT t.typ, t.id FROM ll_tabulars t WHERE t.warehouse_id = %(warehouse_id)s"
    " AND t.dropped_at IS NOT NULL AND t.deleted_at IS NULL AND t.namespace_id IN (SELECT id FROM tree)")

# A move must carry exactly the tree it read: nothing created, undropped or registered into it since.
MOVED_TREE_GREW = (
    "SELECT EXISTS (SELECT 1 FROM ll_namespaces WHERE parent_id = ANY(%(namespaces)s) AND id <> ALL(%(namespaces)s))"
    " OR EXISTS (SELECT 1 FROM ll_dropped_namespaces WHERE parent_id = ANY(%(namespaces)s)"
    "            AND id <> ALL(%(namespaces)s))"
    " OR EXISTS (SELECT 1 FROM ll_tabulars WHERE namespace_id = ANY(%(namespaces)s) AND dropped_at IS NULL"
    "            AND id <> ALL(%(tabulars)s))"
    " OR EXISTS (SELECT 1 FROM ll_tabulars WHERE warehouse_id = %(warehouse_id)s AND dropped_at IS NOT NULL"
    "            AND deleted_at IS NULL AND namespace_id = ANY(%(namespaces)s) AND id <> ALL(%(tabulars)s))")

# Where a namespace is now (no row: it is not live), for the appends that record its path
NAMESPACE_PATH = "SELECT path FROM ll_namespaces WHERE id = %(id)s"

# Soft-deleted tables and views not yet expired, and purges not yet done: a warehouse with these is not finished.
WAREHOUSE_HAS_PENDING_DELETIONS = (
    "SELECT EXISTS (SELECT 1 FROM ll_tabulars WHERE warehouse_id = %(id)s AND dropped_at IS NOT NULL"
    f" AND {_DROP_UNFINISHED})")

DELETED_TABULARS = (
    "SELECT t.id, t.name, t.namespace, t.namespace_id, t.typ, t.warehouse_id, t.created_at, t.dropped_at,"
    " t.expires_at, t.dropped_with FROM ll_tabulars t"
    " WHERE t.warehouse_id = %(warehouse_id)s AND t.dropped_at IS NOT NULL AND t.deleted_at IS NULL"
    " AND (%(namespace_id)s::uuid IS NULL OR t.namespace_id = %(namespace_id)s)"
    " AND (%(after_time)s::timestamptz IS NULL OR (t.dropped_at, t.id) > (%(after_time)s, %(after_id)s::uuid))"
    " ORDER BY t.dropped_at, t.id LIMIT %(limit)s")

TABULAR_PROTECTION = ("SELECT protected, updated_at FROM ll_tabulars WHERE id = %(id)s AND typ = %(typ)s"
                      " AND warehouse_id = %(warehouse_id)s AND dropped_at IS NULL")

NAMESPACE_PROTECTION = ("SELECT protected, updated_at FROM ll_namespaces WHERE id = %(id)s"
                        " AND warehouse_id = %(warehouse_id)s")

# Managed access of a warehouse, or of a live namespace with whether it or anything above it (its warehouse included)
# has it on (Lakekeeper's ``managed-access-inherited``, which counts the namespace's own switch too)
WAREHOUSE_MANAGED_ACCESS = ("SELECT managed_access, managed_access AS inherited FROM ll_warehouses"
                            " WHERE id = %(id)s")
NAMESPACE_MANAGED_ACCESS = (
    "WITH RECURSIVE up AS (SELECT id, parent_id, warehouse_id, managed_access FROM ll_namespaces WHERE id = %(id)s"
    " UNION ALL SELECT n.id, n.parent_id, n.warehouse_id, n.managed_access FROM ll_namespaces n"
    " JOIN up ON n.id = up.parent_id)"
    " SELECT (SELECT managed_access FROM ll_namespaces WHERE id = %(id)s) AS managed_access,"
    " bool_or(up.managed_access) OR bool_or(w.managed_access) AS inherited"
    " FROM up JOIN ll_warehouses w ON w.id = up.warehouse_id HAVING count(*) > 0")

# Whether an object named by a grant exists (a table or view soft-deleted still does, until deleted for good).
OBJECT_EXISTS = {
    "warehouse": "SELECT EXISTS (SELECT 1 FROM ll_warehouses WHERE id = %(id)s)",
    "project": "SELECT EXISTS (SELECT 1 FROM ll_projects WHERE id = %(id)s)",
    "namespace": "SELECT EXISTS (SELECT 1 FROM ll_namespaces WHERE id = %(id)s)",
    "table": "SELECT EXISTS (SELECT 1 FROM ll_tabulars WHERE id = %(id)s AND typ = 'table' AND deleted_at IS NULL)",
    "view": "SELECT EXISTS (SELECT 1 FROM ll_tabulars WHERE id = %(id)s AND typ = 'view' AND deleted_at IS NULL)",
    "generic-table": "SELECT EXISTS (SELECT 1 FROM ll_tabulars WHERE id = %(id)s AND typ = 'generic-table'"
                     " AND deleted_at IS NULL)",
}
CATALOG_KINDS = frozenset(OBJECT_EXISTS)
# a namespace's or a tabular's warehouse, for a path that names both
OBJECT_WAREHOUSE = {"namespace": "SELECT warehouse_id FROM ll_namespaces WHERE id = %(id)s",
                    **{kind: "SELECT warehouse_id FROM ll_tabulars WHERE id = %(id)s"
                       for kind in ("table", "view", "generic-table")}}

TABULAR_ID = ("SELECT id FROM ll_tabulars WHERE warehouse_id = %(warehouse_id)s"
              f" AND namespace_key = {_NAMESPACE_KEY} AND name_key = {_NAME_KEY} AND dropped_at IS NULL")

WAREHOUSES = f"SELECT {WAREHOUSE_COLUMNS} FROM ll_warehouses"
LATEST_METADATA_LOCATION = "SELECT metadata_location FROM ll_tabulars WHERE id = %(id)s AND typ = 'table'"

WAREHOUSE_BY_NAME = f"{WAREHOUSES} WHERE project_id = %(project_id)s AND name = %(name)s"

WAREHOUSE_BY_ID = f"{WAREHOUSES} WHERE id = %(id)s"

# A commit's lookups in one round trip: its warehouse, the live table of that name and the table's last version
# in the log (primary-key index), with which a cached aggregate is known current without reading the log again.
WAREHOUSE_AND_TABULAR = (
    f"SELECT {WAREHOUSE_COLUMNS}, t.tabular_id,"
    " (SELECT max(originator_version) FROM lakeledger_events WHERE originator_id = t.tabular_id) AS tabular_version"
    f" FROM ll_warehouses LEFT JOIN LATERAL ({TABULAR_ID}) AS t (tabular_id) ON true"
    " WHERE ll_warehouses.id = %(warehouse_id)s")

WAREHOUSES_OF_PROJECT = f"{WAREHOUSES} WHERE project_id = %(project_id)s ORDER BY name, id"

PROJECT = "SELECT id, name FROM ll_projects WHERE id = %(id)s"

PROJECTS = "SELECT id, name FROM ll_projects ORDER BY name, id"

SERVER = "SELECT server_id, is_operator, bootstrapped_at FROM ll_server LIMIT 1"
READ_ONLY = "SELECT EXISTS (SELECT 1 FROM ll_maintenance_mode WHERE read_only)"

NAMESPACE = ("SELECT id, path, properties FROM ll_namespaces WHERE warehouse_id = %(warehouse_id)s"
             f" AND path_key = {_matched('%(warehouse_id)s', '%(path)s::text[]', '%(path_folded)s::text[]')}")

CHILD_NAMESPACES = ("SELECT path FROM ll_namespaces WHERE warehouse_id = %(warehouse_id)s"
                    " AND cardinality(path) = %(depth)s + 1 AND path[1:%(depth)s] = %(parent)s"
                    " AND (%(after)s::text[] IS NULL OR path > %(after)s)"
                    " ORDER BY path LIMIT %(limit)s")

TOP_NAMESPACES = ("SELECT path FROM ll_namespaces WHERE warehouse_id = %(warehouse_id)s AND parent_id IS NULL"
                  " AND (%(after)s::text[] IS NULL OR path > %(after)s)"
                  " ORDER BY path LIMIT %(limit)s")

# The loadTable hot path: one indexed lookup that also checks the warehouse is active. The name as spelt at its
# creation, which clients send nearly always, is found by the names themselves, as before keys existed; any other
# spelling misses it and is looked up by key (ACTIVE_TABULAR_BY_KEY), in warehouses whose names are case-insensitive.
ACTIVE_TABULAR = (
    "SELECT t.id, t.metadata_location, t.location, w.storage_profile::text, w.storage_secret::text"
    " FROM ll_tabulars t JOIN ll_warehouses w ON w.id = t.warehouse_id"
    " WHERE t.warehouse_id = %(warehouse_id)s AND t.namespace = %(namespace)s AND t.name = %(name)s"
    " AND t.typ = %(typ)s AND t.dropped_at IS NULL AND w.status = 'active'"
)
ACTIVE_TABULAR_BY_KEY = (
    "SELECT t.id, t.metadata_location, t.location, w.storage_profile::text, w.storage_secret::text"
    " FROM ll_tabulars t JOIN ll_warehouses w ON w.id = t.warehouse_id"
    " WHERE t.warehouse_id = %(warehouse_id)s AND t.namespace_key = %(namespace_folded)s::text[]"
    " AND t.name_key = %(name_folded)s AND t.typ = %(typ)s AND t.dropped_at IS NULL AND w.status = 'active'"
    " AND w.name_matching = 'case-insensitive'"
)

# The ids of listed rows, for the authorization of a list (lakeledger/api/authorization.py): siblings under one parent.
SIBLING_NAMESPACE_IDS = ("SELECT id, path FROM ll_namespaces WHERE warehouse_id = %(warehouse_id)s"
                         " AND cardinality(path) = %(depth)s + 1 AND path[1:%(depth)s] = %(parent)s"
                         " AND path[%(depth)s + 1] = ANY(%(names)s)")

TABULAR_IDS_BY_NAME = ("SELECT name, id FROM ll_tabulars WHERE namespace_id = %(namespace_id)s AND typ = %(typ)s"
                       " AND dropped_at IS NULL AND name = ANY(%(names)s)")

TABULARS = ("SELECT name FROM ll_tabulars WHERE namespace_id = %(namespace_id)s AND typ = %(typ)s"
            " AND dropped_at IS NULL AND (%(after)s::text IS NULL OR name > %(after)s)"
            " ORDER BY name LIMIT %(limit)s")


Row = TypeVar("Row")


class ActiveTabular(NamedTuple):
    """A live table or view of an active warehouse, in ACTIVE_TABULAR's order: a tuple still, as the loadTable
    path unpacks it, with names."""
    id: UUID
    metadata_location: str
    location: str
    storage_profile: str  # the warehouse's, as JSON text
    storage_secret: str | None  # the warehouse's secret reference, as JSON text


@dataclass(frozen=True)
class GenericTableRow:
    """What a generic table was created with (ll_generic_tables), whether it is protected now, and its name now."""
    format: str
    doc: str | None
    properties: dict[str, str]
    schema: Any
    statistics: Any
    protected: bool
    name: str | None  # None: not known (a past catalog's row)


GENERIC_TABLE = ("SELECT g.format, g.doc, g.properties, g.schema, g.statistics, t.protected, t.name"
                 " FROM ll_generic_tables g JOIN ll_tabulars t ON t.id = g.id WHERE g.id = %(id)s")


@dataclass(frozen=True)
class WarehouseRow:
    """A warehouse of the read model, in WAREHOUSE_COLUMNS' order; the JSON columns as Postgres decodes them."""
    id: UUID
    project_id: UUID
    name: str
    storage_profile: dict[str, Any]
    storage_secret: dict[str, Any] | None
    delete_profile: dict[str, Any]
    drop_purge_default: str
    status: str
    protected: bool
    created_at: datetime
    updated_at: datetime | None
    name_matching: str
    allowed_format_versions: list[int] = field(default_factory=lambda: [1, 2, 3])
    default_format_version: int | None = None
    managed_by: str = "self-managed"
    time_travel_retention: str | None = None


@dataclass(frozen=True)
class WarehouseAndTabular:
    """A warehouse with the id and last log version of the live tabular a commit named (None, None when none)."""
    warehouse: WarehouseRow
    tabular_id: UUID | None
    tabular_version: int | None


@dataclass(frozen=True)
class NamespaceRow:
    id: UUID
    path: list[str]
    properties: dict[str, str]


@dataclass(frozen=True)
class Project:
    id: UUID
    name: str


@dataclass(frozen=True)
class Server:
    server_id: UUID
    is_operator: bool
    bootstrapped_at: datetime


@dataclass(frozen=True)
class Protection:
    protected: bool
    updated_at: datetime | None


@dataclass(frozen=True)
class ManagedAccess:
    """Whether managed access is on for the object itself, and whether it holds there at all (set on the object or
    on something above it)."""
    managed_access: bool
    inherited: bool


@dataclass(frozen=True)
class RankedTabular:
    """A live table, view or generic table found by a search; ``rank`` as SEARCH_TABULARS gives it."""
    id: UUID
    typ: str
    namespace: list[str]
    name: str
    rank: int


@dataclass(frozen=True)
class NamedTabular:
    """A live table or view found by the start of its name; ``key``: its lower-cased name, the page's order."""
    id: UUID
    typ: str
    namespace: list[str]
    name: str
    key: str


@dataclass(frozen=True)
class DeletedTabular:
    """A soft-deleted table or view in the recycle bin."""
    id: UUID
    name: str
    namespace: list[str]
    namespace_id: UUID
    typ: str
    warehouse_id: UUID
    created_at: datetime
    dropped_at: datetime
    expires_at: datetime
    dropped_with: UUID | None


def _warehouse_and_tabular(*columns: Any) -> WarehouseAndTabular:
    """WAREHOUSE_AND_TABULAR's row: the warehouse's columns, then the tabular's id and version."""
    *warehouse, tabular_id, tabular_version = columns
    return WarehouseAndTabular(WarehouseRow(*warehouse), tabular_id, tabular_version)


@dataclass(frozen=True)
class ProjectHoldings:
    """What a project holds besides its warehouses, which its deletion deletes with it."""

    roles: list[UUID]
    tag_definitions: list[UUID]


class CatalogQueries:
    def __init__(self, pool: ConnectionPool):
        self.pool = pool

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        """A connection of the shared pool in autocommit mode for one statement: one round trip, where the pool's
        transactions would make it three (BEGIN, the query, COMMIT). Each question here is a single statement."""
        with self.pool.connection() as conn:
            conn.autocommit = True
            try:
                yield conn
            finally:
                if not conn.broken:
                    conn.autocommit = False

    def _scalar(self, sql: str, params: dict[str, Any]) -> Any:
        with self._reading() as conn:
            row = conn.execute(sql, params).fetchone()
        return row[0] if row else None

    def warehouse(self, warehouse_id: UUID) -> WarehouseRow | None:
        with self._reading() as conn:
            return conn.cursor(row_factory=class_row(WarehouseRow)).execute(
                WAREHOUSE_BY_ID, {"id": warehouse_id}).fetchone()

    def warehouse_and_tabular(self, warehouse_id: UUID, namespace: tuple[str, ...],
                              name: str) -> WarehouseAndTabular | None:
        """The warehouse's row, with the id and version of the live tabular named."""
        with self._reading() as conn:
            return conn.cursor(row_factory=args_row(_warehouse_and_tabular)).execute(WAREHOUSE_AND_TABULAR, {
                "warehouse_id": warehouse_id, **keyed("namespace", namespace), **keyed("name", name)}).fetchone()

    def namespace_tree(self, namespace_id: UUID) -> list[tuple[str, UUID, list[str] | None]]:
        with self._reading() as conn:
            return [(kind, id_, path) for kind, id_, path in conn.execute(NAMESPACE_TREE, {"id": namespace_id})]

    def moved_tree(self, warehouse_id: UUID, namespace_id: UUID) -> list[tuple[str, UUID]]:
        """(kind, id) of what a move of the namespace carries (MOVED_TREE): "namespace", "table" or "view"."""
        with self._reading() as conn:
            return [(kind, id_) for kind, id_ in conn.execute(MOVED_TREE, {"id": namespace_id,
                                                                           "warehouse_id": warehouse_id})]

    def tabular_id(self, warehouse_id: UUID, namespace: tuple[str, ...], name: str) -> UUID | None:
        return self._scalar(TABULAR_ID, {"warehouse_id": warehouse_id, **keyed("namespace", namespace),
                                         **keyed("name", name)})

    def overlapping_tabular(self, warehouse_id: UUID, location: str, exclude: UUID) -> str | None:
        with self._reading() as conn:
            row = conn.execute(OVERLAPPING_TABULAR, overlap_params(warehouse_id, location, exclude)).fetchone()
        return row[1] if row else None

    def project_holdings(self, project_id: UUID) -> ProjectHoldings:
        with self._reading() as conn:
            roles = [row[0] for row in conn.execute(PROJECT_ROLES, {"id": project_id})]
            definitions = [row[0] for row in conn.execute(PROJECT_TAG_DEFINITIONS, {"id": project_id})]
        return ProjectHoldings(roles, definitions)

    def overlapping_warehouse(self, location: str) -> str | None:
        with self._reading() as conn:
            rows = conn.execute("SELECT name, storage_profile FROM ll_warehouses").fetchall()
        for name, profile in rows:
            if overlaps(parse_storage_profile(profile).base_location(), location):
                return name
        return None


class AsyncCatalogQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool
        self._active_tables: Coalesced[tuple[UUID, tuple[str, ...], str], ActiveTabular | None] = \
            Coalesced(self._active_table)

    async def _one(self, row: type[Row], sql: str, params: dict[str, Any]) -> Row | None:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(row))
            await cur.execute(sql, params)
            return await cur.fetchone()

    async def _all(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(sql, params)
            return await cur.fetchall()

    async def _exists(self, sql: str, params: dict[str, Any]) -> bool:
        async with self.pool.connection() as conn:
            cur = await conn.execute(sql, params)
            row = await cur.fetchone()
        return row is not None and bool(row[0])

    async def exists(self, kind: str, object_id: UUID) -> bool:
        """Whether the warehouse, project, namespace, table or view ``object_id`` exists."""
        return await self._exists(OBJECT_EXISTS[kind], {"id": object_id})

    async def warehouse_of(self, kind: str, object_id: UUID) -> UUID | None:
        """The warehouse of the namespace, table, view or generic table ``object_id`` (None: no such object)."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(OBJECT_WAREHOUSE[kind], {"id": object_id})
            row = await cur.fetchone()
        return None if row is None else row[0]

    async def protection(self, warehouse_id: UUID, kind: str, entity_id: UUID) -> Protection | None:
        """The protection of a namespace or a live table or view (``kind``) of the warehouse."""
        params: dict[str, Any] = {"id": entity_id, "warehouse_id": warehouse_id}
        if kind == "namespace":
            sql = NAMESPACE_PROTECTION
        else:
            sql, params["typ"] = TABULAR_PROTECTION, kind
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(Protection))
            await cur.execute(sql, params)
            return await cur.fetchone()

    async def managed_access(self, kind: str, object_id: UUID) -> ManagedAccess | None:
        """Managed access of a warehouse or a live namespace (``kind``); None when there is no such object."""
        sql = WAREHOUSE_MANAGED_ACCESS if kind == "warehouse" else NAMESPACE_MANAGED_ACCESS
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(ManagedAccess))
            await cur.execute(sql, {"id": object_id})
            return await cur.fetchone()

    async def tabulars_by_name_prefix(self, warehouse_id: UUID, low: str, high: str, after: tuple[str, str] | None,
                                      limit: int | None, among: set[UUID] | None = None) -> list[NamedTabular]:
        """Live tables and views whose lower-cased name is in [``low``, ``high``) (``name_prefix_range``), after
        the (key, id) ``after``; only those whose id is ``among`` when it is given (the ones carrying a tag)."""
        params: dict[str, Any] = {"warehouse_id": warehouse_id, "from": low, "to": high, "limit": limit}
        sql = _NAME_PREFIX
        if after is not None:
            sql += _NAME_AFTER
            params.update(after_key=after[0], after_id=after[1])
        if among is not None:
            sql += " AND id = ANY(%(among)s)"
            params["among"] = list(among)
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(NamedTabular))
            await cur.execute(sql + _NAME_ORDER, params)
            return await cur.fetchall()

    async def search_tabulars(self, warehouse_id: UUID, term: str, among: set[UUID] | None) -> list[RankedTabular]:
        """The best SEARCH_LIMIT live tabulars for ``term`` (SEARCH_TABULARS), only those ``among`` when given."""
        params = {"warehouse_id": warehouse_id, "term": term, "pattern": like_pattern(term), "limit": SEARCH_LIMIT,
                  "among": list(among) if among is not None else None}
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(RankedTabular))
            await cur.execute(SEARCH_TABULARS, params)
            return await cur.fetchall()

    async def deleted_tabulars(self, warehouse_id: UUID, namespace_id: UUID | None, after: tuple[datetime, str] | None,
                               limit: int | None) -> list[DeletedTabular]:
        """The recycle bin, in the order things were dropped, after the (dropped_at, id) ``after``."""
        after_time, after_id = after if after is not None else (None, None)
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(DeletedTabular))
            await cur.execute(DELETED_TABULARS, {"warehouse_id": warehouse_id, "namespace_id": namespace_id,
                                                 "after_time": after_time, "after_id": after_id, "limit": limit})
            return await cur.fetchall()

    async def warehouse_by_name(self, project_id: UUID, name: str) -> WarehouseRow | None:
        return await self._one(WarehouseRow, WAREHOUSE_BY_NAME, {"project_id": project_id, "name": name})

    async def warehouse(self, warehouse_id: UUID) -> WarehouseRow | None:
        return await self._one(WarehouseRow, WAREHOUSE_BY_ID, {"id": warehouse_id})

    async def warehouses(self, project_id: UUID) -> list[WarehouseRow]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(WarehouseRow))
            await cur.execute(WAREHOUSES_OF_PROJECT, {"project_id": project_id})
            return await cur.fetchall()

    async def project(self, project_id: UUID) -> Project | None:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(Project))
            await cur.execute(PROJECT, {"id": project_id})
            return await cur.fetchone()

    async def projects(self) -> list[Project]:
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(Project))
            await cur.execute(PROJECTS, {})
            return await cur.fetchall()

    async def read_only(self) -> bool:
        """Whether read-only maintenance mode was last switched on (lakeledger/api/maintenance.py)."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(READ_ONLY)
            row = await cur.fetchone()
            return bool(row and row[0])

    async def server(self) -> Server | None:
        """None before the bootstrap."""
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(Server))
            await cur.execute(SERVER, {})
            return await cur.fetchone()

    async def namespace(self, warehouse_id: UUID, path: list[str]) -> NamespaceRow | None:
        """The namespace ``path`` names, in the warehouse's matching; its row has the path as stored."""
        return await self._one(NamespaceRow, NAMESPACE, {"warehouse_id": warehouse_id, **keyed("path", path)})

    async def child_namespaces(self, warehouse_id: UUID, parent: list[str] | None, after: list[str] | None,
                               limit: int | None) -> list[list[str]]:
        if parent:
            rows = await self._all(CHILD_NAMESPACES, {"warehouse_id": warehouse_id, "depth": len(parent),
                                                     "parent": parent, "after": after, "limit": limit})
        else:
            rows = await self._all(TOP_NAMESPACES, {"warehouse_id": warehouse_id, "after": after, "limit": limit})
        return [r["path"] for r in rows]

    async def active_table(self, warehouse_id: UUID, namespace: list[str], name: str) -> ActiveTabular | None:
        """A live table in an active warehouse: the loadTable lookup, kept to a prepared statement and tuple rows
        because it is the hottest query (the storage columns let the fast path hand out cached access without
        another lookup); the lookups of one table waiting at the same moment share one query (coalesced.py)."""
        return await self._active_tables.get((warehouse_id, tuple(namespace), name))

    async def _active_table(self, key: tuple[UUID, tuple[str, ...], str]) -> ActiveTabular | None:
        warehouse_id, namespace, name = key
        return await self._active(warehouse_id, list(namespace), name, "table", prepare=True)

    async def active_view(self, warehouse_id: UUID, namespace: list[str], name: str) -> ActiveTabular | None:
        """A live view in an active warehouse."""
        return await self._active(warehouse_id, namespace, name, "view")

    async def active_generic_table(self, warehouse_id: UUID, namespace: list[str], name: str) -> ActiveTabular | None:
        """A live generic table in an active warehouse."""
        return await self._active(warehouse_id, namespace, name, "generic-table")

    async def _active(self, warehouse_id: UUID, namespace: list[str], name: str, typ: str,
                      prepare: bool | None = None) -> ActiveTabular | None:
        # the exact spelling first (the only lookup of an exact-matching warehouse), then the folded keys
        params = {"warehouse_id": warehouse_id, "namespace": namespace, "name": name, "typ": typ}
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=args_row(ActiveTabular))
            await cur.execute(ACTIVE_TABULAR, params, prepare=prepare)
            found = await cur.fetchone()
            if found is None:
                await cur.execute(ACTIVE_TABULAR_BY_KEY, {**params, **keyed("namespace", namespace),
                                                          **keyed("name", name)}, prepare=prepare)
                found = await cur.fetchone()
            return found

    async def generic_table(self, table_id: UUID) -> GenericTableRow | None:
        """A generic table's description (the same now as at any time since its creation, which alone sets it)."""
        return await self._one(GenericTableRow, GENERIC_TABLE, {"id": table_id})

    async def latest_metadata_location(self, table_id: UUID) -> str | None:
        """The metadata file a table points at now, or last did (a dropped one's); None for a table not known."""
        rows = await self._all(LATEST_METADATA_LOCATION, {"id": table_id})
        return rows[0]["metadata_location"] if rows else None

    async def tabulars(self, namespace_id: UUID, typ: str, after: str | None, limit: int) -> list[str]:
        rows = await self._all(TABULARS, {"namespace_id": namespace_id, "typ": typ, "after": after, "limit": limit})
        return [r["name"] for r in rows]

    async def namespace_ids(self, warehouse_id: UUID, paths: list[list[str]]) -> dict[tuple[str, ...], UUID]:
        """The ids of sibling namespaces (one parent), by path."""
        if not paths:
            return {}
        parent = list(paths[0][:-1])
        rows = await self._all(SIBLING_NAMESPACE_IDS, {"warehouse_id": warehouse_id, "depth": len(parent),
                                                      "parent": parent, "names": [p[-1] for p in paths]})
        return {tuple(r["path"]): r["id"] for r in rows}

    async def tabular_ids(self, namespace_id: UUID, typ: str, names: list[str]) -> dict[str, UUID]:
        rows = await self._all(TABULAR_IDS_BY_NAME, {"namespace_id": namespace_id, "typ": typ, "names": names})
        return {r["name"]: r["id"] for r in rows}
