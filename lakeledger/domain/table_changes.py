"""What a table commit is made of: the requirements and updates of the Iceberg REST spec, and the rule
each update is applied with.

pyiceberg's models and rules are used wherever they fit. This module adds what pyiceberg 0.12 lacks
(the encryption-key updates, upgrades to format v3, a snapshot's ``key-id``) and, where pyiceberg is
stricter than the spec and Java's ``TableMetadata.Builder``, follows those: removing something that is
already gone is no change, and ``assert-ref-snapshot-id`` with a null id only asks that the ref be absent
(lakeledger/domain/requirements.py, where every requirement refuses with Java's message). Java clients rely on both,
e.g. expiring a snapshot sends remove-snapshots followed by remove-statistics for the statistics the
removal already dropped."""

from functools import singledispatch
from typing import Annotated, Any, Union, get_args

from pydantic import BaseModel, Field, field_validator
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER_ID
from pyiceberg.table.update import (
    AddPartitionSpecUpdate,
    AddSchemaUpdate,
    AddSortOrderUpdate,
    RemovePartitionSpecsUpdate,
    RemovePartitionStatisticsUpdate,
    RemovePropertiesUpdate,
    RemoveSchemasUpdate,
    RemoveSnapshotsUpdate,
    RemoveStatisticsUpdate,
    SetCurrentSchemaUpdate,
    SetDefaultSortOrderUpdate,
    SetDefaultSpecUpdate,
    UpgradeFormatVersionUpdate,
)
from pyiceberg.table.update import AddSnapshotUpdate as _PyicebergAddSnapshot
from pyiceberg.table.update import TableRequirement as _PyicebergRequirement
from pyiceberg.table.update import TableUpdate as _PyicebergUpdate

from lakeledger.domain import metadata_v3, schemas
from lakeledger.domain.encryption_keys import (
    AddEncryptionKeyUpdate,
    RemoveEncryptionKeyUpdate,
    with_key_added,
    with_key_removed,
)
from lakeledger.domain.partition_specs import numbered_partition_fields
from lakeledger.domain.pyiceberg_compat import UpdateContext, apply_table_update
from lakeledger.domain.requirements import REQUIREMENTS

SUPPORTED_FORMAT_VERSION = metadata_v3.FORMAT_VERSION
TABLE_FORMAT_VERSIONS = tuple(range(1, SUPPORTED_FORMAT_VERSION + 1))
LAST_ADDED = -1


class CommitContext(UpdateContext):
    """pyiceberg's record of the updates a commit applied so far, plus what ``-1`` means in a following
    set-current-schema / set-default-spec / set-default-sort-order: the id the last add-schema / add-spec /
    add-sort-order of this commit ended up with (the id it was given, or the id of the equal one it reused,
    as Java's ``TableMetadata.Builder`` keeps it)."""

    def __init__(self) -> None:
        super().__init__()
        self.last_added: dict[str, int | None] = {"schema": None, "spec": None, "sort order": None}
        self._added: dict[str, set[int]] = {kind: set() for kind in self.last_added}

    def added(self, kind: str, entry_id: int) -> None:
        self._added[kind].add(entry_id)
        self.last_added[kind] = entry_id

    def reused(self, kind: str, entry_id: int) -> None:
        # an equal entry that exists stays "the last added" only if this commit added it (Java's rule)
        added_here = self.last_added[kind] is not None and entry_id in self._added[kind]
        self.last_added[kind] = entry_id if added_here else None

    def resolve(self, kind: str, requested: int) -> int:
        if requested != LAST_ADDED:
            return requested
        found = self.last_added[kind]
        if found is None:
            raise ValueError(f"Cannot set last added {kind}: no {kind} has been added")
        return found


class AddSnapshotUpdate(_PyicebergAddSnapshot):
    snapshot: metadata_v3.SnapshotV3


class AddNumberedPartitionSpecUpdate(AddPartitionSpecUpdate):
    """add-spec whose fields may come without ids (lakeledger/domain/partition_specs.py)."""

    @field_validator("spec", mode="before")
    @classmethod
    def _numbered(cls, spec: Any) -> Any:
        return numbered_partition_fields(spec)


def _union(pyiceberg_union: Any, discriminator: str, *own: type[BaseModel]) -> Any:
    """pyiceberg's discriminated union with ``own`` models in place of those sharing their tag, or added."""
    tags = {m.model_fields[discriminator].default for m in own}
    members = [m for m in get_args(get_args(pyiceberg_union)[0]) if m.model_fields[discriminator].default not in tags]
    return Annotated[Union[tuple(members + list(own))], Field(discriminator=discriminator)]  # noqa: UP007


TableUpdate = _union(
    _PyicebergUpdate,
    "action",
    AddSnapshotUpdate,
    AddNumberedPartitionSpecUpdate,
    AddEncryptionKeyUpdate,
    RemoveEncryptionKeyUpdate,
)
# every requirement refuses with Java's message (lakeledger/domain/requirements.py)
TableRequirement = _union(_PyicebergRequirement, "type", *REQUIREMENTS)


@singledispatch
def apply_update(update: Any, metadata: Any, context: UpdateContext) -> Any:
    """The metadata after ``update``; pyiceberg's rule unless one below replaces it. Raises ValueError
    (and the other errors pyiceberg raises) for an update the metadata cannot take."""
    return apply_table_update(update, metadata, context)


@apply_update.register
def _(update: UpgradeFormatVersionUpdate, metadata: Any, context: UpdateContext) -> Any:
    target, current = update.format_version, metadata.format_version
    if target > SUPPORTED_FORMAT_VERSION:
        raise ValueError(f"Unsupported table format version: v{target} (supported: up to v{SUPPORTED_FORMAT_VERSION})")
    if target < current:
        raise ValueError(f"Cannot downgrade v{current} table to v{target}")
    if target == current:
        return metadata
    if target == metadata_v3.FORMAT_VERSION:
        context.add_update(update)
        return metadata_v3.upgraded(metadata)
    return apply_table_update(update, metadata, context)


@apply_update.register
def _(update: _PyicebergAddSnapshot, metadata: Any, context: UpdateContext) -> Any:
    snapshot = update.snapshot
    if metadata.format_version >= metadata_v3.FORMAT_VERSION:
        # pyiceberg checks first-row-id against next-row-id, but would turn a missing added-rows into a
        # lost next-row-id, and checks sequence numbers for v2 only
        if snapshot.first_row_id is None or snapshot.added_rows is None:
            raise ValueError("A snapshot of a v3 table needs first-row-id and added-rows")
        if snapshot.first_row_id < 0 or snapshot.added_rows < 0:
            raise ValueError("first-row-id and added-rows cannot be negative")
        if (snapshot.sequence_number is not None and snapshot.parent_snapshot_id is not None
                and snapshot.sequence_number <= metadata.last_sequence_number):
            raise ValueError(f"Cannot add snapshot with sequence number {snapshot.sequence_number} "
                             f"older than last sequence number {metadata.last_sequence_number}")
    return apply_table_update(update, metadata, context)


@apply_update.register
def _(update: AddEncryptionKeyUpdate, metadata: Any, context: UpdateContext) -> Any:
    return _changed(update, metadata, with_key_added(metadata, update.encryption_key), context)


@apply_update.register
def _(update: RemoveEncryptionKeyUpdate, metadata: Any, context: UpdateContext) -> Any:
    return _changed(update, metadata, with_key_removed(metadata, update.key_id), context)


def _changed(update: Any, metadata: Any, new: Any | None, context: UpdateContext) -> Any:
    if new is None:
        return metadata
    context.add_update(update)
    return new


def _removing_present(update: Any, field: str, known: set[int], metadata: Any, context: UpdateContext) -> Any:
    """A removal narrowed to the ids the table still has: removing what is gone changes nothing, as in Java."""
    present = [i for i in getattr(update, field) if i in known]
    if not present:
        return metadata
    return apply_table_update(update.model_copy(update={field: present}), metadata, context)


@apply_update.register
def _(update: RemovePropertiesUpdate, metadata: Any, context: UpdateContext) -> Any:
    present = [key for key in update.removals if key in metadata.properties]
    return apply_table_update(update.model_copy(update={"removals": present}), metadata, context)


@apply_update.register
def _(update: RemoveSchemasUpdate, metadata: Any, context: UpdateContext) -> Any:
    return _removing_present(update, "schema_ids", {schema.schema_id for schema in metadata.schemas}, metadata,
                             context)


@apply_update.register
def _(update: RemovePartitionSpecsUpdate, metadata: Any, context: UpdateContext) -> Any:
    return _removing_present(update, "spec_ids", {spec.spec_id for spec in metadata.partition_specs}, metadata,
                             context)


@apply_update.register
def _(update: RemoveSnapshotsUpdate, metadata: Any, context: UpdateContext) -> Any:
    known = {snapshot.snapshot_id for snapshot in metadata.snapshots}
    new = _removing_present(update, "snapshot_ids", known, metadata, context)
    if new is metadata:
        return metadata
    present = set(update.snapshot_ids) & known
    # pyiceberg drops a removed snapshot's statistics but keeps its partition statistics; Java drops both
    kept = [f for f in new.partition_statistics if f.snapshot_id not in present]
    return new.model_copy(update={"partition_statistics": kept})


@apply_update.register
def _(update: RemoveStatisticsUpdate, metadata: Any, context: UpdateContext) -> Any:
    if not any(f.snapshot_id == update.snapshot_id for f in metadata.statistics):
        return metadata
    return apply_table_update(update, metadata, context)


@apply_update.register
def _(update: RemovePartitionStatisticsUpdate, metadata: Any, context: UpdateContext) -> Any:
    if not any(f.snapshot_id == update.snapshot_id for f in metadata.partition_statistics):
        return metadata
    return apply_table_update(update, metadata, context)


# -- ids of schemas, partition specs and sort orders ------------------------------------------------
# An update's id is only a suggestion (Java's TableMetadata.Builder): an equal entry that exists is reused,
# otherwise the entry gets a fresh id one above the highest, so metadata never holds two entries with one id.

def _fresh_id(start: int, ids: list[int]) -> int:
    return max([start, *(i + 1 for i in ids)])


@apply_update.register
def _(update: AddSchemaUpdate, metadata: Any, context: CommitContext) -> Any:
    schema = update.schema_
    schemas.check_schema(schema, metadata.format_version)
    same = next((s for s in metadata.schemas if s == schema), None)  # pyiceberg's equality ignores the id
    if same is not None and schema.highest_field_id <= metadata.last_column_id:
        context.reused("schema", same.schema_id)
        return metadata
    if same is not None:  # a known schema that only moves last-column-id on
        context.add_update(update)
        context.added("schema", same.schema_id)
        return metadata.model_copy(update={"last_column_id": schema.highest_field_id})
    new_id = _fresh_id(metadata.current_schema_id, [s.schema_id for s in metadata.schemas])
    added = update.model_copy(update={"schema_": schema.model_copy(update={"schema_id": new_id})})
    context.added("schema", new_id)
    return apply_table_update(added, metadata, context)


@apply_update.register
def _(update: AddPartitionSpecUpdate, metadata: Any, context: CommitContext) -> Any:
    spec = update.spec
    same = next((s for s in metadata.partition_specs if spec.compatible_with(s)), None)
    if same is not None:
        context.reused("spec", same.spec_id)
        return metadata
    spec.check_compatible(_current_schema(metadata, "partition spec"))
    new_id = _fresh_id(0, [s.spec_id for s in metadata.partition_specs])
    added = update.model_copy(update={"spec": spec.model_copy(update={"spec_id": new_id})})
    context.added("spec", new_id)
    return apply_table_update(added, metadata, context)


@apply_update.register
def _(update: AddSortOrderUpdate, metadata: Any, context: CommitContext) -> Any:
    order = update.sort_order
    new_id: int | None
    if order.is_unsorted:
        new_id = UNSORTED_SORT_ORDER_ID
    else:
        new_id = next((o.order_id for o in metadata.sort_orders if o.fields == order.fields), None)
    if new_id is not None and any(o.order_id == new_id for o in metadata.sort_orders):
        context.reused("sort order", new_id)
        return metadata
    if new_id is None:
        order.check_compatible(_current_schema(metadata, "sort order"))
        new_id = _fresh_id(1, [o.order_id for o in metadata.sort_orders])  # 0 is the unsorted order's
    added = update.model_copy(update={"sort_order": order.model_copy(update={"order_id": new_id})})
    context.added("sort order", new_id)
    return apply_table_update(added, metadata, context)


# which kind of entry -1 refers to in each "make it current" update, and the field that holds the id
_MADE_CURRENT = {SetCurrentSchemaUpdate: ("schema", "schema_id"), SetDefaultSpecUpdate: ("spec", "spec_id"),
                 SetDefaultSortOrderUpdate: ("sort order", "sort_order_id")}


@apply_update.register(SetCurrentSchemaUpdate)
@apply_update.register(SetDefaultSpecUpdate)
@apply_update.register(SetDefaultSortOrderUpdate)
def _(update: Any, metadata: Any, context: CommitContext) -> Any:
    kind, field = _MADE_CURRENT[type(update)]
    resolved = context.resolve(kind, getattr(update, field))
    return apply_table_update(update.model_copy(update={field: resolved}), metadata, context)


def _current_schema(metadata: Any, what: str) -> Any:
    schema = metadata.schema_by_id(metadata.current_schema_id)
    if schema is None:
        raise ValueError(f"Cannot add a {what} before the table has a schema")
    return schema
