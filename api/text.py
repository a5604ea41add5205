"""Text from clients must be Unicode that can be stored: JSON lets a string hold an unpaired surrogate
(`"\\ud800"`), which Postgres (and UTF-8) cannot take, and a percent-encoded query may decode to bytes
that are not UTF-8, which would be silently replaced. Both are refused here, where requests enter,
instead of in every router."""

import json
from urllib.parse import unquote_to_bytes


def lone_surrogate(body: bytes) -> str | None:
    """Where the JSON ``body`` holds a string with an unpaired surrogate (e.g. ``namespace[0]``), or None.
    A body that is not JSON is left to the route to refuse."""
    # A surrogate gets into a parsed string only from a \\u escape, or from its UTF-8-like bytes (ED A0-BF ..),
    # which the JSON parser decodes with surrogatepass; a body with neither needs no parsing here.
    if b"\\u" not in body and b"\xed" not in body:
        return None
    try:
        parsed = json.loads(body)  # the parser FastAPI uses, so it sees the strings the route would
    except ValueError:
        return None
    return _find(parsed)


def _find(value, where: str = "") -> str | None:
    stack = [(value, where)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            if _unpaired(value):
                return where or "the body"
        elif isinstance(value, dict):
            for key, item in value.items():
                if _unpaired(key):
                    return f"a key of {where or 'the body'}"
                stack.append((item, f"{where}.{key}" if where else key))
        elif isinstance(value, list):
            stack.extend((item, f"{where}[{i}]") for i, item in enumerate(value))
    return None


def _unpaired(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def query_is_utf8(query_string: bytes) -> bool:
    if b"%" not in query_string and query_string.isascii():
        return True
    try:
        unquote_to_bytes(query_string).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
