"""Idempotency keys: a client's promise that retries of one request carry the same key.

A key is recorded in the same append as the change its request made. A retry that would change the
catalog again appends the same key aggregate at the same version and loses, so a mutation can never
be applied twice, whichever process or moment the retry reaches.

A key is bound to one request: the hash of its method, path, query and body is recorded with it, so that the same
key on another request is told apart from a retry, also after a crash that lost the first request's answer."""

import hashlib
from uuid import UUID, uuid5

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.provenance import Provenance

# Keys are the client's UUIDs; deriving the aggregate id keeps them apart from every other aggregate's id.
_KEYS = UUID("5f0f3b6e-3c43-4f7e-9a53-1d4f6f2a7c10")


def key_aggregate_id(key: UUID) -> UUID:
    return uuid5(_KEYS, str(key))


def request_hash(method: str, path: str, query: bytes, body: bytes) -> str:
    """What makes two requests the same request: each part length-prefixed, so that no two different requests
    join into the same bytes (a path ending where a query begins)."""
    digest = hashlib.sha256()
    for part in (method.encode(), path.encode(), query, body):
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    return digest.hexdigest()


def same_request(recorded_method: str, recorded_path: str, recorded_hash: str | None,
                 method: str, path: str, hash_: str) -> bool:
    """Whether a request is a retry of the one a key was recorded with. Keys recorded before the hash was (version
    1 of ``Used``) are bound to their method and path alone."""
    if (recorded_method, recorded_path) != (method, path):
        return False
    return recorded_hash is None or recorded_hash == hash_


class IdempotencyKey(CatalogAggregate):
    class Used(CatalogAggregate.Created):
        """Version 2 added ``request_hash`` (request_hash() of the request that used the key)."""

        class_version = 2

        key: UUID
        method: str
        path: str
        request_hash: str | None

        @staticmethod
        def upcast_v1_v2(state: JsonObject) -> None:
            state["request_hash"] = None

    @event(Used)
    def __init__(self, id: UUID, key: UUID, method: str, path: str, request_hash: str | None, actor: str,
                 request_id: str):
        self.key = key
        self.method = method
        self.path = path
        self.request_hash = request_hash

    @classmethod
    def use(cls, key: UUID, method: str, path: str, request_hash: str, by: Provenance) -> "IdempotencyKey":
        return cls(id=key_aggregate_id(key), key=key, method=method, path=path, request_hash=request_hash,
                   actor=by.actor, request_id=by.request_id)
