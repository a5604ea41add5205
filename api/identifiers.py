"""Namespaces on the wire: levels joined by the unit separator 0x1F in paths and parameters.

A server may advertise another separator in /config (`namespace-separator`, URL-encoded); clients that
read it join levels with that one instead. Both are accepted, so clients that ignore the setting keep
working."""

from urllib.parse import unquote

from lakeledger.domain.errors import BadRequest
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
        raise BadRequest("Namespace must not be empty")
    return list(check_namespace(levels(raw)))
