"""The catalog versions written by a rebuild (lakeledger/projections/rebuild.py), which fills empty shadows from the
log's start and is their only writer: every version is kept in memory until it ends, then written once, finished, by
COPY. Event by event (lakeledger/projections/catalog_versions.py) each creation, rename or drop is a statement that
finds the event's position in the log and the version it ends by index, and each commit checks its table's placement: at
a million events that was half of the Postgres time of a whole rebuild.

The rules are the projection's, step for step: a version ends at the position of the event that ends it and the
next begins there; an undrop brings back the last version when a drop that may be reversed ended it; a metadata
version is written only while its tabular is placed, and keeps the last location when the event has none.

Once the pass pauses (``settle``), the versions still open are written as they stand and the writer hands over to
the projection's own per-event writer for the rest (the few events before the swap), which then finds them in the
shadows."""

import json
from typing import Any
from uuid import UUID

from psycopg import Cursor

from lakeledger.domain.namespace import Namespace
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.tabular_kinds import created_kind
from lakeledger.domain.view import View
from lakeledger.domain.warehouse import Warehouse
from lakeledger.projections.catalog_versions import OPEN
from lakeledger.projections.copy_rows import text_array

_COLUMNS = {
    "ll_warehouse_origins": "id, from_seq",
    "ll_namespace_versions": "id, warehouse_id, parent, path, properties, from_seq, to_seq, soft_dropped",
    "ll_tabular_placements": "id, warehouse_id, typ, namespace_id, namespace, name, from_seq, to_seq, soft_dropped",
    "ll_tabular_metadata_versions": "id, from_seq, metadata_location, location",
}


class _Version:
    """A namespace version or a tabular placement: its values, and when and how it ended."""

    __slots__ = ("values", "from_seq", "to_seq", "soft_dropped")

    def __init__(self, values: dict[str, Any], from_seq: int):
        self.values = values
        self.from_seq = from_seq
        self.to_seq = OPEN
        self.soft_dropped = False

    @property
    def open(self) -> bool:
        return self.to_seq == OPEN


class VersionsInMemory:
    def __init__(self, per_event: Any):
        self.per_event = per_event  # the projection's live writer, used once the open versions are written
        self.handed_over = False
        self.origins: set[UUID] = set()
        self.namespaces: dict[UUID, _Version] = {}  # each namespace's last version
        self.placements: dict[UUID, _Version] = {}  # each tabular's last placement
        self.locations: dict[UUID, str | None] = {}  # each tabular's last metadata version's location
        self.rows: dict[str, list[tuple]] = {table: [] for table in _COLUMNS}

    def add(self, logged: Any, cur: Cursor) -> None:
        if self.handed_over:
            self.per_event.add(logged, cur)
        else:
            event = logged.event
            handler = _HANDLERS.get(type(event))
            if handler is None:
                handler = _HANDLERS[type(event)] = _handler_of(type(event))
            handler(self, event, logged.position)

    def flush(self, cur: Cursor) -> None:
        if self.handed_over:
            self.per_event.flush(cur)
            return
        for table, rows in self.rows.items():
            if rows:
                with cur.copy(f"COPY {table} ({_COLUMNS[table]}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                self.rows[table] = []

    def settle(self, cur: Cursor) -> None:
        if self.handed_over:
            return
        for id_, version in self.namespaces.items():
            if version.open:
                self._namespace_row(id_, version)
        for id_, version in self.placements.items():
            if version.open:
                self._placement_row(id_, version)
        self.flush(cur)
        self.handed_over = True
        self.origins, self.namespaces, self.placements, self.locations = set(), {}, {}, {}

    # versions ending and beginning

    def _namespace_row(self, id_: UUID, v: _Version) -> None:
        values = v.values
        self.rows["ll_namespace_versions"].append(
            (id_, values["warehouse_id"], text_array(values["path"][:-1]), text_array(values["path"]),
             json.dumps(values["properties"]), v.from_seq, v.to_seq, v.soft_dropped))

    def _placement_row(self, id_: UUID, v: _Version) -> None:
        values = v.values
        self.rows["ll_tabular_placements"].append(
            (id_, values["warehouse_id"], values["typ"], values["namespace_id"], text_array(values["namespace"]),
             values["name"], v.from_seq, v.to_seq, v.soft_dropped))

    def _end_namespace(self, id_: UUID, at: int, soft: bool = False) -> _Version | None:
        """Ends the namespace's open version at ``at``; the version ended (None when none was open)."""
        return self._end(self.namespaces, self._namespace_row, id_, at, soft)

    def _end_placement(self, id_: UUID, at: int, soft: bool = False) -> _Version | None:
        return self._end(self.placements, self._placement_row, id_, at, soft)

    @staticmethod
    def _end(versions: dict[UUID, _Version], written: Any, id_: UUID, at: int, soft: bool) -> _Version | None:
        version = versions.get(id_)
        if version is None or not version.open:
            return None
        version.to_seq, version.soft_dropped = at, soft
        written(id_, version)
        return version

    def _metadata(self, id_: UUID, at: int, metadata_location: str | None, location: str | None) -> None:
        if location is None:
            location = self.locations.get(id_)
        self.locations[id_] = location
        self.rows["ll_tabular_metadata_versions"].append((id_, at, metadata_location, location))

    # the events (other events do not change what a past catalog shows)

    def _warehouse_created(self, e: Warehouse.Created, at: int) -> None:
        if e.originator_id not in self.origins:
            self.origins.add(e.originator_id)
            self.rows["ll_warehouse_origins"].append((e.originator_id, at))

    def _namespace_created(self, e: Namespace.Created, at: int) -> None:
        self.namespaces[e.originator_id] = _Version(
            {"warehouse_id": e.warehouse_id, "path": list(e.path), "properties": dict(e.properties)}, at)

    def _namespace_properties(self, e: Namespace.PropertiesUpdated, at: int) -> None:
        ended = self._end_namespace(e.originator_id, at)
        if ended is not None:
            properties = {k: v for k, v in ended.values["properties"].items() if k not in set(e.removed)}
            properties.update(e.updated)
            self.namespaces[e.originator_id] = _Version({**ended.values, "properties": properties}, at)

    def _namespace_dropped(self, e: Namespace.Dropped, at: int) -> None:
        self._end_namespace(e.originator_id, at, soft=e.expires_at is not None)

    def _namespace_undropped(self, e: Namespace.Undropped, at: int) -> None:
        last = self.namespaces.get(e.originator_id)
        if last is not None and last.soft_dropped and not last.open:
            self.namespaces[e.originator_id] = _Version({**last.values, "path": list(e.path)}, at)

    def _namespace_moved(self, e: Namespace.Moved, at: int) -> None:
        ended = self._end_namespace(e.originator_id, at)
        if ended is not None:
            self.namespaces[e.originator_id] = _Version({**ended.values, "path": list(e.to_path)}, at)

    def _tabular_created(self, e: Tabular.Created, at: int) -> None:
        self._placed(e, created_kind(e), at)

    def _registered(self, e: Table.Registered | View.Registered, at: int) -> None:
        self._placed(e, created_kind(e), at)

    def _placed(self, e: Any, typ: str, at: int) -> None:
        # wherever the tabular was placed (a registration of a dropped table in another warehouse), that ends here
        self._end_placement(e.originator_id, at)
        self.placements[e.originator_id] = _Version(
            {"warehouse_id": e.warehouse_id, "typ": typ, "namespace_id": e.namespace_id,
             "namespace": list(e.namespace), "name": e.name}, at)
        self.locations[e.originator_id] = e.location
        self.rows["ll_tabular_metadata_versions"].append((e.originator_id, at, e.metadata_location, e.location))

    def _committed(self, e: Table.Committed, at: int) -> None:
        if self._placed_now(e.originator_id):
            self._metadata(e.originator_id, at, e.metadata_location, e.location)

    def _replaced(self, e: View.Replaced, at: int) -> None:
        if self._placed_now(e.originator_id):
            self._metadata(e.originator_id, at, e.metadata_location, getattr(e, "location", None))

    def _placed_now(self, id_: UUID) -> bool:
        placement = self.placements.get(id_)
        return placement is not None and placement.open

    def _renamed(self, e: Tabular.Renamed, at: int) -> None:
        ended = self._end_placement(e.originator_id, at)
        if ended is not None:
            self.placements[e.originator_id] = _Version(
                {**ended.values, "namespace_id": e.to_namespace_id, "namespace": list(e.to_namespace),
                 "name": e.to_name}, at)

    def _tabular_moved(self, e: Tabular.Moved, at: int) -> None:
        ended = self._end_placement(e.originator_id, at)
        if ended is not None:
            self.placements[e.originator_id] = _Version({**ended.values, "namespace": list(e.to_namespace)}, at)

    def _tabular_dropped(self, e: Tabular.Dropped, at: int) -> None:
        self._end_placement(e.originator_id, at, soft=e.expires_at is not None)

    def _tabular_undropped(self, e: Tabular.Undropped, at: int) -> None:
        last = self.placements.get(e.originator_id)
        if last is not None and last.soft_dropped and not last.open:
            self.placements[e.originator_id] = _Version(
                {**last.values, "namespace_id": e.namespace_id, "namespace": list(e.namespace)}, at)


def _ignored(writer: VersionsInMemory, event: Any, at: int) -> None:
    pass


# by event class; a class not named here is looked up by its bases once (View.Created is a Tabular.Created)
_BY_CLASS = {
    Warehouse.Created: VersionsInMemory._warehouse_created,
    Namespace.Created: VersionsInMemory._namespace_created,
    Namespace.PropertiesUpdated: VersionsInMemory._namespace_properties,
    Namespace.Dropped: VersionsInMemory._namespace_dropped,
    Namespace.Undropped: VersionsInMemory._namespace_undropped,
    Namespace.Moved: VersionsInMemory._namespace_moved,
    Tabular.Created: VersionsInMemory._tabular_created,
    Table.Registered: VersionsInMemory._registered,
    View.Registered: VersionsInMemory._registered,
    Table.Committed: VersionsInMemory._committed,
    View.Replaced: VersionsInMemory._replaced,
    Tabular.Renamed: VersionsInMemory._renamed,
    Tabular.Moved: VersionsInMemory._tabular_moved,
    Tabular.Dropped: VersionsInMemory._tabular_dropped,
    Tabular.Undropped: VersionsInMemory._tabular_undropped,
}
_HANDLERS: dict[type, Any] = {}


def _handler_of(cls: type) -> Any:
    return next((_BY_CLASS[base] for base in cls.__mro__ if base in _BY_CLASS), _ignored)
