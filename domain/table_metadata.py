"""Iceberg table metadata decisions, delegated to pyiceberg: building new metadata, checking a
commit's requirements and applying its updates. Format v3, which pyiceberg 0.12 cannot write, is
completed by ``metadata_v3`` and the updates pyiceberg lacks by ``table_changes``. Pure functions;
nothing here touches storage."""

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import Field, TypeAdapter, ValidationError
from pyiceberg.catalog import MetastoreCatalog as _PyicebergCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import (
    TableMetadataV1,
    TableMetadataV2,
    new_table_metadata,
)
from pyiceberg.table.sorting import UNSORTED_SORT_ORDER, SortOrder
from pyiceberg.table.update import (
    AssertCreate,
    AssignUUIDUpdate,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)
from pyiceberg.utils.datetime import datetime_to_millis

from lakeledger.domain import metadata_v3
from lakeledger.domain.errors import BadRequest, CommitFailed
from lakeledger.domain.table_changes import TableRequirement, TableUpdate, apply_update

TableMetadata = Annotated[TableMetadataV1 | TableMetadataV2 | metadata_v3.TableMetadataV3,
                          Field(discriminator="format_version")]

_requirements = TypeAdapter(list[TableRequirement])
_updates = TypeAdapter(list[TableUpdate])
_metadata = TypeAdapter(TableMetadata)

# pyiceberg signals a malformed update with these; they become 400s, never 500s.
_INVALID = (ValueError, TypeError, KeyError, IndexError, AttributeError, StopIteration, ValidationError,
            IcebergValidationError, NotImplementedError, AssertionError)


def parse_requirements(raw: Any) -> list[TableRequirement]:
    try:
        return _requirements.validate_python(raw if raw is not None else [])
    except ValidationError as e:
        raise BadRequest(f"Invalid requirements: {_describe(e)}") from None
    except _INVALID as e:
        raise BadRequest(f"Invalid requirements: {type(e).__name__} {e}") from None


def parse_updates(raw: Any) -> list[TableUpdate]:
    try:
        return _updates.validate_python(raw if raw is not None else [])
    except ValidationError as e:
        raise BadRequest(f"Invalid updates: {_describe(e)}") from None
    except _INVALID as e:
        # pyiceberg's own validators fail on some shapes with plain errors (set-statistics without statistics)
        raise BadRequest(f"Invalid updates: {type(e).__name__} {e}") from None


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
    (pyiceberg's rule, which also keeps that property out of the stored ones)."""
    try:
        metadata = new_table_metadata(
            schema=schema,
            partition_spec=partition_spec or UNPARTITIONED_PARTITION_SPEC,
            sort_order=sort_order or UNSORTED_SORT_ORDER,
            location=location,
            properties=dict(properties),
            table_uuid=table_uuid,
        )
        if metadata.format_version == metadata_v3.FORMAT_VERSION:
            metadata = metadata_v3.from_pyiceberg(metadata)
        return metadata
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
            # built from pyiceberg's empty metadata, so the result is validated as a whole, as pyiceberg does
            return _updated(_PyicebergCatalog._empty_table_metadata(), updates, None, validate=True)
        new = _updated(base, updates, base_location)
    except CommitFailedException as e:
        raise CommitFailed(str(e)) from None
    except _INVALID as e:
        raise BadRequest(f"Invalid table update: {e}") from None
    # a table's uuid is its identity in the log, and Java clients refuse a table whose uuid changed
    if new.table_uuid != base.table_uuid:
        raise BadRequest(f"Cannot reassign the uuid of existing table {base.table_uuid}")
    return new


def _updated(base: TableMetadata, updates: list[TableUpdate], base_location: str | None,
             validate: bool = False) -> TableMetadata:
    """pyiceberg's ``update_table_metadata``, applying each update with the rules of ``table_changes``
    (pyiceberg's own, completed), minus its closing deep copy of the whole metadata: that copy grows
    with every snapshot and dominated commit time, and is not needed because metadata models are
    frozen and never mutated here, so versions can share their unchanged parts."""
    context = _TableMetadataUpdateContext()
    new = base
    for update in updates:
        new = apply_update(update, new, context)
    if context.has_changes():
        if base_location:
            new = _update_table_metadata_log(new, base_location, base.last_updated_ms)
        if base.last_updated_ms == new.last_updated_ms:
            new = new.model_copy(update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())})
    if validate:
        new = _metadata.validate_python(new.model_dump())
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
    try:
        return _metadata.validate_json(data)
    except ValidationError as e:
        raise IcebergValidationError(e) from e
