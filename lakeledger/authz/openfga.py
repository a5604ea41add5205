"""The OpenFGA backend: decisions through the SDK's asynchronous client (on the API's event loop), tuple writes
and the store set-up through its synchronous client (worker threads, ``migrate``)."""

import asyncio
from collections.abc import Iterable, Sequence

from openfga_sdk import ClientConfiguration
from openfga_sdk import OpenFgaClient as AsyncClient
from openfga_sdk.client.models import (
    ClientBatchCheckItem,
    ClientBatchCheckRequest,
    ClientCheckRequest,
    ClientListObjectsRequest,
    ClientTuple,
    ClientWriteRequest,
)
from openfga_sdk.client.models.write_conflict_opts import (
    ClientWriteRequestOnDuplicateWrites,
    ClientWriteRequestOnMissingDeletes,
    ConflictOptions,
)
from openfga_sdk.credentials import CredentialConfiguration, Credentials
from openfga_sdk.exceptions import FgaValidationException, ValidationException
from openfga_sdk.models import ReadRequestTupleKey
from openfga_sdk.sync import OpenFgaClient as SyncClient

from lakeledger.authz.authorizer import AuthorizationUnavailable, Check
from lakeledger.authz.objects import RelationTuple

# the SDK's per-request options (page size, continuation token, headers)
_Options = dict[str, int | str | dict[str, int | str]]
# OpenFGA's default limit of tuples in one write request (OPENFGA_MAX_TUPLES_PER_WRITE)
MAX_TUPLES_PER_WRITE = 100
_IDEMPOTENT = {"conflict": ConflictOptions(on_duplicate_writes=ClientWriteRequestOnDuplicateWrites.IGNORE,
                                           on_missing_deletes=ClientWriteRequestOnMissingDeletes.IGNORE)}


def configuration(endpoint: str, api_key: str | None = None, store_id: str | None = None,
                  model_id: str | None = None, timeout_ms: int = 10_000) -> ClientConfiguration:
    credentials = (Credentials(method="api_token", configuration=CredentialConfiguration(api_token=api_key))
                   if api_key else None)
    return ClientConfiguration(api_url=endpoint.rstrip("/"), store_id=store_id, authorization_model_id=model_id,
                               credentials=credentials, timeout_millisec=timeout_ms)


def sync_client(endpoint: str, api_key: str | None = None, store_id: str | None = None,
                model_id: str | None = None) -> SyncClient:
    return SyncClient(configuration(endpoint, api_key, store_id, model_id))


class _Answering:
    """Turns the SDK's failures into ours: a request OpenFGA refuses as malformed is our mistake (ValueError);
    anything else means it could not answer."""

    def __init__(self, what: str):
        self.what = what

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is None:
            return False
        if isinstance(error, (ValidationException, FgaValidationException)):
            raise ValueError(f"OpenFGA refused {self.what}: {error}") from error
        if isinstance(error, Exception):
            raise AuthorizationUnavailable(f"OpenFGA could not answer {self.what}: {error}") from error
        return False


def _client_tuples(tuples: Iterable[RelationTuple]) -> list[ClientTuple]:
    return [ClientTuple(user=t.user, relation=t.relation, object=t.object) for t in tuples]


class OpenFga:
    def __init__(self, endpoint: str, store_id: str, model_id: str, api_key: str | None = None):
        self.endpoint, self.store_id, self.model_id, self._api_key = endpoint, store_id, model_id, api_key
        self._sync = sync_client(endpoint, api_key, store_id, model_id)
        self._async: AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> AsyncClient:
        # the SDK's aiohttp session belongs to the loop it was made on: one client per loop, made on first use
        loop = asyncio.get_running_loop()
        if self._async is None or self._loop is not loop:
            self._async = AsyncClient(configuration(self.endpoint, self._api_key, self.store_id, self.model_id))
            self._loop = loop
        return self._async

    async def check(self, user: str, relation: str, object: str) -> bool:
        with _Answering(f"check {user} {relation} {object}"):
            response = await self._client().check(ClientCheckRequest(user=user, relation=relation, object=object))
        return bool(response.allowed)

    async def check_many(self, checks: Sequence[Check]) -> list[bool]:
        if not checks:
            return []
        items = [ClientBatchCheckItem(user=c.user, relation=c.relation, object=c.object, correlation_id=str(i),
                                      contextual_tuples=_client_tuples(c.context) or None)
                 for i, c in enumerate(checks)]
        with _Answering(f"a batch of {len(checks)} checks"):
            response = await self._client().batch_check(ClientBatchCheckRequest(checks=items))
        answers = [False] * len(checks)
        for single in response.result:
            if single.error is not None:
                raise AuthorizationUnavailable(f"OpenFGA could not answer {checks[int(single.correlation_id)]}: "
                                               f"{single.error}")
            answers[int(single.correlation_id)] = bool(single.allowed)
        return answers

    async def list_objects(self, user: str, relation: str, type_name: str) -> set[str]:
        with _Answering(f"list {type_name} where {user} has {relation}"):
            response = await self._client().list_objects(
                ClientListObjectsRequest(user=user, relation=relation, type=type_name))
        return set(response.objects)

    async def read(self, object: str, relation: str | None = None) -> list[RelationTuple]:
        found, token = [], None
        with _Answering(f"read tuples of {object}"):
            while True:
                options: _Options = {"page_size": 100, **({"continuation_token": token} if token else {})}
                page = await self._client().read(ReadRequestTupleKey(object=object, relation=relation), options)
                found += [RelationTuple(t.key.user, t.key.relation, t.key.object) for t in page.tuples]
                token = page.continuation_token
                if not token:
                    return found

    def write(self, writes: Iterable[RelationTuple] = (), deletes: Iterable[RelationTuple] = ()) -> None:
        # one transaction per request of at most MAX_TUPLES_PER_WRITE; a larger change is several, each idempotent
        changes = [("delete", t) for t in deletes] + [("write", t) for t in writes]
        for start in range(0, len(changes), MAX_TUPLES_PER_WRITE):
            chunk = changes[start:start + MAX_TUPLES_PER_WRITE]
            as_client = {kind: _client_tuples(t for k, t in chunk if k == kind) or None
                         for kind in ("write", "delete")}
            with _Answering(f"a write of {len(chunk)} tuples"):
                self._sync.write(ClientWriteRequest(writes=as_client["write"], deletes=as_client["delete"]),
                                 # the SDK reads "conflict" as ConflictOptions (its client.py), which
                                 # its annotation of the options leaves out
                                 dict(_IDEMPOTENT))  # type: ignore[arg-type]

    def tuples(self) -> list[RelationTuple]:
        """Every tuple in the store (synchronous: ``lakeledger rebuild`` and tests compare and wipe stores)."""
        found, token = [], None
        with _Answering("a read of every tuple"):
            while True:
                options: _Options = {"page_size": 100, **({"continuation_token": token} if token else {})}
                page = self._sync.read(ReadRequestTupleKey(), options)
                found += [RelationTuple(t.key.user, t.key.relation, t.key.object) for t in page.tuples]
                token = page.continuation_token
                if not token:
                    return found

    def close(self) -> None:
        self._sync.close()

    async def aclose(self) -> None:
        if self._async is not None:
            await self._async.close()
            self._async = None
