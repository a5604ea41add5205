"""Blue/green read-model tables: a shadow copy of each live table in the schema ``ll_rebuild``, with the same
name, columns, defaults, constraints and indexes (their names too), filled beside the live one and moved in its
place when complete.

The shadow has the live table's name, so a projection's own SQL writes it unchanged once ``ll_rebuild`` comes
first in the session's ``search_path``; everything not shadowed (the events table, other read models) still
resolves to the live schema. The swap is DDL inside the caller's transaction: the live table is dropped and the
shadow moved into its schema, so its indexes and constraints arrive under the names migrations know. A sequence
the live table owns (a ``bigserial``) is shared by the shadow's default, released before the drop and owned by
the moved table after it, so it keeps counting; views over a live table are dropped and created again over the new one.
Grants on the live tables are not carried over (the database's owner runs everything here).

Only DDL and catalog queries: no projection logic."""

from dataclasses import dataclass, field

from psycopg import Connection, sql

SCHEMA = "ll_rebuild"


@dataclass
class Shadow:
    table: str  # the live table's name, unqualified
    live_schema: str
    oid: int
    # indexes made once the shadow is filled (``build_deferred``): cheaper in one sorted pass than row by row
    deferred: list[sql.SQL] = field(default_factory=list)
    views: list[tuple[str, str, str]] = field(default_factory=list)  # (qualified name, kind, definition)

    @property
    def live(self) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(self.live_schema), sql.Identifier(self.table))

    @property
    def shadow(self) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(SCHEMA), sql.Identifier(self.table))


def create(conn: Connection, tables: list[str], defer: frozenset[str] = frozenset()) -> list[Shadow]:
    """Empty shadows of ``tables`` (a shadow left by an interrupted rebuild is replaced). Commits. The shadows of
    tables in ``defer`` get only their unique indexes now (what ``ON CONFLICT`` and lookups by key need), the others
    by ``build_deferred``."""
    shadows = []
    with conn.transaction():
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
        for table in tables:
            row = conn.execute("SELECT c.oid, n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                               " WHERE c.oid = to_regclass(%s)", (table,)).fetchone()
            if row is None:
                raise RuntimeError(f"read-model table {table} does not exist; run `lakeledger migrate`")
            s = Shadow(table, row[1], row[0])
            _refuse_foreign_keys(conn, s)
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(s.shadow))
            # not INCLUDING INDEXES: those would get generated names; they are made below under the live ones
            conn.execute(sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING"
                                 " GENERATED INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMMENTS)")
                         .format(s.shadow, s.live))
            for name, definition in conn.execute(
                    "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s"
                    " AND contype IN ('p', 'u', 'x') ORDER BY conname", (s.oid,)).fetchall():
                conn.execute(sql.SQL("ALTER TABLE {} ADD CONSTRAINT {} {}").format(
                    s.shadow, sql.Identifier(name), sql.SQL(definition)))
            for definition, unique in _index_definitions(conn, s):
                if table in defer and not unique:
                    s.deferred.append(definition)
                else:
                    conn.execute(definition)
            shadows.append(s)
    return shadows


def _refuse_foreign_keys(conn: Connection, s: Shadow) -> None:
    found = conn.execute("SELECT conname FROM pg_constraint WHERE contype = 'f' AND (conrelid = %s OR confrelid = %s)",
                         (s.oid, s.oid)).fetchall()
    if found:  # a read model is rebuilt from the log alone; a key into or out of it would tie it to other data
        raise RuntimeError(f"read-model table {s.table} has foreign keys ({', '.join(r[0] for r in found)});"
                           " blue/green rebuild does not carry them over")


def _index_definitions(conn: Connection, s: Shadow) -> list[tuple[sql.SQL, bool]]:
    """The live table's indexes that no constraint owns, as statements creating them on the shadow, each with
    whether it is unique."""
    live = conn.execute("SELECT quote_ident(%s) || '.' || quote_ident(%s)", (s.live_schema, s.table)).fetchone()
    copy = conn.execute("SELECT quote_ident(%s) || '.' || quote_ident(%s)", (SCHEMA, s.table)).fetchone()
    assert live is not None and copy is not None  # an expression's one row
    qualified, target = live[0], copy[0]
    out: list[tuple[sql.SQL, bool]] = []
    for name, definition, unique in conn.execute(
            "SELECT i.relname, pg_get_indexdef(x.indexrelid), x.indisunique"
            " FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
            " WHERE x.indrelid = %s AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)"
            " ORDER BY i.relname", (s.oid,)).fetchall():
        marker = f" ON {qualified} "
        if marker not in definition:
            raise RuntimeError(f"cannot read the definition of index {name} on {s.table}: {definition}")
        out.append((sql.SQL(definition.replace(marker, f" ON {target} ", 1)), unique))
    return out


def build_deferred(conn: Connection, shadows: list[Shadow]) -> None:
    """The indexes ``create`` left for after the fill."""
    for s in shadows:
        for definition in s.deferred:
            conn.execute(definition)
        s.deferred = []


def analyze(conn: Connection, shadows: list[Shadow]) -> None:
    """Planner statistics for the filled shadows, before they serve queries (autovacuum would come later)."""
    for s in shadows:
        conn.execute(sql.SQL("ANALYZE {}").format(s.shadow))


def swap(conn: Connection, shadows: list[Shadow]) -> None:
    """Puts every shadow in its live table's place, inside the caller's transaction (which should already hold
    whatever keeps writers out). Takes each live table's ACCESS EXCLUSIVE lock: readers in flight finish first."""
    for s in shadows:
        # who depends on the live table now (not when the shadow was made: a migration may have added a view)
        s.views = [(name, kind, definition) for name, kind, definition in conn.execute(
            "SELECT DISTINCT quote_ident(n.nspname) || '.' || quote_ident(v.relname), v.relkind::text,"
            " pg_get_viewdef(v.oid) FROM pg_depend d JOIN pg_rewrite r ON r.oid = d.objid"
            " JOIN pg_class v ON v.oid = r.ev_class JOIN pg_namespace n ON n.oid = v.relnamespace"
            " WHERE d.classid = 'pg_rewrite'::regclass AND d.refobjid = %s AND v.oid <> %s",
            (s.oid, s.oid)).fetchall()]
        for name, kind, _ in s.views:
            conn.execute(sql.SQL("DROP {} {}").format(sql.SQL("MATERIALIZED VIEW" if kind == "m" else "VIEW"),
                                                     sql.SQL(name)))
        owned = conn.execute(
                "SELECT quote_ident(sn.nspname) || '.' || quote_ident(s.relname), a.attname"
                " FROM pg_depend d JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'"
                " JOIN pg_namespace sn ON sn.oid = s.relnamespace"
                " JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid"
                " WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass"
                " AND d.refobjid = %s AND d.deptype = 'a'", (s.oid,)).fetchall()
        for sequence, _ in owned:  # kept through the drop (a sequence is owned only within its own schema)
            conn.execute(sql.SQL("ALTER SEQUENCE {} OWNED BY NONE").format(sql.SQL(sequence)))
        conn.execute(sql.SQL("DROP TABLE {}").format(s.live))
        conn.execute(sql.SQL("ALTER TABLE {} SET SCHEMA {}").format(s.shadow, sql.Identifier(s.live_schema)))
        for sequence, column in owned:
            conn.execute(sql.SQL("ALTER SEQUENCE {} OWNED BY {}.{}").format(
                sql.SQL(sequence), s.live, sql.Identifier(column)))
    for s in shadows:  # after every move, so a view over two swapped tables finds both
        for name, kind, definition in s.views:
            conn.execute(sql.SQL("CREATE {} {} AS {}").format(
                sql.SQL("MATERIALIZED VIEW" if kind == "m" else "VIEW"), sql.SQL(name),
                sql.SQL(definition.rstrip().rstrip(";"))))


def drop(conn: Connection, shadows: list[Shadow]) -> None:
    """Removes shadows that will not be swapped in (a failed rebuild)."""
    for s in shadows:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(s.shadow))
