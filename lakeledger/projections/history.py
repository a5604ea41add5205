"""The audit history read model: one ``ll_history`` row per event, with what a person asks of it (who, when it
entered the log, which entity under which name at that moment, a sentence saying what changed) and the event's
full data.

Later events of an entity do not repeat its name or warehouse (a commit names neither), so the projection
keeps them per entity in ``ll_history_entities``, with a table's last schema to tell which columns a new schema
adds. Both tables are driven only by the events, so a rebuild writes identical rows. Name claims and
idempotency keys are bookkeeping of the write side, not changes anyone made to the catalog: left out.

It is not applied inside appends (commits pay nothing for it); the history API catches it up before it answers
(``ProjectionDriver.caught_up``), which also backfills a database that had events before this projection."""

import contextlib
import json
from dataclasses import dataclass, field
from functools import singledispatch
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.utils import get_topic
from psycopg import Cursor
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.grant import Grant
from lakeledger.domain.maintenance import MaintenanceMode
from lakeledger.domain.maintenance_policy import MaintenancePolicy
from lakeledger.domain.names import dotted
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.project import Project
from lakeledger.domain.role import Role
from lakeledger.domain.server import Server
from lakeledger.domain.table import CREATED_BY_COMMIT, CREATED_BY_REGISTRATION, Table
from lakeledger.domain.table_maintenance import TableMaintenance
from lakeledger.domain.tabular import GENERIC_TABLE, Tabular
from lakeledger.domain.tag import COLUMN, TagDefinition
from lakeledger.domain.tasks import TaskQueueConfig
from lakeledger.domain.user import FIRST_REQUEST, User
from lakeledger.domain.view import View
from lakeledger.domain.warehouse import Warehouse
from lakeledger.eventstore.identity import event_id, event_type_of
from lakeledger.projections import appended, commit_summaries
from lakeledger.projections.copy_rows import text_array

SERVER, PROJECT, WAREHOUSE, NAMESPACE = "server", "project", "warehouse", "namespace"
USER, ROLE, GRANT, TAG = "user", "role", "grant", "tag-definition"
POLICY = "maintenance-policy"
TASK_QUEUE = "task-queue"
MAINTENANCE = "table-maintenance"  # the runs of one action on one table; named by the table
SERVER_LEVEL = (SERVER, PROJECT, WAREHOUSE, USER, ROLE, GRANT, TAG)

# what every event has; "change" is the rest
_ENVELOPE = {"originator_id", "originator_version", "timestamp", "originator_topic", "actor", "request_id"}


@dataclass
class Entity:
    """What the projection remembers of an entity between its events."""

    entity_type: str
    warehouse_id: UUID | None
    name: list[str]
    namespace: list[str] | None = None
    fields: dict | None = None


@dataclass
class EventDigest:
    """What one event says, in history's terms."""

    entity: Entity
    summary: str
    from_namespace: list[str] | None = field(default=None)


class HistoryProjection:
    name = "history"
    tables = ("ll_history", "ll_history_entities")
    # a rebuild only appends to ll_history: its other indexes are built once, after the fill
    indexed_after_fill = ("ll_history",)
    # the read model a rebuild spends most on (a row per event): filled by a process of its own on a long log
    rebuilt_apart = True
    topics: tuple[str, ...] = ()

    def apply(self, event: Any, cur: Cursor) -> None:
        before = _entity(cur, event.originator_id)
        digest = _digest(event, before)
        if digest is None:
            return
        cur.execute(UPSERT_ENTITY, _entity_row(event.originator_id, digest.entity))
        # The projection interface hands over the event alone; its log position is the key of its own row, and
        # its time is when it entered the log (its append time: ordered as positions are, and what time travel
        # and the since/until filters mean), not the timestamp taken before it waited for the append lock.
        sequence, appended_at = appended.lookup(event, cur)
        row = _history_row(event, digest, sequence, appended_at)
        cur.execute(INSERT_HISTORY, row[:-1] + (Jsonb(row[-1], dumps=_as_is),))

    def rebuilder(self) -> "HistoryRebuild":
        return HistoryRebuild()

    def live_writer(self) -> "HistoryBatch":
        return HistoryBatch()


UPSERT_ENTITY = (
    "INSERT INTO ll_history_entities (id, entity_type, warehouse_id, name, namespace, fields)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET entity_type = EXCLUDED.entity_type,"
    " warehouse_id = EXCLUDED.warehouse_id, name = EXCLUDED.name, namespace = EXCLUDED.namespace,"
    " fields = EXCLUDED.fields")
HISTORY_COLUMNS = ("sequence, event_id, time, type, actor, request_id, warehouse_id, entity_type, entity_id,"
                   " entity_name, namespace, from_namespace, summary, change")
INSERT_HISTORY = f"INSERT INTO ll_history ({HISTORY_COLUMNS}) VALUES ({', '.join(['%s'] * 14)})"


def _entity_row(entity_id: UUID, entity: Entity) -> tuple:
    return (entity_id, entity.entity_type, entity.warehouse_id, entity.name, entity.namespace,
            Jsonb(entity.fields) if entity.fields is not None else None)


def _history_row(event: Any, digest: EventDigest, sequence: int, appended_at: Any) -> tuple:
    """The row's values, the change as the JSON text of a jsonb (``_change_json``)."""
    entity = digest.entity
    return (sequence, event_id(event.originator_id, event.originator_version), appended_at,
            _type(event), event.actor, event.request_id, entity.warehouse_id,
            entity.entity_type, event.originator_id, entity.name, entity.namespace, digest.from_namespace,
            digest.summary, _change_json(change_of(event)))


def _change_json(change: dict[str, Any]) -> str:
    """The event's data as JSON text for jsonb, serialised once. The event holds only what Postgres can store
    (lakeledger/projections/storable.py). orjson first (a twentieth of the standard library's cost); it refuses integers
    beyond 64 bits and nesting deeper than 255 levels, which go the standard library's way. Both write what jsonb stores
    alike (times as ``str`` gives them)."""
    try:
        return orjson.dumps(change, default=str, option=_AS_STR).decode()
    except TypeError:  # an integer beyond 64 bits, deep nesting, a key that is not a string
        return _dumps(change)


# what the standard library's encoder would hand to ``default=str`` is handed to it by orjson too
_AS_STR = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


class HistoryRebuild:
    """The history written by a rebuild (lakeledger/projections/rebuild.py), which fills empty tables from the log's
    start and is their only writer: the entities are remembered here instead of read back per event, and written once
    each when the pass pauses (``settle``). Each batch's rows go in with one COPY, opened at the batch's first row and
    written row by row as the events are digest, so Postgres stores a batch while Python makes it (names as array
    literals, the change as its JSON text: psycopg's list dumper cost more than the rest of the row). Entities are kept
    as a read of their row would give them back, so ``_digest`` sees what the per-event path sees."""

    # the COPY stays open between adds: nothing else may use the connection until ``flush``
    # (lakeledger/projections/rebuild.py)
    copies_while_adding = True

    def __init__(self):
        self.entities: dict[UUID, Entity] = {}
        self.changed: dict[UUID, Entity] = {}
        self.literals: dict[tuple[str, ...], str] = {}
        self._copying: Any = None  # the COPY's context while a batch is written, and the COPY itself
        self._copy: Any = None

    def add(self, logged: Any, cur: Cursor) -> None:
        try:
            self._add(logged, cur)
        except BaseException:
            self.abandon()  # or the rollback would find the connection still copying
            raise

    def _add(self, logged: Any, cur: Cursor) -> None:
        event = logged.event
        before = self.entities.get(event.originator_id)
        digest = _digest(event, before)
        if digest is None:
            return
        # an event that changed the entity it was handed (a commit) leaves it as a read would give it back
        stored = before if digest.entity is before else _as_stored(digest.entity, before)
        self.entities[event.originator_id] = self.changed[event.originator_id] = stored
        row = _history_row(event, digest, logged.position, logged.appended_at)
        literal = self._literal
        if self._copy is None:
            self._copying = cur.copy(f"COPY ll_history ({HISTORY_COLUMNS}) FROM STDIN")
            self._copy = self._copying.__enter__()
        self._copy.write_row(row[:9] + (literal(row[9]), literal(row[10]), literal(row[11])) + row[12:])

    def _literal(self, items: list[str] | None) -> str | None:
        """``text_array``, made once per name: every event of an entity names it again."""
        if items is None:
            return None
        key = tuple(items)
        made = self.literals.get(key)
        if made is None:
            made = self.literals[key] = text_array(items)
        return made

    def settle(self, cur: Cursor) -> None:
        """The entities' last states, once each however many batches changed them."""
        self.flush(cur)
        if self.changed:
            cur.executemany(UPSERT_ENTITY, [_entity_row(i, e) for i, e in self.changed.items()])
            self.changed = {}

    def flush(self, cur: Cursor) -> None:
        copying, self._copying, self._copy = self._copying, None, None
        if copying is not None:
            copying.__exit__(None, None, None)

    def abandon(self) -> None:
        """Ends an open COPY after a failure (the transaction is then rolled back)."""
        copying, self._copying, self._copy = self._copying, None, None
        if copying is not None:
            error = RuntimeError("the batch was abandoned")
            with contextlib.suppress(Exception):  # the failure that got here is the one that matters
                copying.__exit__(type(error), error, None)


class HistoryBatch(HistoryRebuild):
    """A batch of history written while others write too (the runners following the log): as a rebuild writes it,
    except that the entities the batch's events touch are read first, all in one query. Made for one batch."""

    copies_while_adding = False  # it copies in ``flush``, after reading the entities

    def __init__(self):
        super().__init__()
        self.pending: list = []

    def add(self, logged: Any, cur: Cursor) -> None:
        self.pending.append(logged)

    def flush(self, cur: Cursor) -> None:
        unknown = list({logged.event.originator_id for logged in self.pending} - self.entities.keys())
        if unknown:
            with cur.connection.cursor(row_factory=tuple_row) as read:  # whatever rows the caller's cursor makes
                for entity_id, *stored in read.execute(f"{_ENTITIES} WHERE id = ANY(%s)", (unknown,)):
                    self.entities[entity_id] = Entity(*stored)
        for logged in self.pending:
            super().add(logged, cur)
        self.pending = []
        super().flush(cur)


def _as_stored(entity: Entity, before: Entity | None) -> Entity:
    fields = entity.fields
    if fields is not None and (before is None or fields is not before.fields):  # a commit keeps them as they were
        fields = json.loads(json.dumps(fields))
    return Entity(entity.entity_type, entity.warehouse_id, list(entity.name),
                  None if entity.namespace is None else list(entity.namespace), fields)


def _as_is(text: str) -> str:
    return text


def _type(event: Any) -> str:
    return event_type_of(get_topic(type(event)), event)


def change_of(event: Any) -> dict[str, Any]:
    change = dict(vars(event))  # copied whole and the envelope taken out: half the cost of a filtering comprehension
    for key in _ENVELOPE:
        change.pop(key, None)
    return change


# the standard library's encoder, which keeps integers beyond 64 bits; made once
_dumps = json.JSONEncoder(default=str, allow_nan=False, separators=(",", ":")).encode


_ENTITIES = "SELECT id, entity_type, warehouse_id, name, namespace, fields FROM ll_history_entities"


def _entity(cur: Cursor, entity_id: UUID) -> Entity | None:
    cur.execute(f"{_ENTITIES} WHERE id = %s", (entity_id,))
    row = cur.fetchone()
    return Entity(*row[1:]) if row else None


@singledispatch
def _digest(event: Any, before: Entity | None) -> EventDigest | None:
    """Events of other aggregates (name claims, idempotency keys) are not part of the history."""
    return None


@_digest.register
def _(e: Server.Bootstrapped, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(SERVER, None, []), "bootstrapped the server" + (" (operator)" if e.is_operator else ""))


@_digest.register
def _(e: MaintenanceMode.Started, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(SERVER, None, []), f"switched read-only maintenance mode {_on(e.read_only)}")


@_digest.register
def _(e: MaintenanceMode.Switched, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(SERVER, None, []), f"switched read-only maintenance mode {_on(e.read_only)}")


def _on(read_only: bool) -> str:
    return "on" if read_only else "off"


@_digest.register
def _(e: Project.Created, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(PROJECT, None, [e.name]), f"created project {e.name}")


@_digest.register
def _(e: Project.Renamed, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(PROJECT, None, [e.new_name]), f"renamed project {e.old_name} to {e.new_name}")


@_digest.register
def _(e: Project.Deleted, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(PROJECT, None, [e.name]), f"deleted project {e.name}")


@_digest.register
def _(e: Warehouse.Created, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(WAREHOUSE, e.originator_id, [e.name]), f"created warehouse {e.name}")


@_digest.register
def _(e: Warehouse.Renamed, before: Entity | None) -> EventDigest:
    return EventDigest(
        Entity(WAREHOUSE, e.originator_id, [e.new_name]), f"renamed warehouse {e.old_name} to {e.new_name}"
    )


@_digest.register
def _(e: Warehouse.Deactivated, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    return EventDigest(entity, f"deactivated warehouse {dotted(entity.name)}")


@_digest.register
def _(e: Warehouse.Activated, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    return EventDigest(entity, f"activated warehouse {dotted(entity.name)}")


@_digest.register
def _(e: Warehouse.Deleted, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(WAREHOUSE, e.originator_id, [e.name]), f"deleted warehouse {e.name}")


@_digest.register
def _(e: Warehouse.DeleteProfileSet, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    profile = e.delete_profile
    said = (f"soft, expiring after {_member(profile, 'expiration-seconds')} s"
            if _member(profile, "type") == "soft" else "hard")
    return EventDigest(entity, f"set the delete profile of warehouse {dotted(entity.name)} to {said}")


@_digest.register
def _(e: Warehouse.ManagedBySet, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    return EventDigest(entity, f"set warehouse {dotted(entity.name)} managed by {e.managed_by}")


@_digest.register
def _(e: Warehouse.FormatVersionPolicySet, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    default = f", v{e.default_format_version} by default" if e.default_format_version is not None else ""
    return EventDigest(entity, f"allowed table format versions {e.allowed_format_versions} in warehouse "
                               f"{dotted(entity.name)}{default}")


@_digest.register
def _(e: Warehouse.DropPurgeDefaultSet, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    said = "purge their files" if e.drop_purge_default == "purge" else "keep their files"
    return EventDigest(entity, f"set table drops in warehouse {dotted(entity.name)} without purgeRequested to {said}")


@_digest.register
def _(e: Warehouse.TimeTravelRetentionSet, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    if e.time_travel_retention is None:
        return EventDigest(entity, f"removed the time-travel retention of warehouse {dotted(entity.name)}")
    return EventDigest(entity, f"set the time-travel retention of warehouse {dotted(entity.name)} to "
                               f"{e.time_travel_retention}")


@_digest.register
def _(e: Warehouse.ProtectionSet, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    return EventDigest(entity, f"{_protection(e.protected)} warehouse {dotted(entity.name)}")


@_digest.register
def _(e: Warehouse.ManagedAccessSet, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    return EventDigest(entity, f"{_managed_access(e.managed_access)} warehouse {dotted(entity.name)}")


@_digest.register
def _(e: Warehouse.StorageChanged, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    credential = (f", credential {_member(e.storage_secret, 'fingerprint')}" if e.storage_secret else "")
    return EventDigest(entity, f"changed the storage of warehouse {dotted(entity.name)} "
                        f"({_member(e.storage_profile, 'type')}{credential})")


@_digest.register
def _(e: Warehouse.StorageCredentialRotated, before: Entity | None) -> EventDigest:
    entity = _known(before, WAREHOUSE, e)
    return EventDigest(entity, f"rotated the storage credential of warehouse {dotted(entity.name)} "
                        f"(now {_member(e.storage_secret, 'fingerprint')})")


def _member(document: Any, key: str) -> Any:
    """``document[key]``, or None: events recorded by older versions may lack what the current ones hold."""
    return document.get(key) if isinstance(document, dict) else None


def _count(document: Any, key: str) -> int:
    found = _member(document, key)
    return len(found) if isinstance(found, list) else 0


def _protection(protected: bool) -> str:
    return "protected" if protected else "removed the protection of"


def _managed_access(managed_access: bool) -> str:
    return "turned managed access on for" if managed_access else "turned managed access off for"


@_digest.register
def _(e: Namespace.Created, before: Entity | None) -> EventDigest:
    path = list(e.path)
    return EventDigest(Entity(NAMESPACE, e.warehouse_id, path, path), f"created namespace {dotted(path)}")


@_digest.register
def _(e: Namespace.PropertiesUpdated, before: Entity | None) -> EventDigest:
    entity = _known(before, NAMESPACE, e)
    said = []
    if e.updated:
        said.append("set properties " + ", ".join(sorted(e.updated)))
    if e.removed:
        said.append("removed properties " + ", ".join(sorted(e.removed)))
    return EventDigest(entity, f"{'; '.join(said)} on namespace {dotted(entity.name)}")


@_digest.register
def _(e: Namespace.Dropped, before: Entity | None) -> EventDigest:
    entity = _known(before, NAMESPACE, e)
    said = f"dropped namespace {dotted(entity.name)}"
    if e.contents:
        said += (f" with {_count(e.contents, 'namespaces')} namespaces and "
                 f"{_count(e.contents, 'tabulars')} tables and views in it")
    return EventDigest(entity, said + _until(e.expires_at))


def _until(expires_at: Any) -> str:
    return f" (soft: restorable until {expires_at.isoformat()})" if expires_at is not None else ""


@_digest.register
def _(e: Namespace.Undropped, before: Entity | None) -> EventDigest:
    entity = _known(before, NAMESPACE, e)
    return EventDigest(entity, f"undropped namespace {dotted(entity.name)}")


@_digest.register
def _(e: Namespace.Moved, before: Entity | None) -> EventDigest:
    entity = _known(before, NAMESPACE, e)
    entity.warehouse_id, entity.name, entity.namespace = e.warehouse_id, list(e.to_path), list(e.to_path)
    said = f"moved namespace {dotted(e.from_path)} to {dotted(e.to_path)}"
    if e.with_namespace is not None:
        said += " (a namespace above it moved)"
    return EventDigest(entity, said, from_namespace=list(e.from_path))


@_digest.register
def _(e: Namespace.Expired, before: Entity | None) -> EventDigest:
    entity = _known(before, NAMESPACE, e)
    return EventDigest(entity, f"expired namespace {dotted(entity.name)}: its deletion is final")


@_digest.register
def _(e: Namespace.ProtectionSet, before: Entity | None) -> EventDigest:
    entity = _known(before, NAMESPACE, e)
    return EventDigest(entity, f"{_protection(e.protected)} namespace {dotted(entity.name)}")


@_digest.register
def _(e: Namespace.ManagedAccessSet, before: Entity | None) -> EventDigest:
    entity = _known(before, NAMESPACE, e)
    return EventDigest(entity, f"{_managed_access(e.managed_access)} namespace {dotted(entity.name)}")


@_digest.register
def _(e: Table.Created, before: Entity | None) -> EventDigest:
    request = e.request if isinstance(e.request, dict) else {}
    if e.origin == CREATED_BY_COMMIT:
        fields = commit_summaries.schema_in(request.get("updates"))
    elif e.origin == CREATED_BY_REGISTRATION:
        fields = None  # the schema is in a metadata file, which a projection does not read
    else:
        fields = commit_summaries.fields_of(request.get("schema"))
    entity = _tabular(e, "table", fields)
    verb = "registered" if e.origin == CREATED_BY_REGISTRATION else "created"
    return EventDigest(entity, f"{verb} table {dotted(entity.name)}")


@_digest.register
def _(e: Table.Registered, before: Entity | None) -> EventDigest:
    entity = _tabular(e, "table", None)
    return EventDigest(entity, f"registered table {dotted(entity.name)} again")


@_digest.register
def _(e: View.Registered, before: Entity | None) -> EventDigest:
    entity = _tabular(e, "view", None)
    return EventDigest(entity, f"registered view {dotted(entity.name)} again")


@_digest.register
def _(e: View.Created, before: Entity | None) -> EventDigest:
    entity = _tabular(e, "view", None)
    return EventDigest(entity, f"created view {dotted(entity.name)}")


@_digest.register
def _(e: GenericTable.Created, before: Entity | None) -> EventDigest:
    entity = _tabular(e, GENERIC_TABLE, None)
    return EventDigest(entity, f"created {e.format} generic table {dotted(entity.name)}")


@_digest.register
def _(e: Table.Committed, before: Entity | None) -> EventDigest:
    entity = _known(before, "table", e)
    if e.updates:
        summary = commit_summaries.describe_commit(e.updates, entity.fields)
        entity.fields = commit_summaries.schema_in(e.updates) or entity.fields
    else:  # a registration over the live table: only the metadata file changes
        summary = f"pointed to metadata file {e.metadata_location}"
    return EventDigest(entity, summary)


@_digest.register
def _(e: View.Replaced, before: Entity | None) -> EventDigest:
    entity = _known(before, "view", e)
    return EventDigest(entity, f"replaced view {dotted(entity.name)}")


@_digest.register
def _(e: Tabular.Renamed, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    old, new = [*e.from_namespace, e.from_name], [*e.to_namespace, e.to_name]
    entity.name, entity.namespace = new, list(e.to_namespace)
    return EventDigest(entity, f"renamed {dotted(old)} to {dotted(new)}", from_namespace=list(e.from_namespace))


@_digest.register
def _(e: Tabular.Moved, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    name = entity.name[-1] if entity.name else ""
    old, new = [*e.from_namespace, name], [*e.to_namespace, name]
    entity.name, entity.namespace = new, list(e.to_namespace)
    return EventDigest(entity, f"moved {e.typ} {dotted(old)} to {dotted(new)} (its namespace moved)",
                       from_namespace=list(e.from_namespace))


@_digest.register
def _(e: Tabular.Dropped, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    entity.warehouse_id, entity.namespace, entity.name = e.warehouse_id, list(e.namespace), [*e.namespace, e.name]
    purge = " (purge requested)" if e.purge_requested else ""
    return EventDigest(entity, f"dropped {e.typ} {dotted(entity.name)}{purge}{_until(e.expires_at)}")


@_digest.register
def _(e: Table.Unregistered, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    entity.warehouse_id, entity.namespace, entity.name = e.warehouse_id, list(e.namespace), [*e.namespace, e.name]
    return EventDigest(entity, f"unregistered table {dotted(entity.name)} (its files are kept, last metadata "
                               f"{e.metadata_location})")


@_digest.register
def _(e: Tabular.Undropped, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    entity.namespace, entity.name = list(e.namespace), [*e.namespace, e.name]
    return EventDigest(entity, f"undropped {e.typ} {dotted(entity.name)}")


@_digest.register
def _(e: Tabular.Expired, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    purge = "; its files will be purged" if e.purge_requested else ""
    return EventDigest(entity, f"expired {e.typ} {dotted(entity.name)}: its deletion is final{purge}")


@_digest.register
def _(e: Tabular.Purged, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    files = f"{e.files_removed:,} file" + ("" if e.files_removed == 1 else "s")
    return EventDigest(entity, f"purged {e.typ} {dotted(entity.name)}: {files} deleted at {e.location}")


@_digest.register
def _(e: Tabular.ExpiryRescheduled, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    if e.expires_at is None:
        return EventDigest(entity, f"cancelled the expiry of {e.typ} {dotted(entity.name)}: it stays soft-deleted")
    return EventDigest(entity, f"rescheduled the expiry of {e.typ} {dotted(entity.name)} to "
                               f"{e.expires_at.isoformat()}")


@_digest.register
def _(e: Tabular.PurgeCancelled, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    return EventDigest(entity, f"cancelled the purge of {e.typ} {dotted(entity.name)}: its files are kept")


@_digest.register
def _(e: Tabular.PurgeRetryDue, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    return EventDigest(entity, f"asked the failed purge of {e.typ} {dotted(entity.name)} to run again now")


@_digest.register
def _(e: Tabular.PurgeStarted, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    abandoned = "" if e.abandoned is None else f"; attempt {e.abandoned} was abandoned (its worker stopped)"
    return EventDigest(entity, f"started purge attempt {e.attempt} of {e.typ} {dotted(entity.name)} on "
                               f"{e.worker}{abandoned}")


@_digest.register
def _(e: Tabular.PurgeFailed, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    return EventDigest(entity, f"purge attempt {e.attempt} of {e.typ} {dotted(entity.name)} failed: {e.error}; "
                               f"tried again at {e.retry_at.isoformat()}")


@_digest.register
def _(e: TaskQueueConfig.Set, before: Entity | None) -> EventDigest:
    heartbeat = e.max_seconds_since_last_heartbeat
    said = "" if heartbeat is None else f", max-seconds-since-last-heartbeat={heartbeat}"
    settings = _settings_count(e.queue_config)
    return EventDigest(Entity(TASK_QUEUE, e.warehouse_id, [e.queue]),
                       f"set the {e.queue} task queue's configuration: {settings} settings{said}")


def _run(e: Any) -> str:
    return f"{e.queue} run {e.run}"


@_digest.register
def _(e: TableMaintenance.RunScheduled, before: Entity | None) -> EventDigest:
    # the runs' entity is named by its table, as the table is called when a run is scheduled
    entity, run = Entity(MAINTENANCE, e.warehouse_id, [*e.table_name]), _run(e)
    return EventDigest(entity, f"scheduled {run} of table {dotted(entity.name)} for {e.due_at.isoformat()}: "
                               f"{e.reason}")


@_digest.register
def _(e: TableMaintenance.RunStarted, before: Entity | None) -> EventDigest:
    entity = _known(before, MAINTENANCE, e)
    abandoned = "" if e.abandoned is None else f"; attempt {e.abandoned} was abandoned (its worker stopped)"
    return EventDigest(entity, f"started attempt {e.attempt} of {_run(e)} of table {dotted(entity.name)} on "
                               f"{e.worker}{abandoned}")


@_digest.register
def _(e: TableMaintenance.RunSucceeded, before: Entity | None) -> EventDigest:
    entity = _known(before, MAINTENANCE, e)
    figures = ", ".join(f"{name.replace('_', ' ')} {_figure(value)}" for name, value in e.figures.items())
    return EventDigest(entity, f"{_run(e)} of table {dotted(entity.name)} succeeded in {e.seconds:.1f} s"
                               + (f": {figures}" if figures else ""))


@_digest.register
def _(e: TableMaintenance.RunFailed, before: Entity | None) -> EventDigest:
    entity = _known(before, MAINTENANCE, e)
    then = "no more attempts" if e.retry_at is None else f"tried again at {e.retry_at.isoformat()}"
    return EventDigest(entity, f"attempt {e.attempt} of {_run(e)} of table {dotted(entity.name)} failed: "
                               f"{e.error}; {then}")


@_digest.register
def _(e: TableMaintenance.StopRequested, before: Entity | None) -> EventDigest:
    entity = _known(before, MAINTENANCE, e)
    return EventDigest(entity, f"asked attempt {e.attempt} of {_run(e)} of table {dotted(entity.name)} to stop")


@_digest.register
def _(e: TableMaintenance.RunCancelled, before: Entity | None) -> EventDigest:
    entity = _known(before, MAINTENANCE, e)
    return EventDigest(entity, f"cancelled {_run(e)} of table {dotted(entity.name)}: {e.reason}")


@_digest.register
def _(e: TableMaintenance.RunRescheduled, before: Entity | None) -> EventDigest:
    entity = _known(before, MAINTENANCE, e)
    return EventDigest(entity, f"rescheduled {_run(e)} of table {dotted(entity.name)} to {e.due_at.isoformat()}")


def _figure(value: Any) -> str:
    # figures are counts; a log written elsewhere may hold anything in their place
    return f"{value:,}" if isinstance(value, int) else str(value)


def _settings_count(value: Any) -> int:
    return len(value) if isinstance(value, dict) else 0


@_digest.register
def _(e: Tabular.ProtectionSet, before: Entity | None) -> EventDigest:
    entity = _known(before, e.typ, e)
    return EventDigest(entity, f"{_protection(e.protected)} {e.typ} {dotted(entity.name)}")


@_digest.register
def _(e: User.Created, before: Entity | None) -> EventDigest:
    how = "provisioned user {} on its first request" if e.last_updated_with == FIRST_REQUEST else "created user {}"
    return EventDigest(Entity(USER, None, [e.user_id]), how.format(_user(e)))


@_digest.register
def _(e: User.Recreated, before: Entity | None) -> EventDigest:
    how = ("provisioned deleted user {} again on its request" if e.last_updated_with == FIRST_REQUEST
           else "created deleted user {} again")
    return EventDigest(Entity(USER, None, [e.user_id]), how.format(_user(e)))


@_digest.register
def _(e: User.Updated, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(USER, None, [e.user_id]), f"updated user {_user(e)}")


@_digest.register
def _(e: User.Deleted, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(USER, None, [e.user_id]), f"deleted user {e.user_id}")


def _user(e: Any) -> str:
    return f"{e.user_id} ({e.name}, {e.user_type})"


@_digest.register
def _(e: Role.Created, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(ROLE, None, [e.name]), f"created role {e.name} ({e.provider_id}~{e.source_id})")


@_digest.register
def _(e: Role.Updated, before: Entity | None) -> EventDigest:
    entity = _known(before, ROLE, e)
    old = dotted(entity.name)
    entity.name = [e.name]
    said = f"renamed role {old} to {e.name}" if old != e.name else f"updated role {e.name}"
    return EventDigest(entity, said)


@_digest.register
def _(e: Role.SourceSystemChanged, before: Entity | None) -> EventDigest:
    entity = _known(before, ROLE, e)
    return EventDigest(entity, f"moved role {dotted(entity.name)} to source {e.provider_id}~{e.source_id}")


@_digest.register
def _(e: Role.MemberAdded, before: Entity | None) -> EventDigest:
    entity = _known(before, ROLE, e)
    return EventDigest(entity, f"added {e.member_type} {e.member_id} to role {dotted(entity.name)}")


@_digest.register
def _(e: Role.MemberRemoved, before: Entity | None) -> EventDigest:
    entity = _known(before, ROLE, e)
    return EventDigest(entity, f"removed {e.member_type} {e.member_id} from role {dotted(entity.name)}")


@_digest.register
def _(e: Role.Deleted, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(ROLE, None, [e.name]), f"deleted role {e.name}")


@_digest.register
def _(e: Grant.Added, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(GRANT, None, [e.object]),
                       f"granted {e.relation} on {_named(e.object)} to {_named(e.grantee)}")


@_digest.register
def _(e: Grant.Removed, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(GRANT, None, [e.object]), f"revoked {e.relation} on {_named(e.object)} from "
                                                 f"{_named(e.grantee)}")


def _named(tuple_end: str) -> str:
    """``table:<id>`` as "table <id>", ``role:<id>#assignee`` as "role <id>" (its members)."""
    kind, _, rest = tuple_end.partition(":")
    return f"{kind} {rest.partition('#')[0]}"


def _tabular(e: Any, typ: str, fields: dict | None) -> Entity:
    return Entity(typ, e.warehouse_id, [*e.namespace, e.name], list(e.namespace), fields)


@_digest.register
def _(e: TagDefinition.Created, before: Entity | None) -> EventDigest:
    kind = e.value_kind + (f" ({', '.join(e.allowed_values)})" if e.allowed_values else "")
    return EventDigest(Entity(TAG, None, [e.name]),
                       f"created tag definition {e.name}, {kind}, for {', '.join(e.scope)}")


@_digest.register
def _(e: TagDefinition.Updated, before: Entity | None) -> EventDigest:
    entity = _known(before, TAG, e)
    old = dotted(entity.name)
    entity = Entity(TAG, None, [e.name])
    said = f"renamed tag definition {old} to {e.name}" if old != e.name else f"updated tag definition {e.name}"
    added = f", allowed values added: {', '.join(e.added_values)}" if e.added_values else ""
    return EventDigest(entity, f"{said} (scope {', '.join(e.scope)}{added})")


def _tag_target(e: TagDefinition.Applied | TagDefinition.Removed) -> str:
    if e.target_type == COLUMN:
        return f"column {e.field_id} of table {e.target_id}"
    return f"{e.target_type} {e.target_id}"


@_digest.register
def _(e: TagDefinition.Applied, before: Entity | None) -> EventDigest:
    value = f" = {e.value}" if e.value is not None else ""
    return EventDigest(Entity(TAG, e.warehouse_id, [e.name]), f"tagged {_tag_target(e)} with {e.name}{value}")


@_digest.register
def _(e: TagDefinition.Removed, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(TAG, e.warehouse_id, [e.name]), f"removed tag {e.name} from {_tag_target(e)}")


@_digest.register
def _(e: TagDefinition.Deleted, before: Entity | None) -> EventDigest:
    return EventDigest(Entity(TAG, None, [e.name]), f"deleted tag definition {e.name}")


def _policy_entity(e: MaintenancePolicy.Set | MaintenancePolicy.Removed) -> Entity:
    """The policies of one object, named by the object (its kind and id: a rename or move leaves them in place)."""
    return Entity(POLICY, e.warehouse_id, [e.target_type, str(e.target_id)])


@_digest.register
def _(e: MaintenancePolicy.Set, before: Entity | None) -> EventDigest:
    settings = e.parameters if isinstance(e.parameters, dict) else {}
    said = ", ".join(f"{k}={_scalar(v)}" for k, v in settings.items()) or "nothing of its own"
    return EventDigest(_policy_entity(e), f"set {e.policy_type} on {e.target_type} {e.target_id}: {said}")


def _scalar(value: Any) -> str:
    """A setting as the summary shows it; the log may hold anything (an older version's, a hand-made event), which
    the change column keeps whole."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and abs(value) < 10**18 or isinstance(value, float | str) and len(str(value)) < 100:
        return str(value)
    return "…"


@_digest.register
def _(e: MaintenancePolicy.Removed, before: Entity | None) -> EventDigest:
    return EventDigest(_policy_entity(e), f"removed {e.policy_type} from {e.target_type} {e.target_id}")


def _known(before: Entity | None, entity_type: str, e: Any) -> Entity:
    # Only a log whose earlier events were lost would miss the entity; say what can be said rather than stop.
    return before if before is not None else Entity(entity_type, None, [str(e.originator_id)])
