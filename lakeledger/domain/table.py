from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.errors import NoSuchTable
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import TABLE, Tabular

CREATED_BY_REQUEST = "create"
CREATED_BY_COMMIT = "commit"  # a staged create (assert-create) committed through updateTable or a transaction
CREATED_BY_REGISTRATION = "register"


class Table(Tabular):
    """An Iceberg table as the catalog knows it: a name in a namespace and a pointer to its current
    metadata file. Its id is the table's Iceberg uuid. The metadata itself lives in the file; the
    events record every change as the client sent it, plus where the resulting metadata went."""

    kind = TABLE
    word = "Table"
    not_found = NoSuchTable

    class Created(Tabular.Created):
        origin: str
        request: JsonObject

    class Committed(Tabular.Event):
        requirements: list[JsonObject]
        updates: list[JsonObject]
        previous_metadata_location: str
        metadata_location: str
        location: str

    class Registered(Tabular.Event):
        """A dropped table brought back by registering one of its metadata files."""

        warehouse_id: UUID
        namespace_id: UUID
        namespace: list[str]
        name: str
        location: str
        metadata_location: str
        request: JsonObject

    class Unregistered(Tabular.Dropped):
        """Taken out of the catalog with every file left in place (unregisterTable), so that another catalog can
        register it: a final drop that never purges, whatever the warehouse's delete profile. It carries a drop's
        fields, and every projection applies it as that drop (they dispatch on the class's bases); only its type
        (``table.unregistered``) tells it apart. It is new at the drop's class version 2, so the drop's upcast
        never applies to it."""

        def apply(self, aggregate: "Table") -> None:
            # the drop's own apply calls the method decorated for exactly its class, which this is not
            aggregate.deletion.drop(None, None)
            aggregate.purge_requested = False

    @event(Created)
    def __init__(self, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str,
                 location: str, metadata_location: str, origin: str, request: JsonObject,
                 actor: str, request_id: str):
        self._init_tabular(warehouse_id, namespace_id, namespace, name, location, metadata_location)

    @classmethod
    def create(cls, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: tuple[str, ...], name: str,
               location: str, metadata_location: str, origin: str, request: JsonObject, by: Provenance) -> "Table":
        return cls(id=id, warehouse_id=warehouse_id, namespace_id=namespace_id, namespace=list(namespace),
                   name=name, location=location, metadata_location=metadata_location, origin=origin,
                   request=request, actor=by.actor, request_id=by.request_id)

    def commit(self, requirements: list[JsonObject], updates: list[JsonObject], metadata_location: str, location: str,
               by: Provenance) -> None:
        self.ensure_live()
        self._committed(requirements=requirements, updates=updates,
                        previous_metadata_location=self.metadata_location, metadata_location=metadata_location,
                        location=location, actor=by.actor, request_id=by.request_id)

    @event(Committed)
    def _committed(self, requirements: list[JsonObject], updates: list[JsonObject], previous_metadata_location: str,
                   metadata_location: str, location: str, actor: str, request_id: str) -> None:
        self.metadata_location = metadata_location
        self.location = location

    def register_again(self, warehouse_id: UUID, namespace_id: UUID, namespace: tuple[str, ...], name: str,
                       location: str, metadata_location: str, request: JsonObject, by: Provenance) -> None:
        self.ensure_registrable()
        self._registered(warehouse_id=warehouse_id, namespace_id=namespace_id, namespace=list(namespace), name=name,
                         location=location, metadata_location=metadata_location, request=request,
                         actor=by.actor, request_id=by.request_id)

    def unregister(self, by: Provenance) -> None:
        """A protected table is refused as its drop would be: the catalog would lose it just the same."""
        self.ensure_live()
        self.deletion.check_droppable(self.kind, self.identifier, force=False)
        self.trigger_event(self.Unregistered, typ=self.kind, warehouse_id=self.warehouse_id,
                           namespace_id=self.namespace_id, namespace=self.namespace, name=self.name,
                           location=self.location, metadata_location=self.metadata_location, purge_requested=False,
                           expires_at=None, with_namespace=None, actor=by.actor, request_id=by.request_id)

    @event(Registered)
    def _registered(self, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str, location: str,
                    metadata_location: str, request: JsonObject, actor: str, request_id: str) -> None:
        self._init_tabular(warehouse_id, namespace_id, namespace, name, location, metadata_location)
