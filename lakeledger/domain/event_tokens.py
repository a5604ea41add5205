"""The Events API's continuation token: opaque to clients, it carries the warehouse, the log position the next page
starts after, and a digest of the filters it was made for. A token presented for another warehouse or with other
filters is refused (400) rather than silently resumed under different terms. It is not secret and not signed: a
made-up position only moves a reader within what it may already read."""

import base64
import hashlib
from collections.abc import Mapping
from typing import Any
from uuid import UUID

import orjson

VERSION = 1


class BadToken(ValueError):
    pass


def filter_digest(filters: Mapping[str, Any]) -> str:
    """The same for the same filters however a client orders its lists (absent, null and [] differ)."""
    canonical = {key: (sorted(orjson.dumps(v).decode() for v in value) if isinstance(value, list) else value)
                 for key, value in filters.items()}
    return hashlib.sha256(orjson.dumps(canonical, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


def encode(warehouse_id: UUID, position: int, digest: str) -> str:
    raw = orjson.dumps({"v": VERSION, "w": str(warehouse_id), "p": position, "f": digest})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode(token: str, warehouse_id: UUID, digest: str) -> int:
    """The position the token resumes after; BadToken when it is not one of ours, or not for this warehouse and
    these filters."""
    try:
        fields = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        raise BadToken("The continuation-token is not one this server issued") from None
    if not isinstance(fields, dict) or fields.get("v") != VERSION:
        raise BadToken("The continuation-token is not one this server issued")
    position = fields.get("p")
    if not isinstance(position, int) or isinstance(position, bool) or position < 0:
        raise BadToken("The continuation-token is not one this server issued")
    if fields.get("w") != str(warehouse_id):
        raise BadToken("The continuation-token was issued for another warehouse")
    if fields.get("f") != digest:
        raise BadToken("The continuation-token was issued for other filters: send the filters it was made with, "
                       "or start without a token")
    return position
