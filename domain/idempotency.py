"""Idempotency keys: a client's promise that retries of one request carry the same key.

A key is recorded in the same append as the change its request made. A retry that would change the
catalog again appends the same key aggregate at the same version and loses, so a mutation can never
be applied twice, whichever process or moment the retry reaches."""

from uuid import UUID, uuid5

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.provenance import Provenance

# Keys are the client's UUIDs; deriving the aggregate id keeps them apart from every other aggregate's id.
_KEYS = UUID("5f0f3b6e-3c43-4f7e-9a53-1d4f6f2a7c10")


def key_aggregate_id(key: UUID) -> UUID:
    return uuid5(_KEYS, str(key))


class IdempotencyKey(CatalogAggregate):
    class Used(CatalogAggregate.Created):
        key: UUID
        method: str
        path: str

    @event(Used)
    def __init__(self, id: UUID, key: UUID, method: str, path: str, actor: str, request_id: str):
        self.key = key
        self.method = method
        self.path = path

    @classmethod
    def use(cls, key: UUID, method: str, path: str, by: Provenance) -> "IdempotencyKey":
        return cls(id=key_aggregate_id(key), key=key, method=method, path=path, actor=by.actor,
                   request_id=by.request_id)
