"""Format v3 table metadata, which pyiceberg 0.12 reads but refuses to write. Its model is extended
with what the v3 spec adds and pyiceberg drops (``encryption-keys``, a snapshot's ``key-id``), makes
``next-row-id`` required as the spec does, and serialises itself; everything else, including the
row-lineage checks of add-snapshot, stays pyiceberg's."""

from typing import Any

from pydantic import Field, SerializeAsAny, field_serializer
from pyiceberg.table.metadata import TableMetadataV3 as _PyicebergV3
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.typedef import IcebergBaseModel

from lakeledger.domain import v3_types
from lakeledger.domain.encryption_keys import EncryptedKey

FORMAT_VERSION = 3
# the spec starts row ids at 0, on create and on upgrade alike; existing snapshots keep no first-row-id
INITIAL_ROW_ID = 0


class SnapshotV3(Snapshot):
    key_id: str | None = Field(alias="key-id", default=None)
    """The encryption key that encrypts the key metadata of this snapshot's manifest list."""


class TableMetadataV3(_PyicebergV3):
    next_row_id: int = Field(alias="next-row-id", ge=0)
    encryption_keys: list[EncryptedKey] | None = Field(alias="encryption-keys", default=None)
    # pydantic narrows a field by declaring it again; mypy sees a list's element type changed (lists are invariant),
    # harmless here as metadata models are frozen
    snapshots: list[SnapshotV3] = Field(default_factory=list)  # type: ignore[assignment]

    # pyiceberg's serializer declares plain snapshots, which would drop key-id; snapshots carried over
    # from a v1/v2 table are plain pyiceberg ones and are written as they are
    @field_serializer("snapshots")
    def serialize_snapshots(self, snapshots: list[Snapshot]) -> list[SerializeAsAny[Snapshot]]:
        return snapshots

    # pyiceberg's own signature (its v3 model refuses to write; this writes as its base model does), which differs
    # from pydantic's keyword-only one in pyiceberg's stubs already
    def model_dump_json(self, exclude_none: bool = True, exclude: Any | None = None,  # type: ignore[override]
                        by_alias: bool = True, **kwargs: Any) -> str:
        return IcebergBaseModel.model_dump_json(self, exclude_none=exclude_none, exclude=exclude, by_alias=by_alias,
                                                **kwargs)


def from_pyiceberg(metadata: _PyicebergV3) -> TableMetadataV3:
    """pyiceberg's own v3 metadata (as ``new_table_metadata`` builds it) as a writable one."""
    dumped = {**metadata.model_dump(), "next-row-id": INITIAL_ROW_ID}
    return TableMetadataV3.model_validate(v3_types.in_metadata(dumped))  # the dump spells the v3 types out


def upgraded(metadata: Any) -> TableMetadataV3:
    """A v1 or v2 table's metadata as v3. Built without validation, like pyiceberg's own upgrade: a
    create transaction upgrades an empty metadata before its first schema is added."""
    fields = {name: value for name, value in dict(metadata).items() if name in TableMetadataV3.model_fields}
    fields.update(format_version=FORMAT_VERSION, next_row_id=INITIAL_ROW_ID,
                  last_sequence_number=metadata.last_sequence_number if metadata.format_version >= 2 else 0)
    return TableMetadataV3.model_construct(**fields)
