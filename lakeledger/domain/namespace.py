from datetime import datetime
from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.deletion import DeletionState
from lakeledger.domain.errors import BadRequest, NoSuchNamespace, Protected, UnprocessableEntity
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.managed_access import managed_access_changes
from lakeledger.domain.names import check_namespace, check_new_name, dotted
from lakeledger.domain.provenance import Provenance


class Namespace(CatalogAggregate):
    """A level in a warehouse's tree; it holds child namespaces, tables and views."""

    managed_access = False  # until a ManagedAccessSet

    class Created(CatalogAggregate.Created):
        warehouse_id: UUID
        parent_id: UUID | None
        path: list[str]
        properties: dict[str, str]

    class PropertiesUpdated(CatalogAggregate.Event):
        updated: dict[str, str]
        removed: list[str]

    class Dropped(CatalogAggregate.Event):
        """Version 2 added soft and recursive drops. A recursive drop lists, on the namespace it was asked of,
        every namespace and table or view it took along (each of those records its own drop too), so an
        undrop of that namespace restores exactly them. Version 1 drops were final and never recursive."""

        class_version = 2

        path: list[str]
        expires_at: datetime | None
        with_namespace: UUID | None
        # {"namespaces": [ids], "tabulars": [ids]} on the namespace a recursive drop named
        contents: dict[str, list[str]] | None

        @staticmethod
        def upcast_v1_v2(state: JsonObject) -> None:
            state["expires_at"] = None
            state["with_namespace"] = None
            state["contents"] = None

    class Undropped(CatalogAggregate.Event):
        warehouse_id: UUID
        parent_id: UUID | None
        path: list[str]

    class Expired(CatalogAggregate.Event):
        path: list[str]

    class ProtectionSet(CatalogAggregate.Event):
        protected: bool

    class ManagedAccessSet(CatalogAggregate.Event):
        """Managed access on (or off) for everything below the namespace (as Warehouse.ManagedAccessSet)."""

        managed_access: bool

    class Moved(CatalogAggregate.Event):
        """The namespace is at another place in its warehouse's tree: under another parent, under another name, or
        both. One move appends one of these to the namespace asked for (``with_namespace`` None, its parent and
        name change) and to every namespace below it, live or soft-dropped (``with_namespace`` the one asked for:
        only the path changes), so each knows its path without reading another's events."""

        warehouse_id: UUID
        from_parent_id: UUID | None
        from_path: list[str]
        to_parent_id: UUID | None
        to_path: list[str]
        with_namespace: UUID | None

    @event(Created)
    def __init__(self, id: UUID, warehouse_id: UUID, parent_id: UUID | None, path: list[str],
                 properties: dict[str, str], actor: str, request_id: str):
        self.warehouse_id = warehouse_id
        self.parent_id = parent_id
        self.path = list(path)
        self.properties = dict(properties)
        self.deletion = DeletionState()
        self.contents: dict[str, list[str]] | None = None

    @property
    def dropped(self) -> bool:
        return self.deletion.dropped

    @property
    def protected(self) -> bool:
        return self.deletion.protected

    @classmethod
    def create(cls, id: UUID, warehouse_id: UUID, parent_id: UUID | None, path: tuple[str, ...],
               properties: dict[str, str], by: Provenance) -> "Namespace":
        check_namespace(path)
        check_new_name(path[-1], "Namespace")  # the levels above exist already, under their names of the time
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
                          by: Provenance) -> tuple[list[str], list[str], list[str]]:
        """Returns (updated, removed, missing) keys, as the Iceberg REST response reports them."""
        self.ensure_live()
        _check_properties(updates)
        if not all(isinstance(k, str) for k in removals):
            raise BadRequest("Property removals must be strings")
        both = set(updates) & set(removals)
        if both:
            # the REST spec's 422, as Iceberg's reference server answers
            raise UnprocessableEntity(f"Invalid namespace update, cannot simultaneously set and remove keys: "
                                      f"{sorted(both)}")
        removed = [k for k in removals if k in self.properties]
        missing = [k for k in removals if k not in self.properties]
        if updates or removed:
            self._properties_updated(updated=dict(updates), removed=removed, actor=by.actor, request_id=by.request_id)
        return list(updates), removed, missing

    def drop(self, expires_at: datetime | None, force: bool, by: Provenance, with_namespace: UUID | None = None,
             contents: dict[str, list[UUID]] | None = None) -> None:
        self.ensure_live()
        self.deletion.check_droppable("namespace", dotted(self.path), force)
        self._dropped(path=self.path, expires_at=expires_at, with_namespace=with_namespace,
                      contents=_ids_as_text(contents), actor=by.actor, request_id=by.request_id)

    def undrop(self, now: datetime, by: Provenance) -> None:
        self.deletion.check_restorable("namespace", f"{dotted(self.path)} ({self.id})", now)
        self._undropped(warehouse_id=self.warehouse_id, parent_id=self.parent_id, path=self.path,
                        actor=by.actor, request_id=by.request_id)

    def expire(self, now: datetime, by: Provenance) -> bool:
        if not self.deletion.is_due(now):
            return False
        self._expired(path=self.path, actor=by.actor, request_id=by.request_id)
        return True

    def set_protection(self, protected: bool, by: Provenance) -> None:
        self.ensure_live()
        if self.deletion.protection_changes(protected):
            self._protection_set(protected=protected, actor=by.actor, request_id=by.request_id)

    def move(self, to_parent_id: UUID | None, to_path: tuple[str, ...], by: Provenance, force: bool = False,
             with_namespace: UUID | None = None) -> None:
        """To ``to_path`` under ``to_parent_id``: the namespace a move names (a live one; a protected one only with
        ``force``, as its drop), or one below it (``with_namespace``), which keeps its parent and may be
        soft-dropped."""
        if with_namespace is None:
            self.ensure_live()
            check_new_name(to_path[-1], "Namespace")
            if self.protected and not force:
                raise Protected("namespace", f"Namespace {dotted(self.path)} is protected; move it with force=true "
                                             f"or remove the protection first")
        self._moved(warehouse_id=self.warehouse_id, from_parent_id=self.parent_id, from_path=self.path,
                    to_parent_id=to_parent_id, to_path=list(to_path), with_namespace=with_namespace,
                    actor=by.actor, request_id=by.request_id)

    @event(Moved)
    def _moved(self, warehouse_id: UUID, from_parent_id: UUID | None, from_path: list[str], to_parent_id: UUID | None,
               to_path: list[str], with_namespace: UUID | None, actor: str, request_id: str) -> None:
        self.parent_id = to_parent_id
        self.path = list(to_path)

    @event(PropertiesUpdated)
    def _properties_updated(self, updated: dict[str, str], removed: list[str], actor: str, request_id: str) -> None:
        self.properties.update(updated)
        for key in removed:
            self.properties.pop(key, None)

    @event(Dropped)
    def _dropped(self, path: list[str], expires_at: datetime | None, with_namespace: UUID | None,
                 contents: dict[str, list[str]] | None, actor: str, request_id: str) -> None:
        self.deletion.drop(expires_at, with_namespace)
        self.contents = contents

    @event(Undropped)
    def _undropped(self, warehouse_id: UUID, parent_id: UUID | None, path: list[str], actor: str,
                   request_id: str) -> None:
        self.deletion.restore()
        self.contents = None

    @event(Expired)
    def _expired(self, path: list[str], actor: str, request_id: str) -> None:
        self.deletion.expire()

    @event(ProtectionSet)
    def _protection_set(self, protected: bool, actor: str, request_id: str) -> None:
        self.deletion.protected = protected

    def set_managed_access(self, managed_access: bool, by: Provenance) -> None:
        if managed_access_changes(self.managed_access, managed_access):
            self._managed_access_set(managed_access=managed_access, actor=by.actor, request_id=by.request_id)

    @event(ManagedAccessSet)
    def _managed_access_set(self, managed_access: bool, actor: str, request_id: str) -> None:
        self.managed_access = managed_access


def _ids_as_text(contents: dict[str, list[UUID]] | None) -> dict[str, list[str]] | None:
    if contents is None:
        return None
    return {kind: [str(i) for i in ids] for kind, ids in contents.items()}


def _check_properties(properties: object) -> None:
    if not isinstance(properties, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in properties.items()
    ):
        raise BadRequest("Namespace properties must map strings to strings")
    # the NUL character cannot be stored as text by Postgres (nor typed by anyone)
    if any("\x00" in k or "\x00" in v for k, v in properties.items()):
        raise BadRequest("Namespace properties must not contain the NUL character")
