"""Iceberg table metadata decisions, delegated to pyiceberg: building new metadata, checking a
commit's requirements and applying its updates. Format v3, which pyiceberg 0.12 cannot write, is
completed by ``metadata_v3`` and the updates pyiceberg lacks by ``table_changes``. Pure functions;
nothing here touches storage."""

import json
from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import Field, TypeAdapter, ValidationError
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadataV1, TableMetadataV2, new_table_metadata
from pyiceberg.table.metadata import TableMetadataV3 as PyicebergV3
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import (
    AssertCreate,
    AssignUUIDUpdate,
    RemovePropertiesUpdate,
    SetPropertiesUpdate,
)
from pyiceberg.types import IcebergType, ListType, MapType, StructType
from pyiceberg.utils.datetime import datetime_to_millis

from lakeledger.domain import metadata_json, metadata_v3, schemas, v3_types
from lakeledger.domain.errors import BadRequest, CommitFailed, ImmutableProperty, InvalidArgument
from lakeledger.domain.pyiceberg_compat import empty_table_metadata, metadata_file_version, with_metadata_log_entry
from lakeledger.domain.table_changes import CommitContext, TableRequirement, TableUpdate, apply_update

TableMetadata = Annotated[TableMetadataV1 | TableMetadataV2 | metadata_v3.TableMetadataV3,
                          Field(discriminator="format_version")]
# metadata as pyiceberg builds it: its v3 included, which this catalog replaces with its own
IcebergTableMetadata = TableMetadataV1 | TableMetadataV2 | PyicebergV3

_requirements = TypeAdapter(list[TableRequirement])
_updates = TypeAdapter(list[TableUpdate])
_metadata = TypeAdapter(TableMetadata)

DEFAULT_FORMAT_VERSION = 2

# pyiceberg signals a malformed update with these; they become 400s, never 500s, of the type Iceberg's reference
# server gives (IllegalArgumentException), so Java clients raise what they raise against it.
_INVALID = (ValueError, TypeError, KeyError, IndexError, AttributeError, StopIteration, ValidationError,
            IcebergValidationError, NotImplementedError, AssertionError)


def parse_requirements(raw: Any) -> list[TableRequirement]:
    try:
        return _requirements.validate_python(raw if raw is not None else [])
    except ValidationError as e:
        raise InvalidArgument(f"Invalid requirements: {_describe(e)}") from None
    except _INVALID as e:
        raise InvalidArgument(f"Invalid requirements: {type(e).__name__} {e}") from None


def parse_updates(raw: Any) -> list[TableUpdate]:
    try:
        return _updates.validate_python(v3_types.in_updates(raw) if raw is not None else [])
    except ValidationError as e:
        raise InvalidArgument(f"Invalid updates: {_describe(e)}") from None
    except _INVALID as e:
        # pyiceberg's own validators fail on some shapes with plain errors (set-statistics without statistics)
        raise InvalidArgument(f"Invalid updates: {type(e).__name__} {e}") from None


def _describe(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg')}"


def is_create(requirements: list[TableRequirement]) -> bool:
    return any(isinstance(r, AssertCreate) for r in requirements)


def assigned_uuid(updates: list[TableUpdate]) -> UUID | None:
    for update in updates:
        if isinstance(update, AssignUUIDUpdate):
            return update.uuid
    return None


def new_metadata(schema: Schema, partition_spec: PartitionSpec | None, sort_order: SortOrder | None,
                 location: str, properties: dict[str, str], table_uuid: UUID) -> TableMetadata:
    """A table as a create request defines it; its ``format-version`` property picks the format
    (pyiceberg's rule, which also keeps that property out of the stored ones). ``location`` is kept as
    the client spelt it."""
    try:
        schemas.check_schema(schema, int(properties.get("format-version", DEFAULT_FORMAT_VERSION)))
        created = _with_defaults_of(schema, new_table_metadata(
            schema=schema,
            partition_spec=partition_spec or UNPARTITIONED_PARTITION_SPEC,
            sort_order=sort_order or UNSORTED_SORT_ORDER,
            location=location,
            properties=dict(properties),
            table_uuid=table_uuid,
        ))
        # pyiceberg's new_table_metadata does not check them (its commits do): a struct, a variant or a geometry
        # would be a partition or sort source readers cannot use
        created.spec().check_compatible(created.schema())
        created.sort_order().check_compatible(created.schema())
        if isinstance(created, PyicebergV3):  # pyiceberg's v3 (format-version 3), which it cannot write
            return metadata_v3.from_pyiceberg(created)
        return created
    except _INVALID as e:
        raise InvalidArgument(f"Invalid table definition: {e}") from None


def _with_defaults_of(requested: Schema, metadata: IcebergTableMetadata) -> IcebergTableMetadata:
    """pyiceberg gives a new table's schema fresh field ids but drops the fields' ``initial-default`` and
    ``write-default`` on the way (Java keeps them); they are carried over, field by field, from the request."""
    fresh = metadata.schema()
    struct = _carry_struct_defaults(fresh.as_struct(), requested.as_struct())
    if struct == fresh.as_struct():
        return metadata
    schema = Schema(*struct.fields, schema_id=fresh.schema_id, identifier_field_ids=fresh.identifier_field_ids)
    return metadata.model_copy(update={"schemas": [schema]})


def _carry_defaults(fresh: IcebergType, requested: IcebergType) -> IcebergType:
    """``fresh`` (the same structure as ``requested``, other ids) with the defaults of ``requested``."""
    if isinstance(fresh, StructType) and isinstance(requested, StructType):
        return _carry_struct_defaults(fresh, requested)
    if isinstance(fresh, ListType) and isinstance(requested, ListType):
        return fresh.model_copy(update={"element_type": _carry_defaults(fresh.element_type, requested.element_type)})
    if isinstance(fresh, MapType) and isinstance(requested, MapType):
        return fresh.model_copy(update={"key_type": _carry_defaults(fresh.key_type, requested.key_type),
                                        "value_type": _carry_defaults(fresh.value_type, requested.value_type)})
    return fresh


def _carry_struct_defaults(fresh: StructType, requested: StructType) -> StructType:
    return StructType(*(f.model_copy(update={
        "field_type": _carry_defaults(f.field_type, r.field_type),
        "initial_default": r.initial_default, "write_default": r.write_default})
        for f, r in zip(fresh.fields, requested.fields, strict=True)))


def apply_commit(base: TableMetadata | None, base_location: str | None,
                 requirements: list[TableRequirement], updates: list[TableUpdate]) -> TableMetadata:
    """The metadata after a commit, or CommitFailed when a requirement no longer holds. A commit that
    changes nothing returns ``base`` itself (no new metadata file is owed for it)."""
    for requirement in requirements:
        try:
            requirement.validate(base)
        except CommitFailedException as e:
            raise CommitFailed(str(e)) from None
    if base is not None:
        check_immutable_properties(base.properties, updates)
    try:
        if base is None:
            # built from pyiceberg's empty metadata, so the result is validated as a whole, as pyiceberg does
            return _updated(empty_table_metadata(), updates, None, validate=True)
        new = _updated(base, updates, base_location)
    except CommitFailedException as e:
        raise CommitFailed(str(e)) from None
    except BadRequest:
        raise
    except _INVALID as e:
        raise InvalidArgument(f"Invalid table update: {e}") from None
    # a table's uuid is its identity in the log, and Java clients refuse a table whose uuid changed
    if new.table_uuid != base.table_uuid:
        raise InvalidArgument(f"Cannot reassign the uuid of existing table {base.table_uuid}")
    return new


# Properties a table keeps from the commit that first sets them: the encryption key id names the key its encrypted
# manifests and data keys are wrapped with, so changing or dropping it would leave them unreadable.
IMMUTABLE_TABLE_PROPERTIES = ("encryption.key-id",)


def check_immutable_properties(properties: dict[str, str], updates: list[TableUpdate]) -> None:
    """Refuses a commit whose updates change or remove an immutable property the table has (``properties``, before
    the commit), as Lakekeeper does: setting one for the first time, or to the value it has, is allowed."""
    held = {key: properties[key] for key in IMMUTABLE_TABLE_PROPERTIES if key in properties}
    if not held:
        return
    for update in updates:
        if isinstance(update, SetPropertiesUpdate):
            for key, value in held.items():
                if key in update.updates and update.updates[key] != value:
                    raise ImmutableProperty("ImmutablePropertyModification",
                                            f"Cannot modify immutable property '{key}'")
        elif isinstance(update, RemovePropertiesUpdate):
            for key in held:
                if key in update.removals:
                    raise ImmutableProperty("ImmutablePropertyRemoval", f"Cannot remove immutable property '{key}'")


def _updated(base: TableMetadata, updates: list[TableUpdate], base_location: str | None,
             validate: bool = False) -> TableMetadata:
    """pyiceberg's ``update_table_metadata``, applying each update with the rules of ``table_changes``
    (pyiceberg's own, completed), minus its closing deep copy of the whole metadata: that copy grows
    with every snapshot and dominated commit time, and is not needed because metadata models are
    frozen and never mutated here, so versions can share their unchanged parts."""
    context = CommitContext()
    new = base
    for update in updates:
        new = apply_update(update, new, context)
    if not context.has_changes() and not validate:
        return base  # nothing changed: the commit owes no new metadata
    if base_location:
        new = with_metadata_log_entry(new, base_location, base.last_updated_ms)
    if base.last_updated_ms == new.last_updated_ms:
        new = new.model_copy(update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    if validate:
        new = _metadata.validate_python(v3_types.in_metadata(new.model_dump()))
    new.spec().check_compatible(new.schema())
    new.sort_order().check_compatible(new.schema())
    return new


DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"


def retired_metadata_files(base: TableMetadata | None, new: TableMetadata) -> list[str]:
    """The earlier metadata files that ``new`` drops from its metadata log (bounded by
    ``write.metadata.previous-versions-max``) and that the table asks to delete after the commit."""
    if base is None or new.properties.get(DELETE_AFTER_COMMIT, "false").lower() != "true":
        return []
    kept = {entry.metadata_file for entry in new.metadata_log}
    return [entry.metadata_file for entry in base.metadata_log if entry.metadata_file not in kept]


def next_metadata_location(metadata: TableMetadata, previous_location: str | None) -> str:
    version = metadata_file_version(previous_location) + 1 if previous_location else 0
    provider = load_location_provider(metadata.location, metadata.properties)
    return provider.new_table_metadata_file_location(version)


def serialize(metadata: TableMetadata, base: TableMetadata | None = None) -> bytes:
    """The metadata file's bytes; ``base``, the metadata it was committed on, lets what the two share be copied."""
    return metadata_json.to_json(metadata, base)


def parse(data: bytes) -> TableMetadata:
    """Metadata as stored in a metadata file; the inverse of ``serialize``."""
    try:
        if v3_types.may_hold(data):
            return _metadata.validate_python(v3_types.in_metadata(json.loads(data)))
        return _metadata.validate_json(data)
    except json.JSONDecodeError as e:
        raise IcebergValidationError(e) from e
    except ValidationError as e:
        raise IcebergValidationError(e) from e
