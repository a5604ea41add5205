from uuid import UUID

from eventsourcing.domain import event

from .base import CatalogAggregate
from .errors import BadRequest, NoSuchNamespace
from .names import check_namespace, dotted
from .provenance import Provenance


class Namespace(CatalogAggregate):
    """A level in a warehouse's tree; it holds child namespaces, tables and views."""

    class Created(CatalogAggregate.Created):
        warehouse_id: UUID
        parent_id: UUID | None
        path: list
        properties: dict

    class PropertiesUpdated(CatalogAggregate.Event):
        updated: dict
        removed: list

    class Dropped(CatalogAggregate.Event):
        path: list

    @event(Created)
    def __init__(self, id: UUID, warehouse_id: UUID, parent_id: UUID | None, path: list, properties: dict,
                 actor: str, request_id: str):
        self.warehouse_id = warehouse_id
        self.parent_id = parent_id
        self.path = list(path)
        self.properties = dict(properties)
        self.dropped = False

    @classmethod
    def create(cls, id: UUID, warehouse_id: UUID, parent_id: UUID | None, path: tuple[str, ...],
               properties: dict[str, str], by: Provenance) -> "Namespace":
        check_namespace(path)
        _check_properties(properties)
        return cls(id=id, warehouse_id=warehouse_id, parent_id=parent_id, path=list(path),
                   properties=dict(properties), actor=by.actor, request_id=by.request_id)

    @property
    def name(self) -> str:
        return self.path[-1]

    def ensure_live(self) -> None:
        if self.dropped:
            raise NoSuchNamespace(f"Namespace does not exist: {dotted(self.path)}")

    def update_properties(self, updates: dict[str, str], removals: list[str],
                          by: Provenance) -> tuple[list, list, list]:
        """Returns (updated, removed, missing) keys, as the Iceberg REST response reports them."""
        self.ensure_live()
        _check_properties(updates)
        if not all(isinstance(k, str) for k in removals):
            raise BadRequest("Property removals must be strings")
        both = set(updates) & set(removals)
        if both:
            raise BadRequest(f"Properties cannot be both updated and removed: {sorted(both)}")
        removed = [k for k in removals if k in self.properties]
        missing = [k for k in removals if k not in self.properties]
        if updates or removed:
            self._properties_updated(updated=dict(updates), removed=removed, actor=by.actor, request_id=by.request_id)
        return list(updates), removed, missing

    def drop(self, by: Provenance) -> None:
        self.ensure_live()
        self._dropped(path=self.path, actor=by.actor, request_id=by.request_id)

    @event(PropertiesUpdated)
    def _properties_updated(self, updated: dict, removed: list, actor: str, request_id: str) -> None:
        self.properties.update(updated)
        for key in removed:
            self.properties.pop(key, None)

    @event(Dropped)
    def _dropped(self, path: list, actor: str, request_id: str) -> None:
        self.dropped = True


def _check_properties(properties: object) -> None:
    if not isinstance(properties, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in properties.items()
    ):
        raise BadRequest("Namespace properties must map strings to strings")
    # the NUL character cannot be stored as text by Postgres (nor typed by anyone)
    if any("\x00" in k or "\x00" in v for k, v in properties.items()):
        raise BadRequest("Namespace properties must not contain the NUL character")
