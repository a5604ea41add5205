"""Names on the wire.

Namespaces: levels joined by the unit separator 0x1F in paths and parameters. A server may advertise
another separator in /config (`namespace-separator`, URL-encoded); clients that read it join levels
with that one instead. Both are accepted, so clients that ignore the setting keep working.

Paths: a name may hold `/` (sent as `%2F`), so routing cannot use the decoded path, where that `/`
would split the name in two. Requests are routed on the raw path instead: each segment is decoded
once, with `%` and `/` left escaped so a segment stays one segment, and the path parameters are
unescaped by ``Segment`` once a route matched.

A `+` in a path is a space: Iceberg's Java client (Spark, Trino) encodes paths as HTML forms do, a space as `+`,
where other clients send `%20`; Lakekeeper reads it so too. A name holding `+` itself is sent as `%2B`; new names may
not hold one (domain.names.check_new_name), so `%2B` only reaches names created before that rule."""

from urllib.parse import unquote, unquote_to_bytes
from uuid import UUID

from starlette.convertors import StringConvertor, register_url_convertor

from lakeledger.domain.errors import BadRequest, InvalidArgument, NoSuchWarehouse
from lakeledger.domain.names import check_namespace

SEPARATOR = "\x1f"
DEFAULT_ADVERTISED = "%1F"

_alternative: str | None = None


def use_separator(advertised: str) -> None:
    """Called once at start-up with the ``namespace-separator`` setting, as /config advertises it."""
    global _alternative
    separator = unquote(advertised)
    if not separator:
        raise ValueError("The namespace separator must not be empty")
    _alternative = None if separator == SEPARATOR else separator


def levels(raw: str) -> list[str]:
    if _alternative is not None:
        raw = raw.replace(_alternative, SEPARATOR)
    return raw.split(SEPARATOR)


def parse_namespace(raw: str) -> list[str]:
    if raw is None or raw == "":
        raise InvalidArgument("Namespace must not be empty")
    return list(check_namespace(levels(raw)))


def warehouse_id_of(prefix: str) -> UUID:
    """The warehouse a catalog prefix names (NoSuchWarehouse for one that is not a warehouse id)."""
    try:
        return UUID(prefix)
    except ValueError:
        raise NoSuchWarehouse(f"Warehouse does not exist: {prefix}") from None


def routing_path(scope) -> str:
    """The path to route ``scope`` on: segments decoded once, `%` and `/` inside a segment still escaped.
    Raises BadRequest for a segment whose bytes are not UTF-8 (the server's decoding would replace them and
    so change the name)."""
    raw = scope.get("raw_path")
    if raw is None:  # not from an HTTP server (an in-process client): the decoded path is all there is
        return scope["path"].replace("%", "%25")
    if raw.isascii() and b"+" not in raw:
        if b"%" not in raw:
            return scope["path"]  # nothing was decoded, so nothing can have been lost (the hot path)
        if b"%2F" not in raw and b"%2f" not in raw and b"%25" not in raw and "\ufffd" not in scope["path"]:
            # The server's decoding (once, invalid UTF-8 replaced by U+FFFD) made no `/` or `%` and replaced
            # nothing, so it is the routing path already: e.g. levels joined by %1F.
            return scope["path"]
    try:
        return "/".join(_segment(part) for part in raw.split(b"/"))
    except UnicodeDecodeError:
        raise BadRequest("The request path is not valid UTF-8 once percent-decoded") from None


def _segment(part: bytes) -> str:
    part = part.replace(b"+", b"%20")  # before decoding: a `%2B` stays a `+`
    text = unquote_to_bytes(part).decode("utf-8") if b"%" in part else part.decode("utf-8")
    return text.replace("%", "%25").replace("/", "%2F")


def segment(value: str) -> str:
    """A path parameter as the client meant it (the inverse of ``routing_path``'s escaping)."""
    return unquote(value) if "%" in value else value


class Segment(StringConvertor):
    """The convertor of every path parameter: one segment of the routing path, unescaped."""

    def convert(self, value: str) -> str:
        return segment(value)


def route_on_segments() -> None:
    """Makes ``Segment`` the convertor of every plain path parameter (`{name}`). Called before the routers are
    included: FastAPI compiles an included route's path, with the convertors registered then, when it first
    routes a request."""
    register_url_convertor("str", Segment())
