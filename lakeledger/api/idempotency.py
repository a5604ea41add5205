"""Idempotency-Key on mutations: the first final response is replayed to every retry, and the change is
never applied twice. A key is bound to its request (method, path, query and body, hashed): the same key on another
request is refused with 422 and runs nothing. A key whose change is in the log but whose answer was lost in a crash
is answered from the log (lakeledger/api/lost_answers.py), never left waiting (docs/concurrency.md).

The key goes into the log with the change (see services.unit_of_work.Ledger.append), which is what
makes a second application impossible, even for two copies of a request racing in two processes. The
response is kept beside it so retries get the same answer. Responses that are not final (5xx) are not
kept: a retry runs the request again."""

import asyncio
from uuid import UUID

from lakeledger.api import lost_answers
from lakeledger.api.context import read_body, replaying
from lakeledger.api.errors import error_response
from lakeledger.api.responses import CapturedResponse
from lakeledger.domain.idempotency import request_hash
from lakeledger.secretstore.cipher import WrongKey
from lakeledger.services import idempotency
from lakeledger.services.idempotency import AppliedKey, FinalResponse, KeyedRequest, ResponseStore

HEADER = b"idempotency-key"
MUTATIONS = ("POST", "PUT", "DELETE")
SCOPES = ("/catalog/v1/", "/v1/", "/management/v1/", "/lakekeeper/v1/")
# How long a retry waits for the response of a copy of itself that is still being answered elsewhere.
WAIT_SECONDS = 10.0
REPLAYED_HEADER = ("idempotent-replayed", "true")


class IdempotentRequests:
    def __init__(self, app, container):
        self.app = app
        self.container = container

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] not in MUTATIONS or not scope["path"].startswith(SCOPES):
            return await self.app(scope, receive, send)
        raw = next((value for key, value in scope["headers"] if key == HEADER), None)
        if raw is None:
            return await self.app(scope, receive, send)
        try:
            key = UUID(raw.decode("latin-1").strip())
        except ValueError:
            return await error_response(
                400, "BadRequestException", "Idempotency-Key must be a UUID (RFC 9562, e.g. a UUIDv7)"
            )(scope, receive, send)
        store: ResponseStore = self.container.idempotent_responses
        method, path = scope["method"], _canonical(scope["path"])
        # the whole body is read before anything is decided: the key is bound to it
        body = await read_body(receive)
        keyed = KeyedRequest(key, method, path, request_hash(method, path, scope.get("query_string", b""), body))

        try:
            stored = await store.get(key)
        except WrongKey as exc:
            # kept responses are sealed with the server's key: without it no retry can be answered, say so
            return await error_response(500, "InternalServerError", str(exc))(scope, receive, send)
        if stored is not None:
            return await _replay(stored, keyed, scope, send)
        applied = await store.applied(key)
        if applied is not None:  # the change is made; its answer is on its way, or was lost
            return await self._answer_applied(applied, keyed, scope, body, send)

        captured = CapturedResponse()
        token = idempotency.current.set(keyed)
        try:
            await self.app(scope, replaying(body, receive), captured.send)
        finally:
            idempotency.current.reset(token)
        response = FinalResponse(method, path, captured.status, captured.headers, captured.body, keyed.request_hash)

        if response.status >= 500:
            return await _send(response, send)
        if not keyed.recorded:
            applied = await store.applied(key)
            if applied is not None:  # another request with this key made a change first
                return await self._answer_applied(applied, keyed, scope, body, send)
        stored = await store.put(key, response)
        if stored.status != response.status or stored.body != response.body:
            return await _replay(stored, keyed, scope, send)
        await _send(response, send)

    async def _answer_applied(self, applied: AppliedKey, keyed: KeyedRequest, scope, body: bytes, send):
        """A request whose key the log holds: another request's (422), or a copy of this one, whose answer is
        replayed once it is kept. One whose answer is not kept WAIT_SECONDS after its change was appended was lost
        with the process that made it; it is answered from the log, and that answer is kept."""
        if not applied.answers(keyed):
            return await _refused(keyed, applied.method, applied.path, scope, send)
        store: ResponseStore = self.container.idempotent_responses
        stored = await _wait_for(store, keyed.key, WAIT_SECONDS - applied.seconds_ago)
        if stored is None:
            stored = await store.put(keyed.key, await lost_answers.from_the_log(self.app, scope, keyed, body))
        return await _replay(stored, keyed, scope, send)


def _canonical(path: str) -> str:
    return "/catalog" + path if path.startswith("/v1/") else path


async def _wait_for(store: ResponseStore, key: UUID, seconds: float) -> FinalResponse | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        stored = await store.get(key)
        if stored is not None or loop.time() >= deadline:
            return stored
        await asyncio.sleep(0.05)


async def _refused(keyed: KeyedRequest, method: str, path: str, scope, send):
    """422, and nothing is run: the key is another request's."""
    async def nothing():
        return {"type": "http.disconnect"}

    what = (
        f"{method} {path}" if (method, path) != (keyed.method, keyed.path) else "a request with another body or query"
    )
    return await error_response(
        422, "UnprocessableEntityException",
        f"Idempotency-Key {keyed.key} was used for {what}; a different request needs a new key",
    )(scope, nothing, send)


async def _replay(stored: FinalResponse, keyed: KeyedRequest, scope, send):
    if not stored.answers(keyed):
        return await _refused(keyed, stored.method, stored.path, scope, send)
    await _send(FinalResponse(stored.method, stored.path, stored.status, [*stored.headers, REPLAYED_HEADER],
                              stored.body), send)


async def _send(response: FinalResponse, send) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})
