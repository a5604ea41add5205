"""The catalog read model: projects, warehouses, namespaces and tabulars as they are now.

Every handler is an idempotent-by-position SQL statement driven only by the event's own fields
(times come from the event, never from the clock), so replaying the log yields identical rows.
"""

from functools import cache, singledispatchmethod
from typing import Any

from psycopg import Cursor
from psycopg.types.json import Jsonb

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.maintenance import MaintenanceMode
from lakeledger.domain.names import CASE_INSENSITIVE, name_key, path_key
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.project import Project
from lakeledger.domain.server import Server
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import GENERIC_TABLE, Tabular
from lakeledger.domain.tabular_kinds import created_kind
from lakeledger.domain.view import View
from lakeledger.domain.warehouse import Warehouse
from lakeledger.projections import appended
from lakeledger.projections.copy_rows import text_array

TABLES = ("ll_server", "ll_maintenance_mode", "ll_projects", "ll_warehouses", "ll_namespaces", "ll_dropped_namespaces",
          "ll_tabulars", "ll_generic_tables")


class CatalogProjection:
    name = "catalog"
    tables = TABLES
    topics: tuple[str, ...] = ()

    @singledispatchmethod
    def apply(self, event: Any, cur: Cursor) -> None:
        """Events this read model does not show (name claims, future kinds) are skipped."""

    @apply.register
    def _(self, e: Server.Bootstrapped, cur: Cursor) -> None:
        cur.execute(
            "INSERT INTO ll_server (id, server_id, is_operator, bootstrapped_at, bootstrapped_by)"
            " VALUES (%s, %s, %s, %s, %s)",
            (e.originator_id, e.server_id, e.is_operator, e.timestamp, e.actor))

    @apply.register
    def _(self, e: MaintenanceMode.Started, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_maintenance_mode (id, read_only, updated_at) VALUES (%s, %s, %s)",
                    (e.originator_id, e.read_only, e.timestamp))

    @apply.register
    def _(self, e: MaintenanceMode.Switched, cur: Cursor) -> None:
        cur.execute("UPDATE ll_maintenance_mode SET read_only = %s, updated_at = %s WHERE id = %s",
                    (e.read_only, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Project.Created, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_projects (id, name, created_at) VALUES (%s, %s, %s)",
                    (e.originator_id, e.name, e.timestamp))

    @apply.register
    def _(self, e: Project.Deleted, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_projects WHERE id = %s", (e.originator_id,))

    @apply.register
    def _(self, e: Project.Renamed, cur: Cursor) -> None:
        cur.execute("UPDATE ll_projects SET name = %s, updated_at = %s WHERE id = %s",
                    (e.new_name, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.Created, cur: Cursor) -> None:
        cur.execute(
            "INSERT INTO ll_warehouses (id, project_id, name, storage_profile, delete_profile, drop_purge_default,"
            " storage_secret, name_matching, status, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'active', %s)",
            (e.originator_id, e.project_id, e.name, Jsonb(e.storage_profile), Jsonb(e.delete_profile),
             e.drop_purge_default, Jsonb(e.storage_secret) if e.storage_secret else None, e.name_matching,
             e.timestamp))

    @apply.register
    def _(self, e: Warehouse.StorageChanged, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET storage_profile = %s, storage_secret = %s, updated_at = %s"
                    " WHERE id = %s", (Jsonb(e.storage_profile), Jsonb(e.storage_secret) if e.storage_secret
                                       else None, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.StorageCredentialRotated, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET storage_secret = %s, updated_at = %s WHERE id = %s",
                    (Jsonb(e.storage_secret), e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.Renamed, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET name = %s, updated_at = %s WHERE id = %s",
                    (e.new_name, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.Deactivated, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET status = 'inactive', updated_at = %s WHERE id = %s",
                    (e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.Activated, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET status = 'active', updated_at = %s WHERE id = %s",
                    (e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.Deleted, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_warehouses WHERE id = %s", (e.originator_id,))

    @apply.register
    def _(self, e: Warehouse.DeleteProfileSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET delete_profile = %s, updated_at = %s WHERE id = %s",
                    (Jsonb(e.delete_profile), e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.DropPurgeDefaultSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET drop_purge_default = %s, updated_at = %s WHERE id = %s",
                    (e.drop_purge_default, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.TimeTravelRetentionSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET time_travel_retention = %s, time_travel_retention_set_at = %s,"
                    " updated_at = %s WHERE id = %s",
                    (e.time_travel_retention, e.timestamp, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.ManagedBySet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET managed_by = %s, updated_at = %s WHERE id = %s",
                    (e.managed_by, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.FormatVersionPolicySet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET allowed_format_versions = %s, default_format_version = %s,"
                    " updated_at = %s WHERE id = %s",
                    (Jsonb(list(e.allowed_format_versions)), Jsonb(e.default_format_version), e.timestamp,
                     e.originator_id))

    @apply.register
    def _(self, e: Warehouse.ProtectionSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET protected = %s, updated_at = %s WHERE id = %s",
                    (e.protected, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Warehouse.ManagedAccessSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_warehouses SET managed_access = %s, updated_at = %s WHERE id = %s",
                    (e.managed_access, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Namespace.Created, cur: Cursor) -> None:
        cur.execute(
            "INSERT INTO ll_namespaces (id, warehouse_id, parent_id, path, path_key, properties, created_at)"
            f" VALUES (%(id)s, %(w)s, %(parent)s, %(path)s, {_key('%(w)s', '%(path)s::text[]', '%(folded)s::text[]')},"
            " %(properties)s, %(at)s)",
            {"id": e.originator_id, "w": e.warehouse_id, "parent": e.parent_id, "path": list(e.path),
             "folded": path_key(e.path, CASE_INSENSITIVE), "properties": Jsonb(e.properties), "at": e.timestamp})

    @apply.register
    def _(self, e: Namespace.PropertiesUpdated, cur: Cursor) -> None:
        cur.execute(
            "UPDATE ll_namespaces SET properties = (properties - %s::text[]) || %s, updated_at = %s WHERE id = %s",
            (list(e.removed), Jsonb(e.updated), e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Namespace.Dropped, cur: Cursor) -> None:
        if e.expires_at is not None:
            cur.execute(
                "INSERT INTO ll_dropped_namespaces (id, warehouse_id, parent_id, path, path_key, properties,"
                " protected, managed_access, created_at, updated_at, dropped_at, expires_at, dropped_with)"
                " SELECT id, warehouse_id, parent_id, path, path_key, properties, protected, managed_access,"
                " created_at, updated_at, %s, %s, %s"
                " FROM ll_namespaces WHERE id = %s",
                (e.timestamp, e.expires_at, e.with_namespace, e.originator_id))
        cur.execute("DELETE FROM ll_namespaces WHERE id = %s", (e.originator_id,))

    @apply.register
    def _(self, e: Namespace.Undropped, cur: Cursor) -> None:
        cur.execute(
            "INSERT INTO ll_namespaces (id, warehouse_id, parent_id, path, path_key, properties, protected,"
            " managed_access, created_at, updated_at) SELECT id, warehouse_id, parent_id, path, path_key, properties,"
            " protected, managed_access, created_at, %s"
            " FROM ll_dropped_namespaces WHERE id = %s", (e.timestamp, e.originator_id))
        cur.execute("DELETE FROM ll_dropped_namespaces WHERE id = %s", (e.originator_id,))

    @apply.register
    def _(self, e: Namespace.Expired, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_dropped_namespaces WHERE id = %s", (e.originator_id,))

    @apply.register
    def _(self, e: Namespace.ProtectionSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_namespaces SET protected = %s, updated_at = %s WHERE id = %s",
                    (e.protected, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Namespace.ManagedAccessSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_namespaces SET managed_access = %s, updated_at = %s WHERE id = %s",
                    (e.managed_access, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Namespace.Moved, cur: Cursor) -> None:
        # a namespace below the one moved may be soft-dropped: its row waits in ll_dropped_namespaces
        params = {"parent": e.to_parent_id, "path": list(e.to_path), "folded": path_key(e.to_path, CASE_INSENSITIVE),
                  "at": e.timestamp, "id": e.originator_id}
        cur.execute("UPDATE ll_namespaces SET parent_id = %(parent)s, path = %(path)s, path_key ="
                    f" {_key('ll_namespaces.warehouse_id', '%(path)s::text[]', '%(folded)s::text[]')},"
                    " updated_at = %(at)s WHERE id = %(id)s", params)
        cur.execute("UPDATE ll_dropped_namespaces SET parent_id = %(parent)s, path = %(path)s, path_key ="
                    f" {_key('ll_dropped_namespaces.warehouse_id', '%(path)s::text[]', '%(folded)s::text[]')}"
                    " WHERE id = %(id)s", params)

    @apply.register
    def _(self, e: Tabular.Moved, cur: Cursor) -> None:
        cur.execute(f"UPDATE ll_tabulars SET namespace = %(ns)s, namespace_key ="
                    f" {_key('ll_tabulars.warehouse_id', '%(ns)s::text[]', '%(folded)s::text[]')} WHERE id = %(id)s",
                    {"ns": list(e.to_namespace), "folded": path_key(e.to_namespace, CASE_INSENSITIVE),
                     "id": e.originator_id})

    @apply.register
    def _(self, e: Table.Created, cur: Cursor) -> None:
        self._tabular_created(e, "table", cur)

    @apply.register
    def _(self, e: View.Created, cur: Cursor) -> None:
        self._tabular_created(e, "view", cur)

    @apply.register
    def _(self, e: Table.Registered, cur: Cursor) -> None:
        self._tabular_created(e, "table", cur)

    @apply.register
    def _(self, e: View.Registered, cur: Cursor) -> None:
        self._tabular_created(e, "view", cur)

    @apply.register
    def _(self, e: GenericTable.Created, cur: Cursor) -> None:
        self._tabular_created(e, GENERIC_TABLE, cur)
        cur.execute(
            "INSERT INTO ll_generic_tables (id, format, doc, properties, schema, statistics)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING",
            (e.originator_id, e.format, e.doc, Jsonb(e.properties), _json_or_null(e.schema),
             _json_or_null(e.statistics)))

    def _tabular_created(self, e: Table.Created | Table.Registered | View.Created | View.Registered
                         | GenericTable.Created, typ: str, cur: Cursor) -> None:
        cur.execute(
            "INSERT INTO ll_tabulars (id, typ, warehouse_id, namespace_id, namespace, namespace_key, name, name_key,"
            " location, metadata_location, created_at) VALUES (%(id)s, %(typ)s, %(w)s, %(ns_id)s, %(ns)s,"
            f" {_key('%(w)s', '%(ns)s::text[]', '%(ns_folded)s::text[]')}, %(name)s,"
            f" {_key('%(w)s', '%(name)s', '%(folded)s')},"
            " %(location)s, %(metadata)s, %(at)s)"
            " ON CONFLICT (id) DO UPDATE SET warehouse_id = EXCLUDED.warehouse_id,"
            " namespace_id = EXCLUDED.namespace_id, namespace = EXCLUDED.namespace, name = EXCLUDED.name,"
            " namespace_key = EXCLUDED.namespace_key, name_key = EXCLUDED.name_key, location = EXCLUDED.location,"
            " metadata_location = EXCLUDED.metadata_location,"
            " updated_at = EXCLUDED.created_at, dropped_at = NULL, purge_requested = NULL, expires_at = NULL,"
            " deleted_at = NULL, purged_at = NULL, dropped_with = NULL",
            {"id": e.originator_id, "typ": typ, "w": e.warehouse_id, "ns_id": e.namespace_id, "ns": list(e.namespace),
             "ns_folded": path_key(e.namespace, CASE_INSENSITIVE), "name": e.name,
             "folded": name_key(e.name, CASE_INSENSITIVE), "location": e.location, "metadata": e.metadata_location,
             "at": e.timestamp})

    @apply.register
    def _(self, e: View.Replaced, cur: Cursor) -> None:
        cur.execute("UPDATE ll_tabulars SET metadata_location = %s, location = COALESCE(%s, location), updated_at = %s"
                    " WHERE id = %s", (e.metadata_location, e.location, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Table.Committed, cur: Cursor) -> None:
        cur.execute(
            "UPDATE ll_tabulars SET metadata_location = %s, location = %s, updated_at = %s WHERE id = %s",
            (e.metadata_location, e.location, e.timestamp, e.originator_id))

    def rebuilder(self) -> "LastCommits":
        return LastCommits(self)

    @apply.register
    def _(self, e: Tabular.Renamed, cur: Cursor) -> None:
        cur.execute(
            "UPDATE ll_tabulars SET namespace_id = %(ns_id)s, namespace = %(ns)s, name = %(name)s, namespace_key ="
            f" {_key('ll_tabulars.warehouse_id', '%(ns)s::text[]', '%(ns_folded)s::text[]')},"
            f" name_key = {_key('ll_tabulars.warehouse_id', '%(name)s', '%(folded)s')}, updated_at = %(at)s"
            " WHERE id = %(id)s",
            {"ns_id": e.to_namespace_id, "ns": list(e.to_namespace), "ns_folded": path_key(e.to_namespace,
             CASE_INSENSITIVE), "name": e.to_name, "folded": name_key(e.to_name, CASE_INSENSITIVE),
             "at": e.timestamp, "id": e.originator_id})

    @apply.register
    def _(self, e: Tabular.Dropped, cur: Cursor) -> None:
        final = e.timestamp if e.expires_at is None else None
        cur.execute(
            "UPDATE ll_tabulars SET dropped_at = %s, purge_requested = %s, updated_at = %s, expires_at = %s,"
            " deleted_at = %s, dropped_with = %s WHERE id = %s",
            (e.timestamp, e.purge_requested, e.timestamp, e.expires_at, final, e.with_namespace, e.originator_id))

    @apply.register
    def _(self, e: Tabular.Undropped, cur: Cursor) -> None:
        cur.execute(
            "UPDATE ll_tabulars SET dropped_at = NULL, purge_requested = NULL, expires_at = NULL, dropped_with = NULL,"
            " namespace_id = %s, namespace = %s, updated_at = %s WHERE id = %s",
            (e.namespace_id, list(e.namespace), e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Tabular.Expired, cur: Cursor) -> None:
        cur.execute("UPDATE ll_tabulars SET deleted_at = %s, expires_at = NULL, updated_at = %s WHERE id = %s",
                    (e.timestamp, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Tabular.ExpiryRescheduled, cur: Cursor) -> None:
        # a cancelled expiry (None) keeps the date it had: Lakekeeper's deleted-tabulars shape requires one, and
        # the tasks API says the expiry was cancelled
        if e.expires_at is not None:
            cur.execute("UPDATE ll_tabulars SET expires_at = %s WHERE id = %s", (e.expires_at, e.originator_id))

    @apply.register
    def _(self, e: Tabular.PurgeCancelled, cur: Cursor) -> None:
        cur.execute("UPDATE ll_tabulars SET purge_requested = false WHERE id = %s", (e.originator_id,))

    @apply.register
    def _(self, e: Tabular.Purged, cur: Cursor) -> None:
        cur.execute("UPDATE ll_tabulars SET purged_at = %s WHERE id = %s", (e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Tabular.ProtectionSet, cur: Cursor) -> None:
        cur.execute("UPDATE ll_tabulars SET protected = %s, updated_at = %s WHERE id = %s",
                    (e.protected, e.timestamp, e.originator_id))


class LastCommits:
    """The catalog's rebuild writer (lakeledger/projections/rebuild.py). Most of a log is table creations and commits,
    and a table's row shows its creation and its last commit only. Creations are held and written many to a statement,
    each with the commits that came after it folded in; for a table created earlier, only its last commit is held. Both
    are written when an event of another kind comes (or the pass pauses, ``settle``), so a million commits to 100,000
    tables are 100,000 rows written once, not 100,000 inserts and a million updates (each of which wrote a new row
    version and its index entries). Other events go to the projection's ``apply`` in log order, after everything held
    before them."""

    def __init__(self, projection: CatalogProjection):
        self.projection = projection
        # table id -> the insert's values (as _CREATED_HELD's columns); its later commits change them in place
        self.created: dict[Any, list] = {}
        self.last: dict[Any, tuple] = {}  # table id -> (metadata location, location, time) of its last commit

    def add(self, logged: Any, cur: Cursor) -> None:
        e = logged.event
        if isinstance(e, Table.Committed):
            held = self.created.get(e.originator_id)
            if held is not None:
                held[6], held[7], held[9] = e.location, e.metadata_location, e.timestamp
            else:
                self.last[e.originator_id] = (e.metadata_location, e.location, e.timestamp)
            return
        if isinstance(e, _CREATIONS):
            if e.originator_id in self.created or e.originator_id in self.last:
                self.settle(cur)  # what is held of this table goes first
            self.created[e.originator_id] = [
                e.originator_id, created_kind(e), e.warehouse_id, e.namespace_id,
                text_array(e.namespace), e.name, e.location, e.metadata_location, e.timestamp, None,
                text_array(path_key(e.namespace, CASE_INSENSITIVE)), name_key(e.name, CASE_INSENSITIVE)]
            return
        kind: type = type(e)  # (mypy takes a class inferred as type[X] for unhashable, annotated it is not)
        if _shown(kind):  # a name claim, which comes with every creation, changes nothing here
            self.settle(cur)
            appended.apply(self.projection, logged, cur)

    def flush(self, cur: Cursor) -> None:
        pass  # held across batches; written by ``settle`` or before the next event of another kind

    def settle(self, cur: Cursor) -> None:
        if self.created:
            cur.execute(_CREATED_HELD, [list(column) for column in zip(*self.created.values(), strict=True)])
            self.created = {}
        if not self.last:
            return
        ids, values = list(self.last), list(self.last.values())
        cur.execute(
            "UPDATE ll_tabulars t SET metadata_location = v.metadata_location, location = v.location,"
            " updated_at = v.updated_at FROM unnest(%b::uuid[], %b::text[], %b::text[], %b::timestamptz[])"
            " AS v(id, metadata_location, location, updated_at) WHERE t.id = v.id",
            (ids, [v[0] for v in values], [v[1] for v in values], [v[2] for v in values]))
        self.last = {}


_CREATIONS = (Table.Created, View.Created, Table.Registered, View.Registered)


def _key(warehouse_id: str, exact: str, folded: str) -> str:
    """SQL for the key of a name (or a path) under its warehouse's rule (lakeledger/domain/names.py ``name_key``):
    the projection is handed both spellings and the warehouse's row picks one, so an event needs no setting of
    its own and a rebuild derives the same keys (a warehouse's matching is fixed when it is created)."""
    return (f"(CASE WHEN (SELECT name_matching FROM ll_warehouses WHERE id = {warehouse_id}) = 'case-insensitive'"
            f" THEN {folded} ELSE {exact} END)")


def _json_or_null(value: Any) -> Jsonb | None:
    """SQL NULL for what the request left out (or sent as null), JSON for anything else."""
    return None if value is None else Jsonb(value)


@cache
def _shown(cls: type) -> bool:
    """Whether the catalog has a handler for events of ``cls`` (the others it skips)."""
    dispatcher = CatalogProjection.__dict__["apply"].dispatcher
    return dispatcher.dispatch(cls) is not dispatcher.dispatch(object)


# as _tabular_created's statement, for many creations at once, each with its later commits folded in (updated_at is
# then the last commit's time; a creation over an existing row sets it to the creation's time, as that statement
# does); the namespaces come as array literals, an array of arrays being unable to hold paths of several lengths
_CREATED_HELD = (
    "INSERT INTO ll_tabulars (id, typ, warehouse_id, namespace_id, namespace, name, location, metadata_location,"
    " created_at, updated_at, namespace_key, name_key)"
    " SELECT v.id, v.typ, v.warehouse_id, v.namespace_id, v.namespace::text[], v.name, v.location,"
    " v.metadata_location, v.created_at, v.updated_at,"
    " CASE WHEN w.name_matching = 'case-insensitive' THEN v.namespace_folded::text[] ELSE v.namespace::text[] END,"
    " CASE WHEN w.name_matching = 'case-insensitive' THEN v.name_folded ELSE v.name END"
    " FROM unnest(%b::uuid[], %b::text[], %b::uuid[], %b::uuid[], %b::text[], %b::text[], %b::text[], %b::text[],"
    " %b::timestamptz[], %b::timestamptz[], %b::text[], %b::text[])"
    " AS v(id, typ, warehouse_id, namespace_id, namespace, name, location, metadata_location, created_at, updated_at,"
    " namespace_folded, name_folded) LEFT JOIN ll_warehouses w ON w.id = v.warehouse_id"
    " ON CONFLICT (id) DO UPDATE SET warehouse_id = EXCLUDED.warehouse_id,"
    " namespace_id = EXCLUDED.namespace_id, namespace = EXCLUDED.namespace, name = EXCLUDED.name,"
    " namespace_key = EXCLUDED.namespace_key, name_key = EXCLUDED.name_key,"
    " location = EXCLUDED.location, metadata_location = EXCLUDED.metadata_location,"
    " updated_at = COALESCE(EXCLUDED.updated_at, EXCLUDED.created_at), dropped_at = NULL, purge_requested = NULL,"
    " expires_at = NULL, deleted_at = NULL, purged_at = NULL, dropped_with = NULL")
