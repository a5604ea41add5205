"""Every request counted and timed (lakeledger/operations/metrics.py) and, with ``LAKELEDGER__LOG_FORMAT=json``, logged
as one line: method, route, status, duration, request id, actor. Plain ASGI middleware, outermost, so refusals, the
loadTable fast path and compressed answers are all seen as the client sees them.

The route is the matched route's template (``/catalog/v1/{prefix}/namespaces/{namespace}``), never the raw path:
a label per table would be unbounded, and a path can hold what should not be logged. The router writes the
matched route into the scope it receives, which middlewares in between may have copied; ``RecordRoute``, the
innermost layer, copies it into the request's state, which every copy shares."""

import logging
import time

from lakeledger.operations.metrics import REQUEST_SECONDS, REQUESTS

UNMATCHED = "<unmatched>"
# a client may send any method name; a label per name would be unbounded
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"})
logger = logging.getLogger("lakeledger.requests")


class ObservedRequests:
    def __init__(self, app, count: bool, log_requests: bool):
        self.app = app
        self.count = count
        self.log_requests = log_requests
        # (method, route, status) -> the counter's and the histogram's children: labels() costs more than inc()
        self._children: dict[tuple[str, str, int], tuple] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        status = 500  # what the server answers when the app fails before starting its answer

        async def send_observed(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_observed)
        finally:
            seconds = time.perf_counter() - started
            method, route = scope["method"], state.get("route", UNMATCHED)
            if method not in METHODS:
                method = "other"
            if self.count:
                children = self._children.get((method, route, status))
                if children is None:
                    children = self._children[(method, route, status)] = (
                        REQUESTS.labels(method, route, str(status)), REQUEST_SECONDS.labels(method, route))
                children[0].inc()
                children[1].observe(seconds)
            if self.log_requests:
                principal = state.get("principal")
                fields = {"method": method, "route": route, "status": status, "duration_ms": round(seconds * 1000, 3),
                          "request_id": state.get("request_id"), "actor": principal.id if principal else "anonymous"}
                if principal is not None and principal.roles:
                    # what the token's roles claim said: the request was decided with those roles, which no event
                    # records (lakeledger/authz/token_roles.py)
                    fields["roles"] = list(principal.roles)
                logger.info("request", extra={"request": fields})


class RecordRoute:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        try:
            await self.app(scope, receive, send)
        finally:
            template = _template(scope)
            if template is not None and "state" in scope:
                scope["state"]["route"] = template


def _template(scope) -> str | None:
    # FastAPI ≥ 0.130 shares one route object between the prefixes a router is included under, and keeps the
    # template with its prefix in the scope's "fastapi" entry; before, each inclusion was a route of its own
    context = scope.get("fastapi", {}).get("effective_route_context")
    path = getattr(context, "path", None)
    if path:
        return path
    route = scope.get("route")
    return getattr(route, "path", None)


def record_route(scope, template: str) -> None:
    """For a layer that answers without the router (the loadTable fast path): the route it answered for."""
    scope.setdefault("state", {})["route"] = template
