"""Idempotency-Key on mutations: the first final response is replayed to every retry, and the change is
never applied twice.

The key goes into the log with the change (see services.unit_of_work.Ledger.append), which is what
makes a second application impossible, even for two copies of a request racing in two processes. The
response is kept beside it so retries get the same answer. Responses that are not final (5xx) are not
kept: a retry runs the request again."""

import asyncio
from uuid import UUID

from lakeledger.services import idempotency
from lakeledger.services.idempotency import FinalResponse, KeyedRequest, ResponseStore
from lakeledger.api.errors import error_response
from lakeledger.secretstore.cipher import WrongKey

HEADER = b"idempotency-key"
MUTATIONS = ("POST", "PUT", "DELETE")
SCOPES = ("/catalog/v1/", "/v1/", "/management/v1/")
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
            return await error_response(400, "BadRequestException",
                                        "Idempotency-Key must be a UUID (RFC 9562, e.g. a UUIDv7)")(scope, receive, send)
        store: ResponseStore = self.container.idempotent_responses
        method, path = scope["method"], _canonical(scope["path"])

        try:
            stored = await store.get(key)
        except WrongKey as exc:
            # kept responses are sealed with the server's key: without it no retry can be answered, say so
            return await error_response(500, "InternalServerError", str(exc))(scope, receive, send)
        if stored is not None:
            return await _replay(stored, method, path, key, scope, receive, send)

        keyed = KeyedRequest(key, method, path)
        captured = _Captured()
        token = idempotency.current.set(keyed)
        try:
            await self.app(scope, receive, captured.send)
        finally:
            idempotency.current.reset(token)
        response = FinalResponse(method, path, captured.status, captured.headers, captured.body)

        if response.status >= 500:
            return await _send(response, send)
        if not keyed.recorded and await store.applied(key):
            # Another copy of this request made the change; its answer is the one to give.
            stored = await _wait_for(store, key)
            if stored is not None:
                return await _replay(stored, method, path, key, scope, receive, send)
            return await error_response(409, "CommitStateUnknownException",
                                        f"A request with Idempotency-Key {key} was applied and is still being "
                                        "answered; retry later")(scope, receive, send)
        stored = await store.put(key, response)
        if stored.status != response.status or stored.body != response.body:
            return await _replay(stored, method, path, key, scope, receive, send)
        await _send(response, send)


def _canonical(path: str) -> str:
    return "/catalog" + path if path.startswith("/v1/") else path


async def _wait_for(store: ResponseStore, key: UUID) -> FinalResponse | None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_SECONDS
    while loop.time() < deadline:
        stored = await store.get(key)
        if stored is not None:
            return stored
        await asyncio.sleep(0.05)
    return None


async def _replay(stored: FinalResponse, method: str, path: str, key: UUID, scope, receive, send):
    if (stored.method, stored.path) != (method, path):
        return await error_response(
            422, "UnprocessableEntityException",
            f"Idempotency-Key {key} was used for {stored.method} {stored.path}; a different request needs a new key",
        )(scope, receive, send)
    await _send(FinalResponse(stored.method, stored.path, stored.status, [*stored.headers, REPLAYED_HEADER],
                              stored.body), send)


async def _send(response: FinalResponse, send) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


class _Captured:
    """The response the application sends, held back until it is known to be final."""

    def __init__(self):
        self.status = 500
        self.headers: list[tuple[str, str]] = []
        self.chunks: list[bytes] = []

    async def send(self, message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            # the request id belongs to each request, not to the replayed answer
            self.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
                            if k.lower() != b"x-request-id"]
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)
