"""loadTable's hot path as a bare ASGI handler in front of FastAPI.

A plain table load that is found and whose metadata bytes are cached is answered here: one indexed
read-model lookup and the stored bytes, without routing, dependency injection or re-serialisation.
Everything else (errors, cache misses, query options) falls through to the FastAPI route, which is
the reference behaviour, so both paths answer identically: what storage access an answer gives is decided for both
by one function (lakeledger/api/access.py's load_access)."""

from uuid import UUID

from lakeledger.api.access import load_access, load_tag, with_access
from lakeledger.api.authorization import WRITE, guard_of_scope
from lakeledger.api.authorization import table as table_object
from lakeledger.api.errors import database_unavailable
from lakeledger.api.etags import matches
from lakeledger.api.identifiers import levels, segment
from lakeledger.authz.authorizer import AuthorizationUnavailable
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.names import check_name
from lakeledger.eventstore.postgres_failures import unavailable
from lakeledger.operations.observed_requests import record_route
from lakeledger.services.metadata_files import ALL_SNAPSHOTS
from lakeledger.services.resolve import storage_settings

_CONTENT_TYPE = (b"content-type", b"application/json")
_LOAD_TABLE = "/{prefix}/namespaces/{namespace}/tables/{table}"


class FastLoadTable:
    def __init__(self, app, container):
        self.app = app
        self.container = container

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "GET" and not scope.get("query_string"):
            try:
                found = await self._try(scope)
            except Exception as exc:
                if not unavailable(exc):
                    raise
                # the route would wait for the database as long again: answered as the route's handler would
                record_route(scope, _template(scope))
                return await database_unavailable(scope["method"], scope["path"], exc)(scope, receive, send)
            if found is not None:
                tag, body = found
                record_route(scope, _template(scope))
                condition = _header(scope, b"if-none-match")
                if condition is not None and matches(condition, tag):
                    await send({"type": "http.response.start", "status": 304, "headers": [(b"etag", tag.encode())]})
                    await send({"type": "http.response.body", "body": b""})
                    return
                await send({"type": "http.response.start", "status": 200,
                            "headers": [_CONTENT_TYPE, (b"etag", tag.encode()),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)

    async def _try(self, scope) -> tuple[str, bytes] | None:
        """(ETag, body) of the answer, or None to leave the request to the route."""
        parts = scope["path"].split("/")
        if len(parts) == 7:  # the root alias: /v1/...
            parts.insert(1, "catalog")
        # ['', 'catalog', 'v1', prefix, 'namespaces', namespace, 'tables', table]
        if len(parts) != 8 or parts[1] != "catalog" or parts[2] != "v1" or parts[4] != "namespaces" \
                or parts[6] != "tables":
            return None
        queries = getattr(self.container, "queries", None)  # opened with the API's event loop
        if queries is None:
            return None
        try:
            # the path is RequestContext's routing path: segments with `%` and `/` still escaped
            namespace = [check_name(level, "Namespace") for level in levels(segment(parts[5]))]
            name = check_name(segment(parts[7]), "Table")
            row = await queries.active_table(UUID(parts[3]), namespace, name)
        except (BadRequest, ValueError):
            return None
        if row is None:
            return None
        table_id, metadata_location, location, profile_json, secret_json = row
        body = self.container.files.response_body(metadata_location)
        if body is None:
            return None
        az = guard_of_scope(self.container, scope)
        rights: str | None = WRITE
        if not az.off:
            try:
                rights = await az.storage_rights(table_object(table_id), LookupError())
            except (LookupError, AuthorizationUnavailable):
                # not visible to the caller, or no answer: the route says so (404 as if absent, or 503)
                return None
        try:
            access = load_access(self.container.table_access, self.container.settings, scope,
                                 lambda: storage_settings(UUID(parts[3]), profile_json, secret_json),
                                 table_id, location, rights, cached_only=True)
        except BadRequest:
            return None
        if access is None:
            return None
        return load_tag(metadata_location, ALL_SNAPSHOTS, access), with_access(body, access)


def _template(scope) -> str:
    return ("/v1" if scope["path"].startswith("/v1/") else "/catalog/v1") + _LOAD_TABLE


def _header(scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None
