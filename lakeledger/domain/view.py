from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.errors import NoSuchView
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import VIEW, Tabular


class View(Tabular):
    """An Iceberg view: shares its namespace's name space with tables; each replace records the view
    requirements and updates as received and the resulting metadata location."""

    kind = VIEW
    word = "View"
    not_found = NoSuchView

    class Created(Tabular.Created):
        request: JsonObject

    class Registered(Tabular.Event):
        """A dropped view brought back by registering one of its metadata files (as Table.Registered)."""

        warehouse_id: UUID
        namespace_id: UUID
        namespace: list[str]
        name: str
        location: str
        metadata_location: str
        request: JsonObject

    class Replaced(Tabular.Event):
        """v2 added ``location`` (a set-location update moves the view). v1 events were recorded when a
        replace could not move a view: they are read with ``location`` None, meaning unchanged."""

        class_version = 2

        requirements: list[JsonObject]
        updates: list[JsonObject]
        previous_metadata_location: str
        metadata_location: str
        location: str | None

        @staticmethod
        def upcast_v1_v2(state: JsonObject) -> None:
            state["location"] = None

    @event(Created)
    def __init__(self, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str,
                 location: str, metadata_location: str, request: JsonObject, actor: str, request_id: str):
        self._init_tabular(warehouse_id, namespace_id, namespace, name, location, metadata_location)

    @classmethod
    def create(cls, id: UUID, warehouse_id: UUID, namespace_id: UUID, namespace: tuple[str, ...], name: str,
               location: str, metadata_location: str, request: JsonObject, by: Provenance) -> "View":
        return cls(id=id, warehouse_id=warehouse_id, namespace_id=namespace_id, namespace=list(namespace),
                   name=name, location=location, metadata_location=metadata_location, request=request,
                   actor=by.actor, request_id=by.request_id)

    def replace(self, requirements: list[JsonObject], updates: list[JsonObject], metadata_location: str, by: Provenance,
                location: str | None = None) -> None:
        self.ensure_live()
        self._replaced(requirements=requirements, updates=updates, previous_metadata_location=self.metadata_location,
                       metadata_location=metadata_location, location=location or self.location, actor=by.actor,
                       request_id=by.request_id)

    @event(Replaced)
    def _replaced(self, requirements: list[JsonObject], updates: list[JsonObject], previous_metadata_location: str,
                  metadata_location: str, location: str, actor: str, request_id: str) -> None:
        self.metadata_location = metadata_location
        if location is not None:
            self.location = location

    def register_again(self, warehouse_id: UUID, namespace_id: UUID, namespace: tuple[str, ...], name: str,
                       location: str, metadata_location: str, request: JsonObject, by: Provenance) -> None:
        self.ensure_registrable()
        self._registered(warehouse_id=warehouse_id, namespace_id=namespace_id, namespace=list(namespace), name=name,
                         location=location, metadata_location=metadata_location, request=request,
                         actor=by.actor, request_id=by.request_id)

    @event(Registered)
    def _registered(self, warehouse_id: UUID, namespace_id: UUID, namespace: list[str], name: str, location: str,
                    metadata_location: str, request: JsonObject, actor: str, request_id: str) -> None:
        self._init_tabular(warehouse_id, namespace_id, namespace, name, location, metadata_location)
