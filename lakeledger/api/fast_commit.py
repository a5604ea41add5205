"""updateTable's hot path as a bare ASGI handler in front of FastAPI's router.

Routing a request through every route, solving its dependencies and the exception layer cost more than the
commit's own service work. A commit whose path and body are well formed is handed here straight to the route's
own work (``routers.tables.commit_table``) with the same caller, provenance and turns the route's dependencies
would give it; its errors are answered by the app's own exception handlers. Anything else, a malformed body
included, goes to the route with the body replayed, so both paths answer alike. It sits inside the
idempotency, time-travel and request-context layers, which see it as they see the route."""

from pydantic import ValidationError
from starlette.requests import Request

from lakeledger.api.authorization import guard_of_scope
from lakeledger.api.context import ANONYMOUS_PRINCIPAL, read_body, replaying
from lakeledger.api.identifiers import segment
from lakeledger.api.models import CommitTableRequest
from lakeledger.api.routers.tables import commit_table
from lakeledger.domain.provenance import Provenance
from lakeledger.operations.observed_requests import record_route

_UPDATE_TABLE = "/{prefix}/namespaces/{namespace}/tables/{table}"


class FastCommitTable:
    def __init__(self, app, container):
        self.app = app
        self.container = container

    async def __call__(self, scope, receive, send):
        target = _target(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        if target is None:
            return await self.app(scope, receive, send)
        body = await read_body(receive)
        replay = replaying(body, receive)
        try:
            request = CommitTableRequest.model_validate_json(body)
        except ValidationError:
            return await self.app(scope, replay, send)  # the route says what is wrong, as it always has
        prefix, namespace, table = target
        app = scope["app"]
        state = scope.setdefault("state", {})
        record_route(scope, ("/v1" if scope["path"].startswith("/v1/") else "/catalog/v1") + _UPDATE_TABLE)
        by = Provenance(actor=state.get("principal", ANONYMOUS_PRINCIPAL).id, request_id=state.get("request_id"))
        try:
            response = await commit_table(self.container, guard_of_scope(self.container, scope), by,
                                          app.state.keyed_locks, prefix, namespace, table, request)
        except Exception as exc:
            handler = _handler(app, exc)
            if handler is None:
                raise
            response = await handler(Request(scope, replay), exc)
        await response(scope, replay, send)


def _target(scope) -> tuple[str, str, str] | None:
    """(prefix, namespace, table) of an updateTable path without a query, as the route's parameters."""
    if scope.get("query_string"):
        return None
    parts = scope["path"].split("/")
    if len(parts) == 7:  # the root alias: /v1/...
        parts.insert(1, "catalog")
    # ['', 'catalog', 'v1', prefix, 'namespaces', namespace, 'tables', table]
    if len(parts) != 8 or parts[1] != "catalog" or parts[2] != "v1" or parts[4] != "namespaces" \
            or parts[6] != "tables" or not all(parts[3::2]):
        return None
    for key, value in scope["headers"]:
        if key == b"content-type" and not value.lower().startswith(b"application/json"):
            return None
    return segment(parts[3]), segment(parts[5]), segment(parts[7])


def _handler(app, exc: Exception):
    """The app's exception handler for ``exc``, found as Starlette finds it (the closest class first)."""
    for cls in type(exc).__mro__:
        if cls in app.exception_handlers:
            return app.exception_handlers[cls]
    return None
