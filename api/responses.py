import orjson
from starlette.responses import Response


class JSONResponse(Response):
    """JSON rendered by orjson (UUIDs and datetimes included)."""

    media_type = "application/json"

    def render(self, content) -> bytes:
        return orjson.dumps(content)
