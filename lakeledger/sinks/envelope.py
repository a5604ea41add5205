"""One event as it leaves the log: its id and type (eventstore.identity), log position, time, who and
which request, the entity it belongs to, and its data."""

import json
from typing import Any

import orjson

from lakeledger.eventstore.identity import event_id, event_type_of
from lakeledger.eventstore.log import StoredNotification

_ORIGIN = ("originator_id", "originator_version", "timestamp", "originator_topic")


def envelope(n: StoredNotification) -> dict[str, Any]:
    event = n.event
    data = {k: v for k, v in vars(event).items() if k not in _ORIGIN}
    return {
        "id": str(event_id(n.originator_id, n.originator_version)),
        "sequence": n.position,
        "time": event.timestamp.isoformat(),
        "type": event_type_of(n.topic, event),
        "entity_id": str(n.originator_id),
        "entity_version": n.originator_version,
        "actor": data.pop("actor", None),
        "request_id": data.pop("request_id", None),
        "data": data,
    }


def to_json(value: Any) -> bytes:
    """JSON of an envelope (or its data). Clients may send integers beyond 64 bits, which orjson refuses;
    those few go through the standard library."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return json.dumps(value, default=str).encode()
