"""The tags read model: ``ll_tag_definitions`` and ``ll_tags`` (where each definition is attached), as they are now.

Applied inside every append of a tag definition's events (lakeledger/services/tags.py ``views``), so an answer
and a check inside an append (a definition still in use) see every earlier change. It reads only its own topics;
every statement is driven by the event's own fields (times are the events' own), so a rebuild writes identical
rows."""

from functools import singledispatchmethod
from typing import Any

from eventsourcing.utils import get_topic
from psycopg import Cursor

from lakeledger.domain.names import CASE_INSENSITIVE, name_key
from lakeledger.domain.tag import TagDefinition

TABLES = ("ll_tag_definitions", "ll_tags")

EVENTS = (TagDefinition.Created, TagDefinition.Updated, TagDefinition.Applied, TagDefinition.Removed,
          TagDefinition.Deleted)

NO_FIELD = -1  # the field id of every target but a column
# what a field id no Iceberg schema can have (beyond 32 bits) is stored as: the API never records one, but the log may
# hold anything, and the read model must apply it
OUT_OF_RANGE = -2
_INT32 = range(-(2**31), 2**31)


class TagsProjection:
    name = "tags"
    tables = TABLES
    topics: tuple[str, ...] = tuple(get_topic(cls) for cls in EVENTS)

    @singledispatchmethod
    def apply(self, event: Any, cur: Cursor) -> None:
        """Other events are not this read model's."""

    @apply.register
    def _(self, e: TagDefinition.Created, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_tag_definitions (id, project_id, name, name_key, description, scope, value_kind,"
                    " allowed_values, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (e.originator_id, e.project_id, e.name, _key(e.name), e.description, e.scope, e.value_kind,
                     e.allowed_values, e.timestamp))

    @apply.register
    def _(self, e: TagDefinition.Updated, cur: Cursor) -> None:
        cur.execute("UPDATE ll_tag_definitions SET name = %s, name_key = %s, description = %s, scope = %s,"
                    " allowed_values = allowed_values || %s::text[], updated_at = %s WHERE id = %s",
                    (e.name, _key(e.name), e.description, e.scope, e.added_values, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: TagDefinition.Applied, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_tags (definition_id, warehouse_id, target_type, target_id, field_id, value,"
                    " created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT (definition_id, target_type, target_id, field_id)"
                    " DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.created_at",
                    (e.originator_id, e.warehouse_id, e.target_type, e.target_id, _field(e.field_id), e.value,
                     e.timestamp))

    @apply.register
    def _(self, e: TagDefinition.Removed, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_tags WHERE definition_id = %s AND target_type = %s AND target_id = %s"
                    " AND field_id = %s", (e.originator_id, e.target_type, e.target_id, _field(e.field_id)))

    @apply.register
    def _(self, e: TagDefinition.Deleted, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_tag_definitions WHERE id = %s", (e.originator_id,))


def _key(name: str) -> str:
    """What two names that are one name share (the name claims' rule, lakeledger/domain/names.py)."""
    return name_key(name, CASE_INSENSITIVE)


def _field(field_id: int | None) -> int:
    if field_id is None:
        return NO_FIELD
    return field_id if field_id in _INT32 else OUT_OF_RANGE
