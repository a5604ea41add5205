"""Namespaces on the wire: levels joined by the unit separator 0x1F in paths and parameters."""

from ..domain.errors import BadRequest
from ..domain.names import check_namespace

SEPARATOR = "\x1f"


def parse_namespace(raw: str) -> list[str]:
    if raw is None or raw == "":
        raise BadRequest("Namespace must not be empty")
    return list(check_namespace(raw.split(SEPARATOR)))
