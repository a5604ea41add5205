"""What tables and views have in common: a name in a namespace (one name space for both), a
location, a pointer to the current metadata file, and the rename and drop events."""

from uuid import UUID

from eventsourcing.domain import event

from .base import CatalogAggregate
from .errors import NotFound
from .names import dotted
from .provenance import Provenance

TABLE = "table"
VIEW = "view"


class Tabular(CatalogAggregate):
    kind = "tabular"
    not_found = NotFound  # unannotated: eventsourcing would take an annotation for an event field

    class Created(CatalogAggregate.Created):
        warehouse_id: UUID
        namespace_id: UUID
        namespace: list
        name: str
        location: str
        metadata_location: str

    class Renamed(CatalogAggregate.Event):
        typ: str
        from_namespace_id: UUID
        from_namespace: list
        from_name: str
        to_namespace_id: UUID
        to_namespace: list
        to_name: str

    class Dropped(CatalogAggregate.Event):
        """Designed for soft deletion: the drop records what undrop and purge need to know."""

        typ: str
        warehouse_id: UUID
        namespace_id: UUID
        namespace: list
        name: str
        location: str
        metadata_location: str
        purge_requested: bool

    def _init_tabular(self, warehouse_id: UUID, namespace_id: UUID, namespace: list, name: str, location: str,
                      metadata_location: str) -> None:
        self.warehouse_id = warehouse_id
        self.namespace_id = namespace_id
        self.namespace = list(namespace)
        self.name = name
        self.location = location
        self.metadata_location = metadata_location
        self.dropped = False
        self.purge_requested = False

    @property
    def identifier(self) -> str:
        return dotted([*self.namespace, self.name])

    def ensure_live(self) -> None:
        if self.dropped:
            raise self.not_found(f"{self.kind.capitalize()} does not exist: {self.identifier}")

    def rename(self, to_namespace_id: UUID, to_namespace: tuple[str, ...], to_name: str, by: Provenance) -> None:
        self.ensure_live()
        self._renamed(typ=self.kind, from_namespace_id=self.namespace_id, from_namespace=self.namespace,
                      from_name=self.name,
                      to_namespace_id=to_namespace_id, to_namespace=list(to_namespace), to_name=to_name,
                      actor=by.actor, request_id=by.request_id)

    def drop(self, purge_requested: bool, by: Provenance) -> None:
        self.ensure_live()
        self._dropped(typ=self.kind, warehouse_id=self.warehouse_id, namespace_id=self.namespace_id,
                      namespace=self.namespace,
                      name=self.name, location=self.location, metadata_location=self.metadata_location,
                      purge_requested=purge_requested, actor=by.actor, request_id=by.request_id)

    @event(Renamed)
    def _renamed(self, typ: str, from_namespace_id: UUID, from_namespace: list, from_name: str, to_namespace_id: UUID,
                 to_namespace: list, to_name: str, actor: str, request_id: str) -> None:
        self.namespace_id = to_namespace_id
        self.namespace = list(to_namespace)
        self.name = to_name

    @event(Dropped)
    def _dropped(self, typ: str, warehouse_id: UUID, namespace_id: UUID, namespace: list, name: str, location: str,
                 metadata_location: str, purge_requested: bool, actor: str, request_id: str) -> None:
        self.dropped = True
        self.purge_requested = purge_requested
