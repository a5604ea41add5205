"""The requirements of a table commit, refused with the messages of Iceberg's own ``UpdateRequirement``.

pyiceberg's models parse and check them; its messages differ from Java's, and clients read these: Iceberg's
catalog tests expect e.g. ``Requirement failed: current schema changed`` after a server-side retry, and a
create transaction that lost its race to ``Requirement failed: table already exists``. Each check also
follows the spec where pyiceberg is stricter: ``assert-ref-snapshot-id`` with a null id only asks that the
ref be absent (pyiceberg also refuses any ref but main on a table without snapshots)."""

from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import (
    AssertCreate as _AssertCreate,
)
from pyiceberg.table.update import (
    AssertCurrentSchemaId as _AssertCurrentSchemaId,
)
from pyiceberg.table.update import (
    AssertDefaultSortOrderId as _AssertDefaultSortOrderId,
)
from pyiceberg.table.update import (
    AssertDefaultSpecId as _AssertDefaultSpecId,
)
from pyiceberg.table.update import (
    AssertLastAssignedFieldId as _AssertLastAssignedFieldId,
)
from pyiceberg.table.update import (
    AssertLastAssignedPartitionId as _AssertLastAssignedPartitionId,
)
from pyiceberg.table.update import (
    AssertRefSnapshotId as _AssertRefSnapshotId,
)
from pyiceberg.table.update import (
    AssertTableUUID as _AssertTableUUID,
)

MISSING = "Requirement failed: current table metadata is missing"


def _failed(message: str) -> CommitFailedException:
    return CommitFailedException(f"Requirement failed: {message}")


def _existing(base: TableMetadata | None) -> TableMetadata:
    if base is None:
        raise CommitFailedException(MISSING)
    return base


# pyiceberg's requirements define ``validate(self, base_metadata)`` over pydantic's deprecated classmethod
# ``BaseModel.validate``, a clash its own types never meet a checker with: each override below carries the ignore
# that the clash needs (and only it).


class AssertCreate(_AssertCreate):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        if base_metadata is not None:
            raise _failed("table already exists")


class AssertTableUUID(_AssertTableUUID):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        base = _existing(base_metadata)
        if self.uuid != base.table_uuid:
            raise _failed(f"UUID does not match: expected {base.table_uuid} != {self.uuid}")


class AssertRefSnapshotId(_AssertRefSnapshotId):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        ref = _existing(base_metadata).refs.get(self.ref)
        if ref is None:
            if self.snapshot_id is not None:
                raise _failed(f"branch or tag {self.ref} is missing, expected {self.snapshot_id}")
        elif self.snapshot_id is None:
            raise _failed(f"{ref.snapshot_ref_type} {self.ref} was created concurrently")
        elif self.snapshot_id != ref.snapshot_id:
            raise _failed(f"{ref.snapshot_ref_type} {self.ref} has changed: expected id {self.snapshot_id} != "
                          f"{ref.snapshot_id}")


class AssertLastAssignedFieldId(_AssertLastAssignedFieldId):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        base = _existing(base_metadata)
        if base.last_column_id != self.last_assigned_field_id:
            raise _failed(f"last assigned field id changed: expected id {self.last_assigned_field_id} != "
                          f"{base.last_column_id}")


class AssertCurrentSchemaId(_AssertCurrentSchemaId):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        base = _existing(base_metadata)
        if base.current_schema_id != self.current_schema_id:
            raise _failed(f"current schema changed: expected id {self.current_schema_id} != "
                          f"{base.current_schema_id}")


class AssertLastAssignedPartitionId(_AssertLastAssignedPartitionId):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        base = _existing(base_metadata)
        if base.last_partition_id != self.last_assigned_partition_id:
            raise _failed(f"last assigned partition id changed: expected id {self.last_assigned_partition_id} != "
                          f"{base.last_partition_id}")


class AssertDefaultSpecId(_AssertDefaultSpecId):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        base = _existing(base_metadata)
        if base.default_spec_id != self.default_spec_id:
            raise _failed(f"default partition spec changed: expected id {self.default_spec_id} != "
                          f"{base.default_spec_id}")


class AssertDefaultSortOrderId(_AssertDefaultSortOrderId):
    def validate(self, base_metadata: TableMetadata | None) -> None:  # type: ignore[override]
        base = _existing(base_metadata)
        if base.default_sort_order_id != self.default_sort_order_id:
            raise _failed(f"default sort order changed: expected id {self.default_sort_order_id} != "
                          f"{base.default_sort_order_id}")


REQUIREMENTS = (AssertCreate, AssertTableUUID, AssertRefSnapshotId, AssertLastAssignedFieldId, AssertCurrentSchemaId,
                AssertLastAssignedPartitionId, AssertDefaultSpecId, AssertDefaultSortOrderId)
