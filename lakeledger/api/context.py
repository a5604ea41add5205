"""Per-request context: the request id (taken from ``x-request-id`` or minted), the actor, the body
size limit and the path routed on (lakeledger/api/identifiers.py). Written as plain ASGI middleware so the hot
read path pays almost nothing."""

from fastapi import Request

from lakeledger.api.edge_checks import body_problem, path_problem, query_problem
from lakeledger.api.errors import error_response
from lakeledger.api.identifiers import routing_path
from lakeledger.api.request_ids import new_request_id
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.identity.principal import ANONYMOUS_PRINCIPAL, Principal

REQUEST_ID_HEADER = b"x-request-id"


class RequestContext:
    def __init__(self, app, max_body_bytes: int):
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request_id = None
        length = None
        for key, value in scope["headers"]:
            if key == REQUEST_ID_HEADER:
                request_id = value.decode("latin-1")[:128]
            elif key == b"content-length":
                length = value
        if not request_id:
            request_id = new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        header = (REQUEST_ID_HEADER, request_id.encode("latin-1"))

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        def refuse(code: int, type_: str, message: str):
            return error_response(code, type_, message, head=scope["method"] == "HEAD")(scope, receive, send_with_id)

        try:
            path = routing_path(scope)
        except BadRequest as e:
            return await refuse(400, "BadRequestException", e.message)
        if path != scope["path"]:
            scope = {**scope, "path": path}
        problem = path_problem(path) or query_problem(scope.get("query_string", b""))
        if problem is not None:
            return await refuse(400, "BadRequestException", problem)

        limit = self.max_body_bytes
        if length is not None and (not length.isdigit() or int(length) > limit):
            return await refuse(413, "RequestTooLargeException", f"Request body exceeds {limit} bytes")
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            return await self.app(scope, receive, send_with_id)
        if _encoded(scope["headers"]):
            # A compressed body would be inflated past every limit here (a gzip bomb); no client of the API sends one.
            return await refuse(415, "UnsupportedMediaTypeException",
                                "Request bodies with a Content-Encoding are not accepted; send the body as it is")

        # The body is read up front: the limit holds before any handler sees it (a body may come without a
        # declared length), and its strings are checked once for every route.
        chunks, received = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            received += len(chunks[-1])
            if received > limit:
                return await refuse(413, "RequestTooLargeException", f"Request body exceeds {limit} bytes")
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        problem = body_problem(body)
        if problem is not None:
            return await refuse(400, "BadRequestException", problem)
        await self.app(scope, replaying(body, receive), send_with_id)


def _encoded(headers) -> bool:
    return any(key == b"content-encoding" and value.strip().lower() not in (b"", b"identity") for key, value in headers)


async def read_body(receive) -> bytes:
    """The whole body of a request, from its ASGI ``receive`` (``replaying`` hands it on)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def replaying(body: bytes, receive):
    """An ASGI ``receive`` that hands over ``body`` (read already) as the whole request, then defers to ``receive``."""
    replayed = False

    async def receive_buffered():
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return receive_buffered


def principal(request: Request) -> Principal:
    """Who is calling: put in the request's state by lakeledger/api/authentication.py; anonymous when authentication
    is off."""
    return getattr(request.state, "principal", ANONYMOUS_PRINCIPAL)


async def provenance(request: Request) -> Provenance:
    return Provenance(actor=principal(request).id, request_id=request.state.request_id)
