"""Answers to keyed requests whose change is in the log but whose own answer was never kept: the process that
appended it died before it could keep it (a kill -9, a crash, a lost host). Without this, every retry would find the
key applied and wait for an answer that will never come.

Such a request is answered from the catalog the log now holds, as a retry that reaches a live server after the
change would expect it: a creation or a commit with the object as a load answers it now (the body of
createTable, registerTable and a table commit is a LoadTableResult, or has its fields; likewise for views and
namespaces); a drop, a rename or a multi-table commit with 204 No Content, as they answer anyway. Anything else
(management requests, namespace properties) gets 204 No Content: the change is made, and its object is read with a
GET. The answer is kept under the key like any other, so every later retry gets the same one."""

from urllib.parse import quote

import orjson

from lakeledger.api.identifiers import SEPARATOR, routing_path, segment
from lakeledger.api.responses import CapturedResponse
from lakeledger.services.idempotency import FinalResponse, KeyedRequest

NO_CONTENT = 204


async def from_the_log(app, scope, keyed: KeyedRequest, body: bytes) -> FinalResponse:
    """The answer to the keyed request ``scope``/``body``, whose change is in the log."""
    target = load_path(scope["method"], [segment(s) for s in routing_path(scope).split("/")], body)
    if target is None:
        return FinalResponse(keyed.method, keyed.path, NO_CONTENT, [], b"", keyed.request_hash)
    loaded = await _get(app, scope, target)
    if loaded.status != 200:  # the object has moved on since (dropped, renamed): the change is made all the same
        return FinalResponse(keyed.method, keyed.path, NO_CONTENT, [], b"", keyed.request_hash)
    return FinalResponse(keyed.method, keyed.path, 200, loaded.headers, loaded.body, keyed.request_hash)


def load_path(method: str, parts: list[str], body: bytes) -> list[str] | None:
    """The segments of the path that loads what ``method`` on the path of ``parts`` made or changed, None when it
    has no such body."""
    if method != "POST":
        return None
    try:
        namespaces = parts.index("namespaces")
    except ValueError:
        return None  # renames, multi-table commits, management requests
    head, tail = parts[:namespaces + 1], parts[namespaces + 1:]
    try:
        sent = orjson.loads(body) if body else {}
    except orjson.JSONDecodeError:
        return None
    if not isinstance(sent, dict):
        return None
    if not tail:  # createNamespace
        levels = sent.get("namespace")
        return [*head, SEPARATOR.join(levels)] if isinstance(levels, list) and levels else None
    if len(tail) == 2 and tail[1] in ("tables", "views", "register", "register-view"):
        name = sent.get("name")
        kind = "views" if tail[1] in ("views", "register-view") else "tables"
        return [*head, tail[0], kind, name] if isinstance(name, str) else None
    if len(tail) == 3 and tail[1] in ("tables", "views"):  # a commit to one table or view
        return [*head, *tail]
    return None


async def _get(app, scope, segments: list[str]) -> CapturedResponse:
    """A GET of ``segments`` through the application, as the same caller (the scope keeps its identity)."""
    path = "/".join(segments)  # as the server decodes it; the raw path keeps a `/` inside a name escaped
    raw = "/".join(quote(s, safe="") for s in segments).encode("ascii")
    headers = [(k, v) for k, v in scope["headers"] if k.lower() not in (b"content-length", b"content-type",
                                                                        b"content-encoding", b"idempotency-key")]
    sub = {**scope, "method": "GET", "path": path, "raw_path": raw, "query_string": b"", "headers": headers}
    loaded = CapturedResponse()

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    await app(sub, receive, loaded.send)
    return loaded
