"""Iceberg table metadata decisions, delegated to pyiceberg: building new metadata, checking a
commit's requirements and applying its updates. Pure functions; nothing here touches storage."""

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import TypeAdapter, ValidationError
from pyiceberg.catalog import MetastoreCatalog as _PyicebergCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, new_table_metadata
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import (
    AssertCreate,
    AssignUUIDUpdate,
    TableRequirement,
    TableUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
    update_table_metadata,
)
from pyiceberg.utils.datetime import datetime_to_millis

from .errors import BadRequest, CommitFailed

_requirements = TypeAdapter(list[TableRequirement])
_updates = TypeAdapter(list[TableUpdate])

# pyiceberg signals a malformed update with these; they become 400s, never 500s.
_INVALID = (ValueError, TypeError, KeyError, IndexError, AttributeError, ValidationError,
            IcebergValidationError, NotImplementedError, AssertionError)


def parse_requirements(raw: Any) -> list[TableRequirement]:
    try:
        return _requirements.validate_python(raw if raw is not None else [])
    except ValidationError as e:
        raise BadRequest(f"Invalid requirements: {_describe(e)}") from None


def parse_updates(raw: Any) -> list[TableUpdate]:
    try:
        return _updates.validate_python(raw if raw is not None else [])
    except ValidationError as e:
        raise BadRequest(f"Invalid updates: {_describe(e)}") from None


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
    try:
        return new_table_metadata(
            schema=schema,
            partition_spec=partition_spec or UNPARTITIONED_PARTITION_SPEC,
            sort_order=sort_order or UNSORTED_SORT_ORDER,
            location=location,
            properties=dict(properties),
            table_uuid=table_uuid,
        )
    except _INVALID as e:
        raise BadRequest(f"Invalid table definition: {e}") from None


def apply_commit(base: TableMetadata | None, base_location: str | None,
                 requirements: list[TableRequirement], updates: list[TableUpdate]) -> TableMetadata:
    """The metadata after a commit, or CommitFailed when a requirement no longer holds."""
    for requirement in requirements:
        try:
            requirement.validate(base)
        except CommitFailedException as e:
            raise CommitFailed(str(e)) from None
    try:
        if base is None:
            return update_table_metadata(base_metadata=_PyicebergCatalog._empty_table_metadata(),
                                         updates=tuple(updates), enforce_validation=True)
        return _updated(base, updates, base_location)
    except CommitFailedException as e:
        raise CommitFailed(str(e)) from None
    except _INVALID as e:
        raise BadRequest(f"Invalid table update: {e}") from None


def _updated(base: TableMetadata, updates: list[TableUpdate], base_location: str | None) -> TableMetadata:
    """pyiceberg's ``update_table_metadata`` for an existing table, applying each update with
    pyiceberg's own rules, minus its closing deep copy of the whole metadata: that copy grows with
    every snapshot and dominated commit time, and is not needed because metadata models are frozen
    and never mutated here, so versions can share their unchanged parts."""
    context = _TableMetadataUpdateContext()
    new = base
    for update in updates:
        new = _apply_table_update(update, new, context)
    if context.has_changes():
        if base_location:
            new = _update_table_metadata_log(new, base_location, base.last_updated_ms)
        if base.last_updated_ms == new.last_updated_ms:
            new = new.model_copy(update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    new.spec().check_compatible(new.schema())
    new.sort_order().check_compatible(new.schema())
    return new


def next_metadata_location(metadata: TableMetadata, previous_location: str | None) -> str:
    version = _PyicebergCatalog._parse_metadata_version(previous_location) + 1 if previous_location else 0
    provider = load_location_provider(metadata.location, metadata.properties)
    return provider.new_table_metadata_file_location(version)


def serialize(metadata: TableMetadata) -> bytes:
    return metadata.model_dump_json().encode()


def parse(data: bytes) -> TableMetadata:
    """Metadata as stored in a metadata file; the inverse of ``serialize``."""
    return TableMetadataUtil.parse_raw(data)
