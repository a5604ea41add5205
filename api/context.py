"""Per-request context: the request id (taken from ``x-request-id`` or minted), the actor, and the
body size limit. Written as plain ASGI middleware so the hot read path pays almost nothing."""

import uuid

from fastapi import Request

from lakeledger.domain.provenance import ANONYMOUS, Provenance
from lakeledger.api.errors import error_response

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
            request_id = str(uuid.uuid4())
        scope.setdefault("state", {})["request_id"] = request_id
        header = (REQUEST_ID_HEADER, request_id.encode("latin-1"))

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), header]
            await send(message)

        limit = self.max_body_bytes
        if length is not None and (not length.isdigit() or int(length) > limit):
            response = error_response(413, "RequestTooLargeException", f"Request body exceeds {limit} bytes")
            return await response(scope, receive, send_with_id)

        if length is None and scope["method"] in ("POST", "PUT", "PATCH"):
            # A body without a declared length is read up front, so the limit holds before any
            # handler sees it.
            chunks, received = [], 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return
                chunks.append(message.get("body", b""))
                received += len(chunks[-1])
                if received > limit:
                    response = error_response(413, "RequestTooLargeException", f"Request body exceeds {limit} bytes")
                    return await response(scope, receive, send_with_id)
                if not message.get("more_body", False):
                    break
            body = b"".join(chunks)
            replayed = False

            async def receive_buffered():
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            return await self.app(scope, receive_buffered, send_with_id)
        await self.app(scope, receive, send_with_id)


async def provenance(request: Request) -> Provenance:
    return Provenance(actor=ANONYMOUS, request_id=request.state.request_id)
