"""Uniqueness of names, decided in the event store.

A name inside a container (warehouse names in a project, namespace names in a parent, table and
view names in a namespace) is held by at most one entity. Each such name is a tiny aggregate whose
id is derived from the container and the name, so two clients creating the same name at once
append to the same aggregate at the same version and exactly one of them wins; creators of
different names never contend.
"""

from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import AlreadyExists
from lakeledger.domain.names import claim_id
from lakeledger.domain.provenance import Provenance

WAREHOUSE = "warehouse"
NAMESPACE = "namespace"
TABULAR = "tabular"  # tables and views share one name space per namespace


class NameClaim(CatalogAggregate):
    class Created(CatalogAggregate.Created):
        scope: str
        container_id: UUID
        name: str
        holder_id: UUID

    class Claimed(CatalogAggregate.Event):
        holder_id: UUID

    class Released(CatalogAggregate.Event):
        holder_id: UUID

    @event(Created)
    def __init__(self, id: UUID, scope: str, container_id: UUID, name: str, holder_id: UUID,
                 actor: str, request_id: str):
        self.scope = scope
        self.container_id = container_id
        self.name = name
        self.holder_id: UUID | None = holder_id

    @classmethod
    def first(cls, scope: str, container_id: UUID, name: str, holder_id: UUID, by: Provenance,
              key: str | None = None) -> "NameClaim":
        """``key``: what the claim's id derives from (lakeledger/domain/names.py ``name_key``), the name itself when
        None; the claim records the name as spelt."""
        return cls(id=claim_id(scope, container_id, name if key is None else key), scope=scope,
                   container_id=container_id, name=name, holder_id=holder_id, actor=by.actor, request_id=by.request_id)

    @property
    def is_held(self) -> bool:
        return self.holder_id is not None

    def claim(self, holder_id: UUID, what: str, by: Provenance, shown_as: str | None = None) -> None:
        """``shown_as`` names the claimed thing in a refusal (a table's dotted identifier); the claim itself
        knows only the last part of it."""
        if self.holder_id is not None and self.holder_id != holder_id:
            raise AlreadyExists(f"{what} already exists: {shown_as or self.name}")
        if self.holder_id is None:
            self._claimed(holder_id=holder_id, actor=by.actor, request_id=by.request_id)

    def release(self, holder_id: UUID, by: Provenance) -> None:
        if self.holder_id == holder_id:
            self._released(holder_id=holder_id, actor=by.actor, request_id=by.request_id)

    @event(Claimed)
    def _claimed(self, holder_id: UUID, actor: str, request_id: str) -> None:
        self.holder_id = holder_id

    @event(Released)
    def _released(self, holder_id: UUID, actor: str, request_id: str) -> None:
        self.holder_id = None
