"""Read-only maintenance mode, as Lakekeeper 0.12.3 has it: while it is on, every write to the API (any method but
GET, HEAD and OPTIONS, and the Events API's and the task lists' POST, on /catalog/v1, /v1, /management/v1 and
/lakekeeper/v1) is answered 503 with ``Retry-After`` and the ErrorModel type ``MaintenanceModeError``; reads, /health
and /metrics go on.

Lakekeeper takes it from its configuration at start. Here it is also an event (lakeledger/domain/maintenance.py,
``POST /management/v1/maintenance-mode``), so it is recorded with its actor and request id and every API process
follows it: each reads the flag from the catalog read model every ``FOLLOW_SECONDS`` (one one-row query), and the
process that records a switch applies it at once. ``LAKELEDGER__MAINTENANCE_MODE=read-only`` holds it on from the
start whatever the log says (as Lakekeeper's setting). The switch itself passes the gate, or nothing could turn it
off; so do the background workers, which are not the API."""

import asyncio
import logging

import orjson
from starlette.responses import Response

logger = logging.getLogger(__name__)

FOLLOW_SECONDS = 1.0
RETRY_AFTER_SECONDS = 60  # Lakekeeper's: a migration window, not a hiccup
ERROR_TYPE = "MaintenanceModeError"
SWITCH = "/management/v1/maintenance-mode"
_GATED = ("/catalog/v1/", "/v1/", "/management/v1/", "/lakekeeper/v1/")
_READS = frozenset({"GET", "HEAD", "OPTIONS"})
# the Events API and the task lists read by POST (their filters are a body): served while read-only
_READ_POSTS = ("/events", "/task/list")


class MaintenanceMode:
    def __init__(self, fixed: bool):
        self.fixed = fixed  # the setting: on from the start
        self.recorded = False  # the last MaintenanceModeSet, as this process last read it

    @property
    def read_only(self) -> bool:
        return self.fixed or self.recorded


async def follow(mode: MaintenanceMode, read_only_recorded) -> None:
    """Keeps ``mode.recorded`` to the read model; ``read_only_recorded`` is an async callable answering it."""
    while True:
        try:
            mode.recorded = await read_only_recorded()
        except Exception:  # the database away: keep the last known mode (writes would fail anyway)
            logger.debug("maintenance mode not read", exc_info=True)
        await asyncio.sleep(FOLLOW_SECONDS)


def _refusal(head: bool) -> Response:
    body = b"" if head else orjson.dumps({"error": {
        "message": "The catalog is in read-only maintenance mode: writes are refused until it ends; retry later",
        "type": ERROR_TYPE, "code": 503}})
    return Response(body, status_code=503, media_type="application/json",
                    headers={"retry-after": str(RETRY_AFTER_SECONDS)})


class MaintenanceGate:
    """Plain ASGI middleware, inside authentication (an anonymous write still gets its 401 first, as in
    Lakekeeper) and outside every layer that could write (idempotent replays, the fast commit path)."""

    def __init__(self, app, mode: MaintenanceMode):
        self.app = app
        self.mode = mode

    async def __call__(self, scope, receive, send):
        if (scope["type"] == "http" and self.mode.read_only and scope["method"] not in _READS
                and scope["path"].startswith(_GATED) and scope["path"] != SWITCH
                and not (scope["method"] == "POST" and scope["path"].endswith(_READ_POSTS))):
            return await _refusal(False)(scope, receive, send)
        return await self.app(scope, receive, send)
