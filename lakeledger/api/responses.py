import json

import orjson
from starlette.responses import Response


class JSONResponse(Response):
    """JSON rendered by orjson (UUIDs and datetimes included). Events recorded before numbers beyond 64 bits were
    refused at the edge may hold some, which orjson refuses: those answers go the standard library's way."""

    media_type = "application/json"

    def render(self, content) -> bytes:
        try:
            return orjson.dumps(content)
        except TypeError:
            return json.dumps(content, default=str, separators=(",", ":")).encode()


class CapturedResponse:
    """An ASGI ``send`` that keeps the application's answer instead of sending it, for a layer that decides what to do
    with it (the idempotency layer keeps it for retries; a lost answer is rebuilt from a load)."""

    def __init__(self):
        self.status = 500
        self.headers: list[tuple[str, str]] = []
        self.chunks: list[bytes] = []

    async def send(self, message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            # the request id belongs to each request, not to an answer kept for another
            self.headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])
                            if k.lower() != b"x-request-id"]
        elif message["type"] == "http.response.body":
            self.chunks.append(message.get("body", b""))

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)
