"""One warehouse's catalog as it was at a log position: a pure fold of the catalog events, in memory.

The read model (lakeledger/projections/catalog.py) only knows the present; time travel needs any past prefix of the
log, so this fold reads the same events into plain dictionaries instead of SQL rows. It is pure: no
clock, no storage, nothing but the events, so folding the same prefix always gives the same state."""

import copy
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.tabular_kinds import created_kind
from lakeledger.domain.view import View
from lakeledger.domain.warehouse import Warehouse

# Exactly the events that shape a warehouse's tree; the log is read filtered on these topics. Renames
# and drops are recorded under Tabular's own classes (the methods that make them live there); the
# subclasses' names are listed too, so an event recorded under either is read.
EVENT_CLASSES = (
    Tabular.Renamed, Tabular.Moved, Tabular.Dropped, Tabular.Undropped,
    Warehouse.Created,
    Namespace.Created, Namespace.PropertiesUpdated, Namespace.Moved, Namespace.Dropped, Namespace.Undropped,
    Table.Created, Table.Registered, Table.Committed, Table.Renamed, Table.Moved, Table.Dropped, Table.Undropped,
    Table.Unregistered,
    View.Created, View.Registered, View.Replaced, View.Renamed, View.Moved, View.Dropped, View.Undropped,
    GenericTable.Created, GenericTable.Renamed, GenericTable.Moved, GenericTable.Dropped, GenericTable.Undropped,
)
TOPICS = tuple(get_topic(cls) for cls in EVENT_CLASSES)


@dataclass
class PastNamespace:
    id: UUID
    path: tuple[str, ...]
    parent_id: UUID | None
    properties: dict


@dataclass
class PastTabular:
    id: UUID
    typ: str
    namespace_id: UUID
    namespace: tuple[str, ...]
    name: str
    metadata_location: str
    location: str


@dataclass
class WarehouseAsOf:
    warehouse_id: UUID
    position: int = 0  # the last log position folded in
    exists: bool = False  # created at or before ``position``
    namespaces: dict[UUID, PastNamespace] = field(default_factory=dict)
    tabulars: dict[UUID, PastTabular] = field(default_factory=dict)  # live ones only
    # dropped ones, kept for an undrop to bring back (an expiry needs no event here: gone is gone)
    dropped_namespaces: dict[UUID, PastNamespace] = field(default_factory=dict)
    dropped_tabulars: dict[UUID, PastTabular] = field(default_factory=dict)

    def copy(self) -> "WarehouseAsOf":
        return copy.deepcopy(self)

    def apply(self, position: int, e: Any) -> None:
        """Folds one event in; events of other warehouses change nothing."""
        self.position = position
        if isinstance(e, Warehouse.Created):
            if e.originator_id == self.warehouse_id:
                self.exists = True
        elif isinstance(e, Namespace.Created):
            if e.warehouse_id == self.warehouse_id:
                self.namespaces[e.originator_id] = PastNamespace(e.originator_id, tuple(e.path), e.parent_id,
                                                                 dict(e.properties))
        elif isinstance(e, Namespace.PropertiesUpdated):
            ns = self.namespaces.get(e.originator_id)
            if ns is not None:
                ns.properties = {k: v for k, v in ns.properties.items() if k not in set(e.removed)}
                ns.properties.update(e.updated)
        elif isinstance(e, Namespace.Dropped):
            ns = self.namespaces.pop(e.originator_id, None)
            if ns is not None and e.expires_at is not None:
                self.dropped_namespaces[e.originator_id] = ns
        elif isinstance(e, Namespace.Undropped):
            ns = self.dropped_namespaces.pop(e.originator_id, None)
            if ns is not None:
                ns.path, ns.parent_id = tuple(e.path), e.parent_id  # where it comes back (moved while dropped)
                self.namespaces[e.originator_id] = ns
        elif isinstance(e, Namespace.Moved):
            ns = self.namespaces.get(e.originator_id) or self.dropped_namespaces.get(e.originator_id)
            if ns is not None:
                ns.path, ns.parent_id = tuple(e.to_path), e.to_parent_id
        elif isinstance(e, (Tabular.Created, Table.Registered, View.Registered)):
            # A registration can bring a dropped table back in another warehouse: it is then not ours, and no
            # longer ours to undrop either (an undrop then restores it where it was registered).
            self.tabulars.pop(e.originator_id, None)
            self.dropped_tabulars.pop(e.originator_id, None)
            if e.warehouse_id == self.warehouse_id:
                typ = created_kind(e)
                self.tabulars[e.originator_id] = PastTabular(e.originator_id, typ, e.namespace_id,
                                                             tuple(e.namespace), e.name, e.metadata_location,
                                                             e.location)
        elif isinstance(e, (Table.Committed, View.Replaced)):
            t = self.tabulars.get(e.originator_id)
            if t is not None:
                t.metadata_location = e.metadata_location
                # a view replaced before views could move has no location (None): it stays where it was
                t.location = getattr(e, "location", None) or t.location
        elif isinstance(e, Tabular.Renamed):
            t = self.tabulars.get(e.originator_id)
            if t is not None:
                t.namespace_id, t.namespace, t.name = e.to_namespace_id, tuple(e.to_namespace), e.to_name
        elif isinstance(e, Tabular.Moved):
            t = self.tabulars.get(e.originator_id) or self.dropped_tabulars.get(e.originator_id)
            if t is not None:
                t.namespace = tuple(e.to_namespace)
        elif isinstance(e, Tabular.Dropped):
            t = self.tabulars.pop(e.originator_id, None)
            if t is not None and e.expires_at is not None:
                self.dropped_tabulars[e.originator_id] = t
        elif isinstance(e, Tabular.Undropped):
            t = self.dropped_tabulars.pop(e.originator_id, None)
            if t is not None:
                t.namespace_id, t.namespace = e.namespace_id, tuple(e.namespace)
                self.tabulars[e.originator_id] = t

    # Questions, in the shapes the live read model answers them (lakeledger/projections/catalog_queries.py).

    def namespace(self, path: list[str]) -> dict | None:
        for ns in self.namespaces.values():
            if ns.path == tuple(path):
                return {"id": ns.id, "path": list(ns.path), "properties": dict(ns.properties)}
        return None

    def child_namespaces(self, parent: list[str] | None, after: list[str] | None, limit: int | None) -> list[list]:
        depth = len(parent) if parent else 0
        paths = sorted(ns.path for ns in self.namespaces.values()
                       if len(ns.path) == depth + 1 and list(ns.path[:depth]) == list(parent or [])
                       and (after is None or ns.path > tuple(after)))
        return [list(p) for p in paths[:limit]]

    def tabular(self, typ: str, namespace: list[str], name: str) -> tuple | None:
        for t in self.tabulars.values():
            if t.typ == typ and t.name == name and t.namespace == tuple(namespace):
                return t.id, t.metadata_location, t.location
        return None

    def tabular_names(self, namespace_id: UUID, typ: str, after: str | None, limit: int | None) -> list[str]:
        names = sorted(t.name for t in self.tabulars.values()
                       if t.namespace_id == namespace_id and t.typ == typ and (after is None or t.name > after))
        return names[:limit]
