"""The Idempotency-Key of the request being served, for the Ledger to record with the change it makes.

The API sets it for the duration of one request; a context variable carries it into the worker thread
that runs the command, so no service has to pass it along."""

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from lakeledger.domain.idempotency import IdempotencyKey, key_aggregate_id, same_request
from lakeledger.eventstore.log import EVENTS_TABLE
from lakeledger.secretstore.cipher import SecretCipher, WrongKey


@dataclass
class KeyedRequest:
    key: UUID
    method: str
    path: str
    request_hash: str  # domain.idempotency.request_hash of the request
    recorded: bool = False  # set once the key went into the log with this request's change


current: ContextVar[KeyedRequest | None] = ContextVar("lakeledger_idempotency_key", default=None)


@dataclass(frozen=True)
class FinalResponse:
    method: str
    path: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    request_hash: str | None = None  # None on answers kept before requests were hashed

    def answers(self, keyed: KeyedRequest) -> bool:
        return same_request(self.method, self.path, self.request_hash, keyed.method, keyed.path, keyed.request_hash)


@dataclass(frozen=True)
class AppliedKey:
    """A key as the log holds it: the request it was used with, and how long ago its change was appended."""

    method: str
    path: str
    request_hash: str | None
    seconds_ago: float

    def answers(self, keyed: KeyedRequest) -> bool:
        return same_request(self.method, self.path, self.request_hash, keyed.method, keyed.path, keyed.request_hash)


# (originator id, originator version, topic, state) -> the domain event: EventLog.event_of, which upcasts
Decode = Callable[[UUID, int, str, bytes], Any]


# marks a body kept encrypted; a stored response body is JSON or empty, so it never starts with this
_SEALED = b"fernet:"


class ResponseStore:
    """Final responses by Idempotency-Key, kept for twice the advertised key lifetime.

    With a cipher (the server has LAKELEDGER__PG_ENCRYPTION_KEY) bodies are kept encrypted: a table's answer may
    carry vended storage credentials (session tokens), which must not sit in the database in the clear."""

    def __init__(self, pool: AsyncConnectionPool, lifetime: timedelta, decode: Decode,
                 cipher: SecretCipher | None = None):
        self.pool = pool
        self.decode = decode
        self.retention = 2 * lifetime
        self.cipher = cipher
        self._puts = 0

    def _at_rest(self, body: bytes) -> bytes:
        return _SEALED + self.cipher.encrypt_bytes(body) if self.cipher is not None else body

    def _as_sent(self, stored: bytes) -> bytes:
        if not stored.startswith(_SEALED):
            return stored
        if self.cipher is None:
            raise WrongKey("A kept response is encrypted and this server has no LAKELEDGER__PG_ENCRYPTION_KEY")
        return self.cipher.decrypt_bytes(stored[len(_SEALED):])

    async def get(self, key: UUID) -> FinalResponse | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT method, path, status, headers, body, request_hash"
                                     " FROM ll_idempotent_responses WHERE key = %s", (key,))
            row = await cur.fetchone()
        if row is None:
            return None
        return FinalResponse(row[0], row[1], row[2], [tuple(h) for h in row[3]], self._as_sent(bytes(row[4])),
                             row[5])

    async def put(self, key: UUID, response: FinalResponse) -> FinalResponse:
        """Stores ``response`` unless one is stored already; returns the one that is stored."""
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO ll_idempotent_responses (key, method, path, status, headers, body, request_hash)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (key) DO NOTHING",
                (key, response.method, response.path, response.status, Jsonb(response.headers),
                 self._at_rest(response.body), response.request_hash))
            self._puts += 1
            if self._puts % 256 == 0:
                await conn.execute("DELETE FROM ll_idempotent_responses WHERE created_at < now() - %s",
                                   (self.retention,))
        return await self.get(key) or response

    async def applied(self, key: UUID) -> AppliedKey | None:
        """The key as the log holds it, if a change was made under it."""
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT originator_id, originator_version, topic, state,"
                f" extract(epoch FROM clock_timestamp() - appended_at) FROM {EVENTS_TABLE}"
                " WHERE originator_id = %s ORDER BY originator_version LIMIT 1", (key_aggregate_id(key),))
            row = await cur.fetchone()
        if row is None:
            return None
        used: IdempotencyKey.Used = self.decode(row[0], row[1], row[2], bytes(row[3]))
        return AppliedKey(used.method, used.path, used.request_hash, float(row[4] or 0.0))
