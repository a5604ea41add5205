"""What a request may carry into the event log, checked once where requests enter (lakeledger/api/context.py) for every
route, the commit fast path included, before any service runs: every value of the log must be one that every read model,
the rebuild and every Iceberg client can take back.

- Text: JSON lets a string hold an unpaired surrogate (`"\\ud800"`), which UTF-8 and Postgres cannot hold, and NUL
  (`"\\u0000"`), which Postgres `text` cannot hold; a percent-encoded path or query may decode to bytes that are not
  UTF-8 (silently replaced otherwise) or to NUL. Refused in every string of a body (keys too), path and query.
- Integers: Iceberg's REST spec types each integer int32 (`type: integer`: ids, field ids, schema, spec and sort
  order ids, format and view versions) or int64 (snapshot ids, sequence numbers, timestamps, sizes, counts); Java
  clients cannot read a value outside its type. Every integer of a body must fit int64, one under a key the spec
  types int32 must fit int32, and a number under such a key must be an integer (not 1.0, not true).
- Numbers JSON does not have (NaN, Infinity, a float too large to be finite) are refused.
- Nesting: a body nested deeper than ``MAX_JSON_DEPTH`` is refused before any model (or recursive schema code)
  sees it. Lakekeeper's JSON parser (serde_json) stops at 128 as well.

A body that is not JSON is left to the route to refuse, as it always was."""

import json
import math
from typing import Any
from urllib.parse import unquote_to_bytes

MAX_JSON_DEPTH = 128
INT32 = (-(2 ** 31), 2 ** 31 - 1)
INT64 = (-(2 ** 63), 2 ** 63 - 1)
_TOO_DEEP = f"Invalid request: the body is nested deeper than {MAX_JSON_DEPTH} levels"
_MAX_INTEGER_DIGITS = 20  # longer than any int64 (with its sign): refused before Python parses it

# Keys Iceberg's rest-catalog-open-api.yaml types `integer` without `format: int64`, which its reference
# implementation reads as Java ints; the value under the key, or each integer of a list under it.
INT32_KEYS = frozenset({
    "id", "element-id", "key-id", "value-id", "source-id", "field-id", "fields", "equality-ids",
    "identifier-field-ids", "projected-field-ids", "schema-id", "schema-ids", "current-schema-id", "spec-id",
    "spec-ids", "default-spec-id", "sort-order-id", "order-id", "default-sort-order-id", "last-column-id",
    "last-assigned-field-id", "last-partition-id", "last-assigned-partition-id", "format-version", "version-id",
    "current-version-id", "view-version-id", "min-snapshots-to-keep",
})
# Keys it types `format: int64` (and Lakekeeper's `expiration-seconds`, int64 in its spec): any integer fits int64
# here too, but a number must be an integer.
INT64_KEYS = frozenset({
    "snapshot-id", "snapshot-ids", "parent-snapshot-id", "current-snapshot-id", "start-snapshot-id",
    "end-snapshot-id", "sequence-number", "last-sequence-number", "timestamp-ms", "last-updated-ms",
    "max-ref-age-ms", "max-snapshot-age-ms", "added-rows", "first-row-id", "next-row-id", "file-size-in-bytes",
    "file-footer-size-in-bytes", "content-offset", "content-size-in-bytes", "record-count", "split-offsets",
    "min-rows-requested", "expiration-seconds",
})


class Refused(ValueError):
    """A request value the log must not take; ``str()`` says which and why."""


def body_problem(body: bytes) -> str | None:
    """Why the JSON ``body`` must be refused, naming where (e.g. ``updates[0].snapshot-id``), or None."""
    if not body:
        return None
    try:
        parsed = json.loads(body, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except Refused as e:
        return str(e)
    except RecursionError:
        return _TOO_DEEP
    except ValueError:
        return None  # not JSON: the route says so
    try:
        _walk(parsed)
    except Refused as e:
        return str(e)
    return None


def _int(text: str) -> int:
    if len(text) > _MAX_INTEGER_DIGITS:
        raise Refused(f"Invalid request: the integer {text[:24]}... does not fit a 64-bit integer")
    return int(text)


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Refused(f"Invalid request: the number {text[:24]} is too large")
    return value


def _constant(text: str):
    raise Refused(f"Invalid request: {text} is not a JSON number")




def _walk(value: Any) -> None:
    """Checks every string, key and number of a parsed body; iterative, so no body can exhaust the stack. Where a
    value sits is kept as a linked (parent, step) pair and spelled out only for the message of a refusal."""
    stack: list[tuple[Any, tuple[Any, ...] | None, int, str | None]] = [(value, None, 1, None)]
    pop, push = stack.pop, stack.append
    while stack:
        value, at, depth, key = pop()
        kind = type(value)
        if kind is str:
            if "\x00" in value or not value.isascii() and _unpaired(value):
                raise Refused(_text_problem(value, _where(at)))
        elif kind is dict:
            if depth > MAX_JSON_DEPTH:
                raise Refused(_TOO_DEEP)
            for name, item in value.items():
                if "\x00" in name or not name.isascii() and _unpaired(name):
                    raise Refused(_text_problem(name, f"a key of {_where(at)}"))
                push((item, (at, name), depth + 1, name))
        elif kind is list:
            if depth > MAX_JSON_DEPTH:
                raise Refused(_TOO_DEEP)
            # a list's items are typed by the key the list is under (e.g. snapshot-ids)
            for i, item in enumerate(value):
                push((item, (at, i), depth + 1, key))
        elif value is not None:
            _check_number(value, at, key)


def _where(at: tuple | None) -> str:
    steps = []
    while at is not None:
        at, step = at
        steps.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return "".join(reversed(steps)).lstrip(".") or "the body"


def _text_problem(text: str, where: str) -> str:
    if "\x00" in text:
        return f"Invalid request: {where} holds NUL (\\u0000), which cannot be stored"
    return f"Invalid request: {where} holds an unpaired surrogate (\\ud800-\\udfff alone), which is not a character"


def _check_number(value: object, at: tuple | None, key: str | None) -> None:
    int32 = key in INT32_KEYS
    if type(value) is not int:  # a float or a boolean: refused where the spec says integer
        if int32 or key in INT64_KEYS:
            raise Refused(f"Invalid request: {_where(at)} must be an integer, not {json.dumps(value)}")
        return
    low, high = INT32 if int32 else INT64
    if not low <= value <= high:
        raise Refused(f"Invalid request: {_where(at)} = {value} does not fit a {32 if int32 else 64}-bit integer")


def _unpaired(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def query_problem(query_string: bytes) -> str | None:
    """Why a query string must be refused: not UTF-8 once percent-decoded, or holding NUL."""
    if b"%" not in query_string and query_string.isascii():
        return "The query string holds NUL" if b"\x00" in query_string else None
    try:
        decoded = unquote_to_bytes(query_string.replace(b"+", b" ")).decode("utf-8")
    except UnicodeDecodeError:
        return "The query string is not valid UTF-8 once percent-decoded"
    if "\x00" in decoded:
        return "The query string holds NUL (%00), which no name or value may hold"
    return None


def path_problem(path: str) -> str | None:
    """Why a (decoded) request path must be refused."""
    if "\x00" in path:
        return "The request path holds NUL (%00), which no name may hold"
    return None
