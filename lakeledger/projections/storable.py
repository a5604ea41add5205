"""Events as read models can store them: the one escaping rule between the log and every read model.

The log holds whatever JSON an event was recorded with, and a database upgraded from an older version may hold
values that Postgres cannot: ``text`` and ``jsonb`` refuse U+0000 (jsonb refuses the ``\\u0000`` escape too), an
unpaired surrogate is no character and cannot be encoded to UTF-8, jsonb refuses NaN and infinities, and a btree
index entry holds at most 2,704 bytes, so a megabyte-long name cannot be indexed. A read model that met such a
value failed on it for ever. Every event reaches the read models through ``storable`` (lakeledger/projections/logged.py
``decode``, which the runners and the rebuild read through, and ``ProjectionDriver``'s in-append paths), so the
live projections and a rebuild see the same values and write the same rows:

* U+0000 and every unpaired surrogate, in any string at any depth (dict keys included), reads back as U+FFFD, the
  replacement character;
* NaN, Infinity and -Infinity read back as the strings ``"nan"``, ``"inf"`` and ``"-inf"`` (as Python writes them,
  and as the history always stored them);
* an event's text fields that read models index (``INDEXED``: names, namespace paths, user and member ids, actors,
  request ids, tuple ends, locations), and the items of such list fields, longer than ``IDENTIFIER_CHARS``
  characters (the API's own limit for a name, so nothing it accepts is changed; ``LOCATION_CHARS`` for a location)
  read back as their longest prefix that fits with ``…`` and the first 16 hex digits of the SHA-256 of the whole
  value, so two long values still differ. Every other text (requests, updates, properties, descriptions, metadata file
  locations) is kept whole: nothing indexes it;
* integers of any size are kept (jsonb numbers are arbitrary precision), as is nesting (nothing here recurses:
  the walk keeps its own stack).

Every value that needs none of this is the very object the log decoded, and an event that needs none of it is the
event itself: escaping costs nothing for the events a validated API records."""

import copy
import hashlib
import math
import re
from collections.abc import Iterator
from typing import Any

from lakeledger.domain.names import MAX_NAME_LENGTH

REPLACEMENT = "\ufffd"
IDENTIFIER_CHARS = MAX_NAME_LENGTH
# a table's location is indexed with its warehouse's id: what fits a btree entry (2,704 bytes) in ASCII
LOCATION_CHARS = 2600
# the event fields read models index: a megabyte in one of them would fail the index, not the read model's logic
INDEXED = frozenset({"name", "new_name", "path", "to_path", "namespace", "to_namespace", "to_name", "location",
                     "user_id", "member_id", "member_type", "actor", "request_id", "object", "relation", "grantee",
                     "target_type", "policy_type"})
_DIGEST_HEX = 16

_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")
_ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp"})


def storable(event: Any, state: bytes | None = None) -> Any:
    """``event`` as read models may store it (the module's rule): the event itself when nothing needs escaping,
    otherwise a copy with the escaped values. ``state``, the JSON text it was decoded from, lets the walk through
    its nested values be skipped when the text shows nothing it would change."""
    return _escaped(event, state is None or _may_need_escaping(state))


def _may_need_escaping(state: bytes) -> bool:
    """Whether a stored event's JSON text holds what may decode to a value needing the walk: the NUL escape, a
    surrogate escape (paired ones too: a false alarm costs only the walk), the non-finite constants. The JSON writer
    escapes only control characters, so most texts hold no ``\\u`` at all."""
    return ((b"\\u" in state and (b"\\u0000" in state or b"\\ud" in state or b"\\uD" in state))
            or b"NaN" in state or b"Infinity" in state)


def bounded_fields(event: Any) -> Any:
    """``storable`` without the walk through nested values, for events applied inside their own append: a value
    Postgres refuses fails that append (nothing is recorded, so no rebuild can differ; the API refuses such values
    before, with a 400), and walking every commit's updates there would cost a tenth of a commit. The bound on long
    fields is applied as everywhere, so the rows match a rebuild's."""
    return _escaped(event, False)


def _escaped(event: Any, deep: bool) -> Any:
    changed: dict[str, Any] = {}
    for name, value in vars(event).items():
        escaped = storable_value(value) if deep and name not in _ENVELOPE else value
        if name in INDEXED:
            limit = LOCATION_CHARS if name == "location" else IDENTIFIER_CHARS
            kind = type(escaped)
            if kind is str:
                escaped = bounded(escaped, limit)
            elif (kind is list or kind is tuple) and any(type(i) is str and len(i) > limit for i in escaped):
                escaped = [bounded(i, limit) if type(i) is str else i for i in escaped]
        if escaped is not value:
            changed[name] = escaped
    if not changed:
        return event
    escaped_event = copy.copy(event)
    for name, value in changed.items():
        object.__setattr__(escaped_event, name, value)  # events are frozen dataclasses
    return escaped_event


def storable_value(value: Any) -> Any:
    """Any JSON-like value with every string and non-finite number escaped; the value itself when it needs none.
    Iterative: a value nested deeper than the interpreter's recursion limit is walked as any other."""
    leaf = _leaf(value)
    if leaf is not _CONTAINER:
        return leaf
    # each frame: the container, its items still to walk, its items walked (a nested container is walked on a frame
    # of its own, its place in the parent's list taken by a placeholder until it is done)
    stack: list[tuple[Any, Iterator, list]] = [(value, _items(value), [])]
    while True:
        container, items, escaped = stack[-1]
        keyed = isinstance(container, dict)
        for item in items:
            if keyed:
                key, item = item
                key = _text(key) if isinstance(key, str) else key
            leaf = _leaf(item)
            if leaf is _CONTAINER:
                escaped.append((key, None) if keyed else None)
                stack.append((item, _items(item), []))
                break
            escaped.append((key, leaf) if keyed else leaf)
        else:
            stack.pop()
            made = _rebuilt(container, escaped)
            if not stack:
                return made
            parent, _, siblings = stack[-1]
            siblings[-1] = (siblings[-1][0], made) if isinstance(parent, dict) else made


def _items(container: Any) -> Iterator:
    return iter(container.items()) if isinstance(container, dict) else iter(container)


_CONTAINER = object()


def _leaf(value: Any) -> Any:
    """A scalar escaped, or ``_CONTAINER`` for a dict, list or tuple (walked by the caller)."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, (dict, list, tuple)):
        return _CONTAINER
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _rebuilt(container: Any, escaped: list) -> Any:
    """The container itself when no item changed, else a new one with the escaped items."""
    if isinstance(container, dict):
        if len(escaped) == len(container) and all(
                k is ok and v is ov for (k, v), (ok, ov) in zip(escaped, container.items(), strict=True)):
            return container
        return dict(escaped)
    if all(e is o for e, o in zip(escaped, container, strict=True)):
        return container
    return list(escaped)


def _text(value: str) -> str:
    if "\x00" not in value and (value.isascii() or _encodable(value)):
        return value
    return _NOT_TEXT.sub(REPLACEMENT, value)


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def bounded(value: str, limit: int) -> str:
    """``value`` when it has at most ``limit`` characters, else its longest prefix that fits with ``…`` and a digest
    of the whole."""
    if len(value) <= limit:
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_HEX]
    return value[:limit - 1 - _DIGEST_HEX] + "\u2026" + digest
