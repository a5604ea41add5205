from uuid import UUID

from eventsourcing.domain import event

from .base import CatalogAggregate
from .errors import NoSuchTable
from .names import dotted
from .provenance import Provenance

CREATED_BY_REQUEST = "create"
CREATED_BY_COMMIT = "commit"  # a staged create (assert-create) committed through updateTable or a transaction
CREATED_BY_REGISTRATION = "register"


class Table(CatalogAggregate):
    """An Iceberg table as the catalog knows it: a name in a namespace and a pointer to its current
    metadata file. Its id is the table's Iceberg uuid. The metadata itself lives in the file; the
    events record every change as the client sent it, plus where the resulting metadata went."""

    class Created(CatalogAggregate.Created):
        warehouse_id: UUID
        namespace_id: UUID
        namespace: list
        name: str
        location: str
        metadata_location: str
        origin: str
        request: dict

    class Committed(CatalogAggregate.Event):
        requirements: list
        updates: list
        previous_metadata_location: str
        metadata_location: str
        location: str

    class Renamed(CatalogAggregate.Event):
        from_namespace_id: UUID
        from_namespace: list
        from_name: str
        to_namespace_id: UUID
        to_namespace: list
        to_name: str

    class Dropped(CatalogAggregate.Event):
        """Designed for soft deletion: the drop records what undrop and purge need to know."""

        warehouse_id: UUID
        namespace_id: UUID
        namespace: list
        name: str
        location: str
        metadata_location: str
        purge_requested: bool

    @event(Created)
    def __init__(self, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: list, name: str,
                 location: str, metadata_location: str, origin: str, request: dict,
                 actor: str, request_id: str):
        self.warehouse_id = warehouse_id
        self.namespace_id = namespace_id
        self.namespace = list(namespace)
        self.name = name
        self.location = location
        self.metadata_location = metadata_location
        self.dropped = False

    @classmethod
    def create(cls, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: tuple[str, ...], name: str,
               location: str, metadata_location: str, origin: str, request: dict, by: Provenance) -> "Table":
        return cls(id=id, warehouse_id=warehouse_id, namespace_id=namespace_id, namespace=list(namespace),
                   name=name, location=location, metadata_location=metadata_location, origin=origin,
                   request=request, actor=by.actor, request_id=by.request_id)

    @property
    def identifier(self) -> str:
        return dotted([*self.namespace, self.name])

    def ensure_live(self) -> None:
        if self.dropped:
            raise NoSuchTable(f"Table does not exist: {self.identifier}")

    def commit(self, requirements: list, updates: list, metadata_location: str, location: str,
               by: Provenance) -> None:
        self.ensure_live()
        self._committed(requirements=requirements, updates=updates,
                        previous_metadata_location=self.metadata_location, metadata_location=metadata_location,
                        location=location, actor=by.actor, request_id=by.request_id)

    def rename(self, to_namespace_id: UUID, to_namespace: tuple[str, ...], to_name: str, by: Provenance) -> None:
        self.ensure_live()
        self._renamed(from_namespace_id=self.namespace_id, from_namespace=self.namespace, from_name=self.name,
                      to_namespace_id=to_namespace_id, to_namespace=list(to_namespace), to_name=to_name,
                      actor=by.actor, request_id=by.request_id)

    def drop(self, purge_requested: bool, by: Provenance) -> None:
        self.ensure_live()
        self._dropped(warehouse_id=self.warehouse_id, namespace_id=self.namespace_id, namespace=self.namespace, name=self.name,
                      location=self.location, metadata_location=self.metadata_location,
                      purge_requested=purge_requested, actor=by.actor, request_id=by.request_id)

    @event(Committed)
    def _committed(self, requirements: list, updates: list, previous_metadata_location: str,
                   metadata_location: str, location: str, actor: str, request_id: str) -> None:
        self.metadata_location = metadata_location
        self.location = location

    @event(Renamed)
    def _renamed(self, from_namespace_id: UUID, from_namespace: list, from_name: str, to_namespace_id: UUID,
                 to_namespace: list, to_name: str, actor: str, request_id: str) -> None:
        self.namespace_id = to_namespace_id
        self.namespace = list(to_namespace)
        self.name = to_name

    @event(Dropped)
    def _dropped(self, warehouse_id: UUID, namespace_id: UUID, namespace: list, name: str, location: str, metadata_location: str,
                 purge_requested: bool, actor: str, request_id: str) -> None:
        self.dropped = True
