"""One event as it leaves the log: its id and type (eventstore.identity), log position, time, who and
which request, the entity it belongs to, and its data."""

from typing import Any

from ..eventstore.identity import event_id, event_type
from ..eventstore.log import StoredNotification

_ORIGIN = ("originator_id", "originator_version", "timestamp", "originator_topic")


def envelope(n: StoredNotification) -> dict[str, Any]:
    event = n.event
    data = {k: v for k, v in vars(event).items() if k not in _ORIGIN}
    return {
        "id": str(event_id(n.originator_id, n.originator_version)),
        "sequence": n.position,
        "time": event.timestamp.isoformat(),
        "type": event_type(n.topic),
        "entity_id": str(n.originator_id),
        "entity_version": n.originator_version,
        "actor": data.pop("actor", None),
        "request_id": data.pop("request_id", None),
        "data": data,
    }
