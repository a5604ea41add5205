"""Our events as the operations of Iceberg's Events API (apache/iceberg PR #12584, ``POST /v1/{prefix}/events``):
pure mapping, no I/O. An event arrives as the history read model keeps it (its type, the entity it changed with the
entity's name at that moment, and the event's own data); it leaves as the PR's ``operation`` object.

The twelve standard operations carry the PR's payloads. Decisions the PR leaves to us:

- ``create-table`` lists the ``TableUpdate``s the request amounts to (the same ones Iceberg's own
  ``TableMetadata`` builder records for a create): a staged create committed later carries the client's updates as
  sent; a plain create request is turned into its updates here. A registration is ``register-table`` (no updates:
  the metadata is in a file the catalog points to).
- A drop is ``drop-table``/``drop-view`` whether soft or hard: for every Iceberg client the object left the catalog
  when dropTable answered, and a consumer that skipped an ``x-`` type would keep serving a table that is gone. A
  soft drop adds ``x-lakeledger-expires-at``; the undrop that may follow is ``x-lakeledger.table.undropped``.
- An unregister (``table.unregistered``; the PR has no operation for it) is ``drop-table`` with ``purge`` false and
  ``x-lakeledger-unregistered``: the table left the catalog and kept its files, which is what a drop without purge
  tells a consumer; registering it again is the ``register-table`` that may follow.
- A commit without updates (a registration over the live table, which only moves the metadata pointer) is
  ``register-table``.
- Everything else (undrop, expiry, purge, protection, namespace moves, generic tables, warehouse changes, tags,
  maintenance policies) is ``x-lakeledger.<our event type>`` with the entity and the event's data, so a client
  ignoring unknown types loses nothing the standard defines."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from lakeledger.domain.names import EXACT, path_key

STANDARD = ("create-table", "register-table", "drop-table", "update-table", "rename-table", "create-view",
            "drop-view", "update-view", "rename-view", "create-namespace", "update-namespace-properties",
            "drop-namespace")
OBJECT_TYPES = ("namespace", "table", "view")
CUSTOM_PREFIX = "x-lakeledger."

# our event type -> the standard operations it can become (the SQL narrows by these before the exact mapping)
SOURCES: dict[str, tuple[str, ...]] = {
    "table.created": ("create-table", "register-table"),
    "table.registered": ("register-table",),
    "table.committed": ("update-table", "register-table"),
    "table.renamed": ("rename-table",),
    "table.dropped": ("drop-table",),
    "table.unregistered": ("drop-table",),
    "view.created": ("create-view",),
    "view.replaced": ("update-view",),
    "view.renamed": ("rename-view",),
    "view.dropped": ("drop-view",),
    "namespace.created": ("create-namespace",),
    "namespace.properties-updated": ("update-namespace-properties",),
    "namespace.dropped": ("drop-namespace",),
}


@dataclass(frozen=True)
class StoredEvent:
    """What the mapping needs of a history row."""

    type: str  # ours: table.committed, view.dropped, namespace.moved ...
    entity_type: str  # table, view, namespace, generic-table, warehouse, tag-definition ...
    entity_id: UUID
    entity_name: Sequence[str]  # the name after the event (a table's is its namespace and its name)
    change: dict[str, Any]  # the event's own data


def history_types_of(operation_types: Sequence[str]) -> list[str]:
    """Our event types that can become any of ``operation_types`` (standard or ``x-lakeledger.<type>``)."""
    wanted = set(operation_types)
    found = {ours for ours, ops in SOURCES.items() if wanted.intersection(ops)}
    found.update(t.removeprefix(CUSTOM_PREFIX) for t in wanted if t.startswith(CUSTOM_PREFIX))
    return sorted(found)


def object_type(event: StoredEvent) -> str | None:
    """namespace, table or view; None for the objects the PR does not know (warehouses, generic tables ...)."""
    return event.entity_type if event.entity_type in OBJECT_TYPES else None


def paths(event: StoredEvent) -> list[list[str]]:
    """The names the event concerns: the object's after it, and before it for a rename or move (a name filter
    matches an object renamed into or out of its subtree)."""
    found = [list(event.entity_name)]
    change = event.change
    if "from_name" in change and "from_namespace" in change:
        found.append([*change["from_namespace"], change["from_name"]])
    elif "from_path" in change:
        found.append(list(change["from_path"]))
    elif "from_namespace" in change and event.entity_name:
        found.append([*change["from_namespace"], event.entity_name[-1]])
    return found


def matches_name(event: StoredEvent, entries: Sequence[Sequence[str]], matching: str = EXACT) -> bool:
    """Level-wise prefix matching: an entry matches an object whose path it equals or begins, each level compared
    as the warehouse compares names (``matching``: case-insensitive by default, docs/names.md)."""
    keys = [path_key(list(entry), matching) for entry in entries]
    return any(path_key(path[:len(key)], matching) == key for path in paths(event) for key in keys)


def operation(event: StoredEvent) -> dict[str, Any]:
    change, typ = event.change, event.type
    name = list(event.entity_name)
    ident = {"namespace": name[:-1], "name": name[-1]} if name else {"namespace": [], "name": ""}
    uuid = str(event.entity_id)
    if typ == "table.created":
        request = change.get("request") or {}
        if change.get("origin") == "register":
            return {"operation-type": "register-table", "identifier": ident, "table-uuid": uuid}
        updates = request.get("updates") if change.get("origin") == "commit" else table_create_updates(request, uuid)
        return {"operation-type": "create-table", "identifier": ident, "table-uuid": uuid, "updates": updates or []}
    if typ == "table.registered":
        return {"operation-type": "register-table", "identifier": ident, "table-uuid": uuid}
    if typ == "table.committed":
        if not change.get("updates"):
            return {"operation-type": "register-table", "identifier": ident, "table-uuid": uuid}
        return {"operation-type": "update-table", "identifier": ident, "table-uuid": uuid,
                "updates": change["updates"], "requirements": change.get("requirements") or []}
    if typ == "view.created":
        return {"operation-type": "create-view", "identifier": ident, "view-uuid": uuid,
                "updates": view_create_updates(change.get("request") or {}, uuid)}
    if typ == "view.replaced":
        return {"operation-type": "update-view", "identifier": ident, "view-uuid": uuid,
                "updates": change.get("updates") or [], "requirements": change.get("requirements") or []}
    if typ in ("table.renamed", "view.renamed"):
        kind = typ.partition(".")[0]
        return {"operation-type": f"rename-{kind}", f"{kind}-uuid": uuid,
                "source": {"namespace": list(change["from_namespace"]), "name": change["from_name"]},
                "destination": {"namespace": list(change["to_namespace"]), "name": change["to_name"]}}
    if typ in ("table.dropped", "view.dropped"):
        kind = typ.partition(".")[0]
        dropped: dict[str, Any] = {"operation-type": f"drop-{kind}", "identifier": ident, f"{kind}-uuid": uuid}
        if kind == "table":
            dropped["purge"] = bool(change.get("purge_requested"))
        if change.get("expires_at") is not None:
            dropped["x-lakeledger-expires-at"] = str(change["expires_at"])
        return dropped
    if typ == "table.unregistered":
        return {"operation-type": "drop-table", "identifier": ident, "table-uuid": uuid, "purge": False,
                "x-lakeledger-unregistered": True}
    if typ == "namespace.created":
        return {"operation-type": "create-namespace", "namespace": name,
                "properties": change.get("properties") or {}}
    if typ == "namespace.properties-updated":
        return {"operation-type": "update-namespace-properties", "namespace": name,
                "updated": sorted(change.get("updated") or {}), "removed": sorted(change.get("removed") or []),
                "missing": []}
    if typ == "namespace.dropped":
        return {"operation-type": "drop-namespace", "namespace": name}
    return {"operation-type": CUSTOM_PREFIX + typ, "object-type": event.entity_type, "object-uuid": uuid,
            "name": name, "change": change}


def table_create_updates(request: dict[str, Any], table_uuid: str) -> list[dict[str, Any]]:
    """The updates a createTable request amounts to, in the order Iceberg's metadata builder records them."""
    updates: list[dict[str, Any]] = [{"action": "assign-uuid", "uuid": table_uuid}]
    properties = dict(request.get("properties") or {})
    version = properties.get("format-version")
    updates.append({"action": "upgrade-format-version", "format-version": int(version) if version else 2})
    if request.get("schema") is not None:
        updates += [{"action": "add-schema", "schema": request["schema"]},
                    {"action": "set-current-schema", "schema-id": -1}]
    spec = request.get("partition-spec") or {"spec-id": 0, "fields": []}
    updates += [{"action": "add-spec", "spec": spec}, {"action": "set-default-spec", "spec-id": -1}]
    order = request.get("write-order") or {"order-id": 0, "fields": []}
    updates += [{"action": "add-sort-order", "sort-order": order},
                {"action": "set-default-sort-order", "sort-order-id": -1}]
    if request.get("location"):
        updates.append({"action": "set-location", "location": request["location"]})
    if properties:
        updates.append({"action": "set-properties", "updates": properties})
    return updates


def view_create_updates(request: dict[str, Any], view_uuid: str) -> list[dict[str, Any]]:
    """The updates a createView request amounts to."""
    updates: list[dict[str, Any]] = [{"action": "assign-uuid", "uuid": view_uuid},
                                     {"action": "upgrade-format-version", "format-version": 1}]
    if request.get("schema") is not None:
        updates.append({"action": "add-schema", "schema": request["schema"]})
    if request.get("location"):
        updates.append({"action": "set-location", "location": request["location"]})
    if request.get("properties"):
        updates.append({"action": "set-properties", "updates": dict(request["properties"])})
    if request.get("view-version") is not None:
        updates += [{"action": "add-view-version", "view-version": request["view-version"]},
                    {"action": "set-current-view-version", "view-version-id": -1}]
    return updates
