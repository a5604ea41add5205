from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import NoSuchProject
from lakeledger.domain.names import check_composed_name
from lakeledger.domain.provenance import Provenance

DEFAULT_PROJECT_ID = UUID(int=0)
DEFAULT_PROJECT_NAME = "Default Project"


class Project(CatalogAggregate):
    """A tenant: it holds warehouses."""

    class Created(CatalogAggregate.Created):
        name: str

    class Renamed(CatalogAggregate.Event):
        old_name: str
        new_name: str

    class Deleted(CatalogAggregate.Event):
        name: str

    deleted = False  # a class default: aggregates replayed from logs written before deletion existed

    @event(Created)
    def __init__(self, id: UUID, name: str, actor: str, request_id: str):
        self.name = name

    @classmethod
    def create(cls, id: UUID, name: str, by: Provenance) -> "Project":
        return cls(id=id, name=check_composed_name(name, "Project"), actor=by.actor, request_id=by.request_id)

    def rename(self, new_name: str, by: Provenance) -> None:
        self.ensure_live()
        check_composed_name(new_name, "Project")
        if new_name != self.name:
            self._renamed(old_name=self.name, new_name=new_name, actor=by.actor, request_id=by.request_id)

    @event(Renamed)
    def _renamed(self, old_name: str, new_name: str, actor: str, request_id: str) -> None:
        self.name = new_name

    def ensure_live(self) -> None:
        if self.deleted:
            raise NoSuchProject(f"Project does not exist: {self.id}")

    def delete(self, by: Provenance) -> None:
        """Only an empty project goes (the service holds the append to that): its warehouses would be left without
        one. Its id stays taken, as the log still holds it."""
        self.ensure_live()
        self._deleted(name=self.name, actor=by.actor, request_id=by.request_id)

    @event(Deleted)
    def _deleted(self, name: str, actor: str, request_id: str) -> None:
        self.deleted = True
