from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import AlreadyBootstrapped, BadRequest
from lakeledger.domain.provenance import Provenance


class Server(CatalogAggregate):
    """The installation itself; bootstrapping it is a recorded act, done once."""

    class Bootstrapped(CatalogAggregate.Created):
        server_id: UUID
        is_operator: bool

    @event(Bootstrapped)
    def __init__(self, id: UUID, server_id: UUID, is_operator: bool, actor: str, request_id: str):
        self.server_id = server_id

    @classmethod
    def bootstrap(cls, id: UUID, server_id: UUID, accept_terms_of_use: bool, is_operator: bool,
                  by: Provenance, already: bool) -> "Server":
        if already:
            raise AlreadyBootstrapped("The catalog is already bootstrapped")
        if not accept_terms_of_use:
            raise BadRequest("Bootstrapping requires accept-terms-of-use to be true")
        return cls(id=id, server_id=server_id, is_operator=is_operator, actor=by.actor, request_id=by.request_id)
