"""Stored events as CloudEvents 1.0 (structured JSON, the cloudevents SDK's format), the same for every broker the
log is published to (NATS JetStream, Kafka): the event's id, its type under ``io.lakeledger.``, its log position as
``sequence``, the actor and request id, and the warehouse it belongs to."""

import json
from typing import Any
from uuid import UUID

from cloudevents.core.formats.json import JSONFormat
from cloudevents.core.v1.event import CloudEvent

from lakeledger.eventstore.identity import event_type_of
from lakeledger.eventstore.log import StoredNotification
from lakeledger.sinks.envelope import envelope, to_json

TYPE_PREFIX = "io.lakeledger."
CONTENT_TYPE = JSONFormat.CONTENT_TYPE
_FORMAT = JSONFormat()


# (entity id, warehouse id) of the entities given twice as a list (tables and views, then namespaces)
WAREHOUSES_OF = ("SELECT id, warehouse_id FROM ll_tabulars WHERE id = ANY(%s)"
                 " UNION ALL SELECT id, warehouse_id FROM ll_namespaces WHERE id = ANY(%s)")


class CloudEventMessages:
    def __init__(self, server_id: UUID):
        self.source = f"/lakeledger/{server_id}"
        # Entity id → warehouse id, learnt from the events that carry it (creations, registrations, drops);
        # later events of the same entity do not repeat it.
        self._warehouses: dict[UUID, UUID] = {}

    def unknown(self, batch: list[StoredNotification]) -> list[UUID]:
        """Learns the warehouses the batch's events name; returns the entities still unknown (this process started
        after their creation), to be looked up with ``WAREHOUSES_OF`` and given to ``learn``. An entity gone from
        the read model (a dropped namespace) is published without a warehouse id."""
        for n in batch:
            warehouse = getattr(n.event, "warehouse_id", None)
            if isinstance(warehouse, UUID):
                self._warehouses[n.originator_id] = warehouse
        return list({n.originator_id for n in batch if n.originator_id not in self._warehouses
                     and _entity_type(n) in ("table", "view", "generic-table", "tabular", "namespace")})

    def learn(self, rows) -> None:
        for entity, warehouse in rows:
            self._warehouses[entity] = warehouse

    def message(self, n: StoredNotification) -> tuple[str, str, bytes]:
        """(event id, event type, structured CloudEvent JSON) for one stored event."""
        e = envelope(n)
        entity = e["type"].partition(".")[0]
        attributes: dict[str, Any] = {
            "id": e["id"],
            "source": self.source,
            "type": TYPE_PREFIX + e["type"],
            "subject": e["entity_id"],
            "time": n.event.timestamp,
            "datacontenttype": "application/json",
            "sequence": n.position,
            "entitytype": entity,
            "entityversion": n.originator_version,
            "actor": str(e["actor"] or ""),
            "requestid": str(e["request_id"] or ""),
        }
        warehouse = n.originator_id if entity == "warehouse" else self._warehouses.get(n.originator_id)
        if warehouse is not None:
            attributes["warehouseid"] = str(warehouse)
        # The round trip leaves plain JSON values (no UUIDs, datetimes) for the SDK's encoder.
        data = json.loads(to_json(e["data"]))
        return e["id"], e["type"], _FORMAT.write(CloudEvent(attributes, data))


def _entity_type(n: StoredNotification) -> str:
    return event_type_of(n.topic, n.event).partition(".")[0]
