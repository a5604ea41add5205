"""Read-only maintenance mode (Lakekeeper 0.12.3's), as recorded switches: one aggregate per server, made by its
first switch, so that it can be switched before the server is bootstrapped."""

from uuid import UUID, uuid5

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.provenance import Provenance

_NAMESPACE = UUID("5f0c7c1e-52f4-4f0e-9a57-6d1f3c0b7e21")


def maintenance_aggregate_id(server_id: UUID) -> UUID:
    return uuid5(_NAMESPACE, f"maintenance\x1f{server_id}")


class MaintenanceMode(CatalogAggregate):
    """``read_only``: the API refuses every write with a 503 and Retry-After until a later switch turns it off."""

    class Started(CatalogAggregate.Created):
        server_id: UUID
        read_only: bool

    class Switched(CatalogAggregate.Event):
        read_only: bool

    @event(Started)
    def __init__(self, id: UUID, server_id: UUID, read_only: bool, actor: str, request_id: str):
        self.server_id = server_id
        self.read_only = read_only

    @classmethod
    def start(cls, server_id: UUID, read_only: bool, by: Provenance) -> "MaintenanceMode":
        return cls(id=maintenance_aggregate_id(server_id), server_id=server_id, read_only=read_only, actor=by.actor,
                   request_id=by.request_id)

    def switch(self, read_only: bool, by: Provenance) -> None:
        if read_only != self.read_only:
            self._switched(read_only=read_only, actor=by.actor, request_id=by.request_id)

    @event(Switched)
    def _switched(self, read_only: bool, actor: str, request_id: str) -> None:
        self.read_only = read_only
