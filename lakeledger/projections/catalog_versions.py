"""The catalog with validity ranges: every version of a namespace, every placement of a table or view and every
metadata file it pointed at, each with the log positions it held between
(lakeledger/migrations/0014_catalog_versions.sql). Time travel reads the catalog as of any position from it by index
(lakeledger/projections/catalog_versions_queries.py), where the pure fold (lakeledger/projections/as_of.py) had to read
the log from its start.

It answers exactly what the fold answers: same events, same rules (a soft drop can be undone, a final one not; a
registration takes a table out of whichever warehouse held it). A version ends at the position of the event that
ends it and the next begins there, so nothing is ever updated but a version's end.

Each handler is one statement. The projection interface hands over the event alone; its position comes from the
events table in the same statement, by the event's primary key (originator, version).

Not applied inside appends: a read as of position p first brings it up to p (lakeledger/services/time_travel.py), and
the workers keep it near the head, so commits pay nothing for it."""

from functools import singledispatchmethod
from typing import Any

from psycopg import Cursor
from psycopg.types.json import Jsonb

from lakeledger.domain.namespace import Namespace
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.tabular_kinds import created_kind
from lakeledger.domain.view import View
from lakeledger.domain.warehouse import Warehouse
from lakeledger.projections.as_of import TOPICS
from lakeledger.projections.commit_runs import CommitRuns

OPEN = 2**63 - 1  # the end of a version that still holds

TABLES = ("ll_warehouse_origins", "ll_namespace_versions", "ll_tabular_placements", "ll_tabular_metadata_versions")

# the position of the event being applied
_SEQ = ("(SELECT notification_id FROM lakeledger_events"
        " WHERE originator_id = %(oid)s AND originator_version = %(version)s)")

_NAMESPACE_CREATED = (
    "INSERT INTO ll_namespace_versions (id, warehouse_id, parent, path, properties, from_seq)"
    f" VALUES (%(oid)s, %(warehouse_id)s, %(parent)s, %(path)s, %(properties)s, {_SEQ})")

_NAMESPACE_PROPERTIES = (
    f"WITH seq AS (SELECT {_SEQ} AS p), closed AS ("
    " UPDATE ll_namespace_versions SET to_seq = (SELECT p FROM seq) WHERE id = %(oid)s AND to_seq = %(open)s"
    " RETURNING *)"
    " INSERT INTO ll_namespace_versions (id, warehouse_id, parent, path, properties, from_seq)"
    " SELECT id, warehouse_id, parent, path, (properties - %(removed)s::text[]) || %(updated)s, (SELECT p FROM seq)"
    " FROM closed")

_NAMESPACE_DROPPED = (
    f"UPDATE ll_namespace_versions SET to_seq = {_SEQ}, soft_dropped = %(soft)s"
    " WHERE id = %(oid)s AND to_seq = %(open)s")

# An undrop brings the last version back at the path the undrop records: a namespace moved while it was dropped
# (it was below a namespace moved) comes back at its new path; for any other it is the last version's path.
_NAMESPACE_UNDROPPED = (
    "INSERT INTO ll_namespace_versions (id, warehouse_id, parent, path, properties, from_seq)"
    f" SELECT id, warehouse_id, %(parent)s, %(path)s, properties, {_SEQ} FROM ("
    "  SELECT * FROM ll_namespace_versions WHERE id = %(oid)s ORDER BY from_seq DESC LIMIT 1) last"
    " WHERE last.soft_dropped AND last.to_seq <> %(open)s")

# A move ends the namespace's open version and starts one at its new path (a soft-dropped namespace has none open:
# its undrop records where it comes back)
_NAMESPACE_MOVED = (
    f"WITH seq AS (SELECT {_SEQ} AS p), closed AS ("
    " UPDATE ll_namespace_versions SET to_seq = (SELECT p FROM seq) WHERE id = %(oid)s AND to_seq = %(open)s"
    " RETURNING *)"
    " INSERT INTO ll_namespace_versions (id, warehouse_id, parent, path, properties, from_seq)"
    " SELECT id, warehouse_id, %(parent)s, %(path)s, properties, (SELECT p FROM seq) FROM closed")

# A creation or registration ends the tabular's open placement wherever it is (a registration of a dropped
# table in another warehouse) and starts the new one with its first metadata version.
_TABULAR_CREATED = (
    f"WITH seq AS (SELECT {_SEQ} AS p), closed AS ("
    " UPDATE ll_tabular_placements SET to_seq = (SELECT p FROM seq), soft_dropped = false"
    " WHERE id = %(oid)s AND to_seq = %(open)s RETURNING id), placed AS ("
    " INSERT INTO ll_tabular_placements (id, warehouse_id, typ, namespace_id, namespace, name, from_seq)"
    " SELECT %(oid)s, %(warehouse_id)s, %(typ)s, %(namespace_id)s, %(namespace)s, %(name)s, p FROM seq)"
    " INSERT INTO ll_tabular_metadata_versions (id, from_seq, metadata_location, location)"
    " SELECT %(oid)s, p, %(metadata_location)s, %(location)s FROM seq")

# A new metadata file of a live tabular (the fold ignores one of a dropped tabular: an undrop brings back the
# file it was dropped with). A view replaced before views could move has no location: it keeps its own.
_METADATA_CHANGED = (
    "INSERT INTO ll_tabular_metadata_versions (id, from_seq, metadata_location, location)"
    f" SELECT %(oid)s, {_SEQ}, %(metadata_location)s, COALESCE(%(location)s::text, ("
    "  SELECT location FROM ll_tabular_metadata_versions WHERE id = %(oid)s ORDER BY from_seq DESC LIMIT 1))"
    " WHERE EXISTS (SELECT 1 FROM ll_tabular_placements WHERE id = %(oid)s AND to_seq = %(open)s)")

_TABULAR_RENAMED = (
    f"WITH seq AS (SELECT {_SEQ} AS p), closed AS ("
    " UPDATE ll_tabular_placements SET to_seq = (SELECT p FROM seq) WHERE id = %(oid)s AND to_seq = %(open)s"
    " RETURNING *)"
    " INSERT INTO ll_tabular_placements (id, warehouse_id, typ, namespace_id, namespace, name, from_seq)"
    " SELECT id, warehouse_id, typ, %(namespace_id)s, %(namespace)s, %(name)s, (SELECT p FROM seq) FROM closed")

# Its namespace moved: the same placement under the namespace's new path (a soft-dropped tabular has none open:
# its undrop records where it comes back)
_TABULAR_MOVED = (
    f"WITH seq AS (SELECT {_SEQ} AS p), closed AS ("
    " UPDATE ll_tabular_placements SET to_seq = (SELECT p FROM seq) WHERE id = %(oid)s AND to_seq = %(open)s"
    " RETURNING *)"
    " INSERT INTO ll_tabular_placements (id, warehouse_id, typ, namespace_id, namespace, name, from_seq)"
    " SELECT id, warehouse_id, typ, namespace_id, %(namespace)s, name, (SELECT p FROM seq) FROM closed")

_TABULAR_DROPPED = (
    f"UPDATE ll_tabular_placements SET to_seq = {_SEQ}, soft_dropped = %(soft)s"
    " WHERE id = %(oid)s AND to_seq = %(open)s")

_TABULAR_UNDROPPED = (
    "INSERT INTO ll_tabular_placements (id, warehouse_id, typ, namespace_id, namespace, name, from_seq)"
    f" SELECT id, warehouse_id, typ, %(namespace_id)s, %(namespace)s, name, {_SEQ} FROM ("
    "  SELECT * FROM ll_tabular_placements WHERE id = %(oid)s ORDER BY from_seq DESC LIMIT 1) last"
    " WHERE last.soft_dropped AND last.to_seq <> %(open)s")


def _key(e: Any) -> dict[str, Any]:
    return {"oid": e.originator_id, "version": e.originator_version, "open": OPEN}


class CatalogVersionsProjection:
    name = "catalog-versions"
    tables = TABLES
    # a rebuild finds rows by id (the primary keys' prefix) only: the other indexes are built after the fill
    indexed_after_fill = TABLES
    topics = TOPICS  # exactly the events the fold reads

    @singledispatchmethod
    def apply(self, event: Any, cur: Cursor) -> None:
        """Other events do not change what a past catalog shows."""

    @apply.register
    def _(self, e: Warehouse.Created, cur: Cursor) -> None:
        cur.execute(f"INSERT INTO ll_warehouse_origins (id, from_seq) VALUES (%(oid)s, {_SEQ})"
                    " ON CONFLICT (id) DO NOTHING", _key(e))

    @apply.register
    def _(self, e: Namespace.Created, cur: Cursor) -> None:
        cur.execute(_NAMESPACE_CREATED, {**_key(e), "warehouse_id": e.warehouse_id, "parent": list(e.path[:-1]),
                                         "path": list(e.path), "properties": Jsonb(dict(e.properties))})

    @apply.register
    def _(self, e: Namespace.PropertiesUpdated, cur: Cursor) -> None:
        cur.execute(_NAMESPACE_PROPERTIES, {**_key(e), "removed": list(e.removed), "updated": Jsonb(dict(e.updated))})

    @apply.register
    def _(self, e: Namespace.Dropped, cur: Cursor) -> None:
        cur.execute(_NAMESPACE_DROPPED, {**_key(e), "soft": e.expires_at is not None})

    @apply.register
    def _(self, e: Namespace.Undropped, cur: Cursor) -> None:
        cur.execute(_NAMESPACE_UNDROPPED, {**_key(e), "parent": list(e.path[:-1]), "path": list(e.path)})

    @apply.register
    def _(self, e: Namespace.Moved, cur: Cursor) -> None:
        cur.execute(_NAMESPACE_MOVED, {**_key(e), "parent": list(e.to_path[:-1]), "path": list(e.to_path)})

    @apply.register
    def _(self, e: Tabular.Created, cur: Cursor) -> None:
        self._placed(e, created_kind(e), cur)

    @apply.register
    def _(self, e: Table.Registered, cur: Cursor) -> None:
        self._placed(e, "table", cur)

    @apply.register
    def _(self, e: View.Registered, cur: Cursor) -> None:
        self._placed(e, "view", cur)

    def _placed(self, e: Any, typ: str, cur: Cursor) -> None:
        cur.execute(_TABULAR_CREATED, {**_key(e), "warehouse_id": e.warehouse_id, "typ": typ,
                                       "namespace_id": e.namespace_id, "namespace": list(e.namespace),
                                       "name": e.name, "metadata_location": e.metadata_location,
                                       "location": e.location})

    @apply.register
    def _(self, e: Table.Committed, cur: Cursor) -> None:
        cur.execute(_METADATA_CHANGED, {**_key(e), "metadata_location": e.metadata_location, "location": e.location})

    def live_writer(self) -> CommitRuns:
        # a commit without a location (recorded before commits carried one) keeps the last version's: per event
        return CommitRuns(self, lambda e: isinstance(e, Table.Committed) and e.location is not None, _commit_run)

    def rebuilder(self):
        from lakeledger.projections.catalog_versions_rebuild import VersionsInMemory  # it imports this module

        return VersionsInMemory(self.live_writer())

    @apply.register
    def _(self, e: View.Replaced, cur: Cursor) -> None:
        cur.execute(_METADATA_CHANGED, {**_key(e), "metadata_location": e.metadata_location,
                                        "location": getattr(e, "location", None)})

    @apply.register
    def _(self, e: Tabular.Renamed, cur: Cursor) -> None:
        cur.execute(_TABULAR_RENAMED, {**_key(e), "namespace_id": e.to_namespace_id,
                                       "namespace": list(e.to_namespace), "name": e.to_name})

    @apply.register
    def _(self, e: Tabular.Moved, cur: Cursor) -> None:
        cur.execute(_TABULAR_MOVED, {**_key(e), "namespace": list(e.to_namespace)})

    @apply.register
    def _(self, e: Tabular.Dropped, cur: Cursor) -> None:
        cur.execute(_TABULAR_DROPPED, {**_key(e), "soft": e.expires_at is not None})

    @apply.register
    def _(self, e: Tabular.Undropped, cur: Cursor) -> None:
        cur.execute(_TABULAR_UNDROPPED, {**_key(e), "namespace_id": e.namespace_id, "namespace": list(e.namespace)})


# A new metadata file of a live tabular, for consecutive commits at their known positions (as _METADATA_CHANGED).
_COMMIT_RUN = (
    "INSERT INTO ll_tabular_metadata_versions (id, from_seq, metadata_location, location)"
    " SELECT v.id, v.from_seq, v.metadata_location, v.location"
    " FROM unnest(%b::uuid[], %b::bigint[], %b::text[], %b::text[]) AS v(id, from_seq, metadata_location, location)"
    " WHERE EXISTS (SELECT 1 FROM ll_tabular_placements WHERE id = v.id AND to_seq = %s)")


def _commit_run(run: list, cur: Cursor) -> None:
    cur.execute(_COMMIT_RUN, ([r.event.originator_id for r in run], [r.position for r in run],
                              [r.event.metadata_location for r in run], [r.event.location for r in run], OPEN))
