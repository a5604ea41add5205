"""Sentences for table commits, from the Iceberg updates as the client sent them: "appended snapshot 81…: +2
files, +1,000 rows", "added column note (string)", "set properties a, b".

Pure functions of the updates and the table's previous schema, so the history projection replays them to the
same words. Client data is arbitrary JSON: anything unexpected falls back to the update's action name."""

from typing import Any

Fields = dict[str, list[str]]  # field id (as text, JSON keys are strings) -> [name, type]

_SNAPSHOT_VERBS = {"append": "appended snapshot", "overwrite": "committed overwrite snapshot",
                   "delete": "committed delete snapshot", "replace": "committed replace snapshot"}
# (summary key, sign, singular noun, plural noun), in the order they are read out
_COUNTS = (("added-data-files", "+", "file", "files"), ("deleted-data-files", "-", "file", "files"),
           ("added-delete-files", "+", "delete file", "delete files"),
           ("removed-delete-files", "-", "delete file", "delete files"),
           ("added-records", "+", "row", "rows"), ("deleted-records", "-", "row", "rows"))
# updates that only accompany another one (pyiceberg sends set-current-schema -1 with each add-schema, a
# branch move with each snapshot): said only when nothing else in the commit is
_ACCOMPANYING = {"set-current-schema", "set-snapshot-ref", "set-default-spec", "set-default-sort-order",
                 "assign-uuid"}


def fields_of(schema: Any) -> Fields | None:
    if not isinstance(schema, dict) or not isinstance(schema.get("fields"), list):
        return None
    out: Fields = {}
    for field in schema["fields"]:
        if isinstance(field, dict) and "id" in field and "name" in field:
            out[str(field["id"])] = [str(field["name"]), _type_name(field.get("type"))]
    return out


def schema_in(updates: Any) -> Fields | None:
    """The fields of the last schema a list of updates adds (None when it adds none)."""
    found = None
    for update in updates if isinstance(updates, list) else ():
        if isinstance(update, dict) and update.get("action") == "add-schema":
            found = fields_of(update.get("schema")) or found
    return found


def describe_commit(updates: Any, previous: Fields | None) -> str:
    if not isinstance(updates, list) or not updates:
        return "committed without changes"
    said: list[str] = []
    fields = previous
    for update in updates:
        if not isinstance(update, dict):
            continue
        action = str(update.get("action"))
        if action == "add-schema":
            new = fields_of(update.get("schema"))
            said.extend(_schema_change(fields, new, update.get("schema")))
            fields = new or fields
        elif action in _ACCOMPANYING:
            continue
        else:
            said.append(_describe(action, update))
    if not said:
        said = [_describe(str(u.get("action")), u) for u in updates if isinstance(u, dict)] or ["committed"]
    return "; ".join(said)


def _describe(action: str, update: dict) -> str:
    try:
        if action == "add-snapshot":
            return _snapshot(update.get("snapshot") or {})
        if action == "set-properties":
            return "set properties " + ", ".join(sorted(update.get("updates") or {}))
        if action == "remove-properties":
            return "removed properties " + ", ".join(sorted(update.get("removals") or []))
        if action == "remove-snapshots":
            count = len(update.get("snapshot-ids") or [])
            return f"expired {count} snapshot{'s' if count != 1 else ''}"
        if action == "upgrade-format-version":
            return f"upgraded to format version {update['format-version']}"
        if action == "set-location":
            return f"moved to {update['location']}"
        if action in ("add-spec", "set-default-spec"):
            return "changed the partition spec"
        if action in ("add-sort-order", "set-default-sort-order"):
            return "changed the sort order"
        if action == "set-current-schema":
            return f"set the current schema to {update['schema-id']}"
        if action == "set-snapshot-ref":
            return f"set {update.get('type', 'branch')} {update['ref-name']} to snapshot {update['snapshot-id']}"
        if action == "remove-snapshot-ref":
            return f"removed ref {update['ref-name']}"
        if action == "assign-uuid":
            return f"assigned uuid {update['uuid']}"
    except (KeyError, TypeError, AttributeError, ValueError):
        pass
    return action


def _snapshot(snapshot: dict) -> str:
    given = snapshot.get("summary")
    summary: dict[str, Any] = given if isinstance(given, dict) else {}
    verb = _SNAPSHOT_VERBS.get(summary.get("operation", "append"), f"committed {summary.get('operation')} snapshot")
    counts = []
    for key, sign, one, many in _COUNTS:
        try:
            n = int(summary[key])
        except (KeyError, TypeError, ValueError):
            continue
        if n:
            counts.append(f"{sign}{n:,} {one if n == 1 else many}")
    said = f"{verb} {snapshot.get('snapshot-id')}"
    return f"{said}: {', '.join(counts)}" if counts else said


def _schema_change(before: Fields | None, after: Fields | None, schema: Any) -> list[str]:
    schema_id = schema.get("schema-id") if isinstance(schema, dict) else None
    if before is None or after is None:
        return [f"added schema {schema_id}"]
    said = []
    for fid, (name, typ) in after.items():
        if fid not in before:
            said.append(f"added column {name} ({typ})")
        else:
            old_name, old_type = before[fid]
            if old_name != name:
                said.append(f"renamed column {old_name} to {name}")
            if old_type != typ:
                said.append(f"changed column {name} from {old_type} to {typ}")
    said.extend(f"dropped column {name}" for fid, (name, _) in before.items() if fid not in after)
    return said or [f"added schema {schema_id}"]


def _type_name(typ: Any) -> str:
    if isinstance(typ, dict):
        return str(typ.get("type", "struct"))
    return str(typ)
