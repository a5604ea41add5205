"""Names of warehouses, namespaces, tables and views.

Iceberg lets a name be almost any string; we refuse only what cannot round-trip through the REST
path encoding, storage or a person's terminal: empty names, control characters (the unit separator
0x1F joins namespace levels on the wire), unpaired surrogates (not characters: UTF-8 and Postgres
cannot hold them) and absurd lengths. A `/` is fine: paths carry it as `%2F`. A refused name is an
invalid argument, as in Iceberg's reference server (so Java clients raise IllegalArgumentException).

A new name must be in Unicode's composed form (NFC): "é" as U+00E9, not "e" + U+0301 (NFD). The two look the same
and mean the same to a person, so they must not name two objects; but rewriting a decomposed name into the composed
one would store a name the client never sent (and cannot find among the names it lists). Refusing the decomposed
spelling when a name is given keeps one name one object, and tells the client at once. Keyboards and most systems
send NFC. A name is looked up as sent: an object an earlier version created under a decomposed name stays reachable
by that spelling.
"""

import unicodedata
from uuid import UUID, uuid5

from lakeledger.domain.errors import InvalidArgument, NamespaceDepthExceeded

MAX_NAME_LENGTH = 512
# the most levels any request may name (deeper is refused before anything is looked up), and the highest
# LAKELEDGER__MAX_NAMESPACE_DEPTH: namespaces created under a higher setting stay reachable after it is lowered
MAX_NAMESPACE_DEPTH = 16
# how deep a new namespace may be by default: Lakekeeper's limit, so what one catalog accepts the other does too
DEFAULT_NAMESPACE_DEPTH = 5

# How the names inside a warehouse (of its namespaces, tables and views) are matched, fixed when it is created
# (docs/names.md). Case-insensitive is Lakekeeper's rule: a name is found in any case, two names that differ only
# in case cannot both exist, and the first spelling is kept. Exact is the rule of warehouses created before the
# setting existed (their Warehouse.Created events are upcast to it), so their names mean what they always meant.
CASE_INSENSITIVE = "case-insensitive"
EXACT = "exact"
NAME_MATCHINGS = (CASE_INSENSITIVE, EXACT)

_LEDGER_NAMESPACE = UUID("6f1a4f8e-3c0b-5b7e-9a51-0c7e6f1b2d3a")


def check_name(name: object, what: str) -> str:
    if not isinstance(name, str):
        raise InvalidArgument(f"{what} name must be a string")
    if not name:
        raise InvalidArgument(f"{what} name must not be empty")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidArgument(f"{what} name is longer than {MAX_NAME_LENGTH} characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidArgument(f"{what} name must not contain control characters")
    if not name.isascii() and any("\ud800" <= c <= "\udfff" for c in name):
        raise InvalidArgument(f"{what} name must not contain unpaired surrogates")
    return name


def check_composed_name(name: object, what: str) -> str:
    """A name given now (a create or a rename of any object): ``check_name``'s rules, in NFC."""
    checked = check_name(name, what)
    if not checked.isascii() and not unicodedata.is_normalized("NFC", checked):
        raise InvalidArgument(f"{what} name must be in Unicode normalization form C (NFC, composed characters): "
                              f"{unicodedata.normalize('NFC', checked)!r} is its composed spelling")
    return checked


def check_new_name(name: object, what: str) -> str:
    """The name of a namespace, table or view given now (a create, a register, a rename's destination):
    ``check_composed_name``'s rules and no `+`. Iceberg's Java client (Spark, Trino) sends a space in a path as `+`,
    so a `+` in a path segment is read as a space (as Lakekeeper does); a name holding `+` would need `%2B` in every
    path, so no new name may hold one. Names given before this rule keep their `+` and are reached as `%2B`."""
    checked = check_composed_name(name, what)
    if "+" in checked:
        raise InvalidArgument(f"{what} name must not contain '+' (a '+' in a request path means a space)")
    return checked


def check_namespace(levels: object) -> tuple[str, ...]:
    if not isinstance(levels, (list, tuple)) or not levels:
        raise InvalidArgument("Namespace must be a non-empty list of names")
    if len(levels) > MAX_NAMESPACE_DEPTH:
        raise InvalidArgument(f"Namespace is deeper than {MAX_NAMESPACE_DEPTH} levels")
    return tuple(check_name(level, "Namespace") for level in levels)


def check_new_namespace_depth(levels: tuple[str, ...], limit: int) -> None:
    """A namespace created now (or a namespace path a new namespace is made at) may be at most ``limit`` levels deep;
    refused with Lakekeeper's error type and message."""
    if len(levels) > limit:
        raise NamespaceDepthExceeded(f"Namespace exceeds maximum depth of {limit}")


def name_key(name: str, matching: str) -> str:
    """What two names must share to be one name under ``matching``: the name itself when exact; else its case
    folded (``str.casefold``, Unicode's full case folding: "Straße" and "STRASSE" are one name) between two NFC
    normalisations, so that a name and its decomposed spelling fold alike too. Pure: the name claims, the read
    models and every lookup derive keys with this one function."""
    if matching == EXACT:
        return name
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", name).casefold())


def path_key(levels: tuple[str, ...] | list[str], matching: str) -> list[str]:
    """``name_key`` of each level of a namespace path."""
    return [name_key(level, matching) for level in levels]


def claim_id(scope: str, container_id: UUID, name: str) -> UUID:
    """The id of the claim on ``name`` inside a container (a project, warehouse or namespace).

    Deterministic, so that two concurrent creators of one name meet on one aggregate."""
    return uuid5(_LEDGER_NAMESPACE, f"{scope}\x1f{container_id}\x1f{name}")


def server_aggregate_id(server_id: UUID) -> UUID:
    return uuid5(_LEDGER_NAMESPACE, f"server\x1f{server_id}")


def dotted(levels: tuple[str, ...] | list[str]) -> str:
    return ".".join(levels)
