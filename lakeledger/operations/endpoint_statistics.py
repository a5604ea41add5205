"""Calls per endpoint, status, project, warehouse and hour, as Lakekeeper's endpoint statistics count them.

On the request path a call costs one dictionary update in this process (no I/O, no lock: the event loop is one
thread); ``flush`` adds what was counted since the last one to ``ll_endpoint_statistics`` in one statement, every
``LAKELEDGER__ENDPOINT_STATISTICS_FLUSH_SECONDS`` and when the process stops (if the database answers within 0.1 s:
a stop must end every process within 5 s, whatever Postgres does). Counts are telemetry, not changes of
the catalog, so they never enter the event log. A flush that fails (Postgres away) keeps its counts for the next one.

The endpoint is the matched route's template (never the raw path), so keys stay bounded; the warehouse is the one
the path names (``{prefix}`` of the catalog API, ``{warehouse_id}`` of the management API)."""

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from uuid import UUID

from lakeledger.operations.observed_requests import METHODS
from lakeledger.projections.statistics_queries import NO_WAREHOUSE, CallCount

logger = logging.getLogger(__name__)

BUCKET_SECONDS = 3600
# the APIs Lakekeeper counts; not /health, /metrics or the console
COUNTED = ("/catalog/v1/", "/v1/", "/management/v1/", "/lakekeeper/v1/")
_WAREHOUSE_PARAMETERS = ("{prefix}", "{warehouse_id}")

# bucket end (epoch seconds), method, route, status, the x-project-id header, the path's warehouse segment: what the
# request carries, as it carries it; parsing waits for the flush
_Key = tuple[int, str, str, int, bytes | None, str | None]


class EndpointCalls:
    """This process's counts since the last flush."""

    def __init__(self) -> None:
        self._counts: dict[_Key, list] = {}  # key -> [count, first call, last call] (epoch seconds)

    def count(self, method: str, route: str, status: int, project: bytes | None, warehouse: str | None,
              now: float) -> None:
        key = ((int(now) // BUCKET_SECONDS + 1) * BUCKET_SECONDS, method, route, status, project, warehouse)
        seen = self._counts.get(key)
        if seen is None:
            self._counts[key] = [1, now, now]
        else:
            seen[0] += 1
            seen[2] = now

    def take(self) -> list[CallCount]:
        counts, self._counts = self._counts, {}
        return [CallCount(datetime.fromtimestamp(bucket, UTC), f"{method} {route}", status, _uuid(project),
                          _uuid(warehouse), n, datetime.fromtimestamp(first, UTC), datetime.fromtimestamp(last, UTC))
                for (bucket, method, route, status, project, warehouse), (n, first, last) in counts.items()]

    def put_back(self, counts: Iterable[CallCount]) -> None:
        for c in counts:
            method, route = c.http_route.split(" ", 1)
            key = (int(c.bucket.timestamp()), method, route, c.status_code, str(c.project_id).encode(),
                   str(c.warehouse_id))
            seen = self._counts.setdefault(key, [0, c.first_at.timestamp(), c.last_at.timestamp()])
            seen[0] += c.count
            seen[1] = min(seen[1], c.first_at.timestamp())
            seen[2] = max(seen[2], c.last_at.timestamp())

    async def flush(self, add: Callable[[list[CallCount]], Awaitable[None]]) -> bool:
        """False when the counts could not be written (logged): they wait for the next flush."""
        counts = self.take()
        try:
            await add(counts)
        except Exception:
            logger.warning("endpoint statistics not written; kept for the next flush", exc_info=True)
            self.put_back(counts)
            return False
        return True


async def flush_every(calls: EndpointCalls, add: Callable[[list[CallCount]], Awaitable[None]],
                      seconds: float) -> None:
    while True:
        await asyncio.sleep(seconds)
        await calls.flush(add)


class CountEndpointCalls:
    """Plain ASGI middleware: counts each answered call of the counted APIs. It reads the route ``RecordRoute``
    leaves in the request's state, so it sits outside it."""

    def __init__(self, app, calls: EndpointCalls):
        self.app = app
        self.calls = calls

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        state = scope.setdefault("state", {})
        status = 500

        async def send_counted(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_counted)
        finally:
            route = state.get("route")
            if route is not None and route.startswith(COUNTED) and scope["method"] in METHODS:
                self.calls.count(scope["method"], route, status, _header(scope, b"x-project-id"),
                                 _warehouse(route, scope), time.time())


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def _uuid(value: bytes | str | None) -> UUID:
    """A header's or a path segment's UUID; none or a malformed one: the nil UUID (the default project, as
    project_id_of takes it, or no warehouse)."""
    if value is None:
        return NO_WAREHOUSE
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    try:
        return UUID(value.strip())
    except ValueError:
        return NO_WAREHOUSE


def _warehouse(route: str, scope) -> str | None:
    """The segment of the path at the place of the route's warehouse parameter, if it has one."""
    segments = route.split("/")
    for parameter in _WAREHOUSE_PARAMETERS:
        if parameter in segments:
            path = scope["path"].split("/")
            at = segments.index(parameter)
            return path[at] if at < len(path) else None
    return None
