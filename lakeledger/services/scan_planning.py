"""Server-side scan planning (Iceberg REST ``planTableScan``, ``fetchPlanningResult``, ``fetchScanTasks``) with
pyiceberg's own planner: manifests pruned by their partition summaries, data files by partition and column
statistics, a residual filter per file, and the position delete files that apply to each data file; the equality
delete files that apply to each (which pyiceberg's planner refuses) are paired by lakeledger/domain/equality_deletes.py.

Work is split by data manifest: a snapshot with at most ``manifests_per_task`` data manifests is planned at once and
its file scan tasks answered inline; a larger one answers plan tasks, each a range of its data manifests that
``fetchScanTasks`` plans (every delete manifest is read for each range: a range's data files may be deleted from
by any of them). A snapshot with more than ``submit_above_manifests`` data manifests is answered ``submitted``, its
planning then done by ``fetchPlanningResult``. Plan ids and plan tasks hold no state (lakeledger/domain/scan_plans.py).

Everything here blocks (storage reads): callers run it in a worker thread."""

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from pydantic import TypeAdapter, ValidationError
from pyiceberg.catalog.rest.scan_planning import PlanTableScanRequest
from pyiceberg.conversions import from_bytes
from pyiceberg.expressions import AlwaysTrue, BooleanExpression, SerializableBooleanExpression
from pyiceberg.expressions.visitors import bind
from pyiceberg.manifest import (
    INITIAL_SEQUENCE_NUMBER,
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.schema import Schema
from pyiceberg.table import FileScanTask, ManifestGroupPlanner
from pyiceberg.table.snapshots import Operation, Snapshot, ancestors_between_ids
from pyiceberg.types import PrimitiveType

from lakeledger.domain import scan_plans
from lakeledger.domain.equality_deletes import EqualityDelete, EqualityDeleteIndex
from lakeledger.domain.errors import InvalidArgument, NoSuchPlanId, NoSuchPlanTask, NotFound
from lakeledger.domain.scan_plans import PlanRequest, json_value
from lakeledger.domain.table_metadata import TableMetadata
from lakeledger.storage.base import Storage
from lakeledger.storage.iceberg_io import StorageFileIO

_EXPRESSION = TypeAdapter(SerializableBooleanExpression)
_CONTENT = {DataFileContent.DATA: "data", DataFileContent.POSITION_DELETES: "position-deletes",
            DataFileContent.EQUALITY_DELETES: "equality-deletes"}


@dataclass(frozen=True)
class PlanningLimits:
    manifests_per_task: int = 100
    submit_above_manifests: int = 0  # 0: never answer "submitted"


def parse_request(body: Any, table_id: UUID, metadata: TableMetadata) -> PlanRequest:
    """A planTableScan body, validated against the table (its snapshots, schema and filter), as a plan."""
    try:
        request = PlanTableScanRequest.model_validate(body)
    except Exception as e:  # pyiceberg's expression parsing raises more than ValidationError on odd JSON
        raise InvalidArgument(f"Invalid scan planning request: {_reason(e)}") from None
    raw_filter = body.get("filter") if isinstance(body, dict) else None
    if request.start_snapshot_id is not None:
        assert request.end_snapshot_id is not None  # PlanTableScanRequest requires it
        _snapshot(metadata, request.start_snapshot_id)
        _snapshot(metadata, request.end_snapshot_id)
        if not any(s.snapshot_id == request.start_snapshot_id
                   for s in _ancestors(metadata, None, request.end_snapshot_id)):
            raise InvalidArgument(f"Snapshot {request.start_snapshot_id} is not an ancestor of "
                                  f"{request.end_snapshot_id}")
        snapshot_id: int | None = request.end_snapshot_id
    elif request.end_snapshot_id is not None:
        raise InvalidArgument("end-snapshot-id needs start-snapshot-id (an incremental scan)")
    elif request.snapshot_id is not None:
        snapshot_id = _snapshot(metadata, request.snapshot_id).snapshot_id
    else:
        current = metadata.current_snapshot()
        snapshot_id = current.snapshot_id if current is not None else None
    plan = PlanRequest(table_id=table_id, snapshot_id=snapshot_id, start_snapshot_id=request.start_snapshot_id,
                       filter=raw_filter, select=tuple(request.select) if request.select is not None else None,
                       case_sensitive=request.case_sensitive, use_snapshot_schema=request.use_snapshot_schema,
                       stats_fields=tuple(request.stats_fields) if request.stats_fields is not None else None)
    schema = _schema(plan, metadata)
    _bound(schema, plan)  # a filter naming no column of the table is the client's error, now
    for name in (plan.select or ()) + (plan.stats_fields or ()):
        _field_id(schema, name, plan.case_sensitive)
    return plan


def _reason(e: Exception) -> str:
    if isinstance(e, ValidationError):
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    return str(e) or "an expression this server cannot read"


def _snapshot(metadata: TableMetadata, snapshot_id: int) -> Snapshot:
    found = metadata.snapshot_by_id(snapshot_id)
    if found is None:
        raise InvalidArgument(f"Snapshot does not exist: {snapshot_id}")
    return found


def _ancestors(metadata: TableMetadata, start: int | None, end: int) -> Iterable[Snapshot]:
    return ancestors_between_ids(start, end, metadata)


def _schema(plan: PlanRequest, metadata: TableMetadata) -> Schema:
    if plan.use_snapshot_schema and plan.snapshot_id is not None:
        snapshot = metadata.snapshot_by_id(plan.snapshot_id)
        if snapshot is not None and snapshot.schema_id is not None:
            for schema in metadata.schemas:
                if schema.schema_id == snapshot.schema_id:
                    return schema
    return metadata.schema()


def _row_filter(plan: PlanRequest) -> BooleanExpression:
    if plan.filter is None:
        return AlwaysTrue()
    try:
        return _EXPRESSION.validate_python(plan.filter)
    except Exception as e:  # as above: whatever fails to parse is the client's expression
        raise InvalidArgument(f"Invalid filter: {_reason(e)}") from None


def _bound(schema: Schema, plan: PlanRequest) -> BooleanExpression:
    row_filter = _row_filter(plan)
    try:
        bind(schema, row_filter, plan.case_sensitive)
    except Exception as e:  # pyiceberg raises ValueError, TypeError or its own ValidationError for a bad term
        raise InvalidArgument(f"Invalid filter: {e}") from None
    return row_filter


def _field_id(schema: Schema, name: str, case_sensitive: bool) -> int:
    try:
        return schema.find_field(name, case_sensitive).field_id
    except ValueError:
        raise InvalidArgument(f"No such field in the table's schema: {name}") from None


class ScanPlanner:
    """Plans one plan's data manifests (all, or a range) against the metadata the table has now."""

    def __init__(self, plan: PlanRequest, metadata: TableMetadata, storage: Storage, missing: Callable[[], NotFound]):
        self.plan = plan
        self.metadata = metadata
        self.io = StorageFileIO(storage)
        if plan.snapshot_id is not None and metadata.snapshot_by_id(plan.snapshot_id) is None:
            raise missing()  # expired since: the plan cannot be served any more
        self.schema = _schema(plan, metadata)
        self._listed: tuple[list[ManifestFile], list[ManifestFile]] | None = None
        self._partition_types: dict[int, list[str]] = {}  # per spec: building one costs more than a file's JSON

    def _manifests(self) -> tuple[list[ManifestFile], list[ManifestFile]]:
        if self._listed is None:
            self._listed = self._list_manifests()
        return self._listed

    def _list_manifests(self) -> tuple[list[ManifestFile], list[ManifestFile]]:
        """(data manifests, delete manifests) of the plan's snapshot; for an incremental plan, the data manifests
        the range's appends added (and no deletes: an append scan reads what was appended, as Java's)."""
        if self.plan.snapshot_id is None:
            return [], []
        snapshot = self.metadata.snapshot_by_id(self.plan.snapshot_id)
        assert snapshot is not None
        if self.plan.start_snapshot_id is not None:
            data = []
            for appended in _ancestors(self.metadata, self.plan.start_snapshot_id, self.plan.snapshot_id):
                if appended.summary is None or appended.summary.operation != Operation.APPEND:
                    continue
                data += [m for m in appended.manifests(self.io)
                         if m.content == ManifestContent.DATA and m.added_snapshot_id == appended.snapshot_id]
            return data, []
        manifests = snapshot.manifests(self.io)
        return ([m for m in manifests if m.content == ManifestContent.DATA],
                [m for m in manifests if m.content == ManifestContent.DELETES])

    def data_manifest_count(self) -> int:
        return len(self._manifests()[0])

    def tasks(self, first: int = 0, end: int | None = None) -> dict[str, Any]:
        """ScanTasks (``delete-files``, ``file-scan-tasks``) of the data manifests ``[first, end)``."""
        data, deletes = self._manifests()
        metadata = self.metadata
        if self.schema is not metadata.schema():
            metadata = metadata.model_copy(update={"current_schema_id": self.schema.schema_id})
        planner = ManifestGroupPlanner(metadata, self.io, _bound(self.schema, self.plan), self.plan.case_sensitive)
        pairing = _EqualityDeletePairing(metadata, self._incremental_filter())
        planned = planner.plan_files(data[first:end] + deletes, pairing.keep)
        return self._render(pairing.attach(planned))

    def _incremental_filter(self) -> Callable[[ManifestEntry], bool]:
        if self.plan.start_snapshot_id is None or self.plan.snapshot_id is None:
            return lambda _: True
        ids = {s.snapshot_id for s in _ancestors(self.metadata, self.plan.start_snapshot_id, self.plan.snapshot_id)}
        return lambda entry: entry.status == ManifestEntryStatus.ADDED and entry.snapshot_id in ids

    def _render(self, planned: Iterable[FileScanTask]) -> dict[str, Any]:
        delete_files: list[dict[str, Any]] = []
        delete_index: dict[str, int] = {}
        tasks = []
        stats_ids = {_field_id(self.schema, n, self.plan.case_sensitive) for n in self.plan.stats_fields or ()}
        for task in planned:
            references = []
            for delete in sorted(task.delete_files, key=lambda d: d.file_path):
                if delete.file_path not in delete_index:
                    delete_index[delete.file_path] = len(delete_files)
                    delete_files.append(self._content_file(delete, set()))
                references.append(delete_index[delete.file_path])
            rendered: dict[str, Any] = {"data-file": self._content_file(task.file, stats_ids)}
            if references:
                rendered["delete-file-references"] = references
            rendered["residual-filter"] = True if isinstance(task.residual, AlwaysTrue) else \
                _EXPRESSION.dump_python(task.residual, mode="json", by_alias=True)
            tasks.append(rendered)
        return {"delete-files": delete_files, "file-scan-tasks": tasks} if delete_files else {"file-scan-tasks": tasks}

    def _content_file(self, file: DataFile, stats_ids: set[int]) -> dict[str, Any]:
        types = self._partition_types.get(file.spec_id)
        if types is None:
            partition_type = self.metadata.specs()[file.spec_id].partition_type(self.schema)
            types = self._partition_types[file.spec_id] = [str(field.field_type) for field in partition_type.fields]
        partition = [json_value(type_name, file.partition[i]) for i, type_name in enumerate(types)]
        rendered: dict[str, Any] = {
            "spec-id": file.spec_id, "partition": partition, "content": _CONTENT[file.content],
            "file-path": file.file_path, "file-format": file.file_format.value.lower(),
            "file-size-in-bytes": file.file_size_in_bytes, "record-count": file.record_count,
        }
        if file.key_metadata:
            rendered["key-metadata"] = file.key_metadata.hex().upper()
        if file.split_offsets:
            rendered["split-offsets"] = list(file.split_offsets)
        if file.content == DataFileContent.DATA and file.sort_order_id is not None:
            rendered["sort-order-id"] = file.sort_order_id
        if file.content == DataFileContent.EQUALITY_DELETES and file.equality_ids:
            rendered["equality-ids"] = list(file.equality_ids)
        for key, name in (("referenced_data_file", "referenced-data-file"), ("content_offset", "content-offset"),
                          ("content_size_in_bytes", "content-size-in-bytes")):
            value = getattr(file, key, None) if file.content == DataFileContent.POSITION_DELETES else None
            if value is not None:
                rendered[name] = value
        if stats_ids:
            rendered.update(self._stats(file, stats_ids))
        return rendered

    def _stats(self, file: DataFile, ids: set[int]) -> dict[str, Any]:
        """The column statistics of the ``stats-fields`` the client asked for, as parallel key/value arrays."""
        out: dict[str, Any] = {}
        for name, counts in (("column-sizes", file.column_sizes), ("value-counts", file.value_counts),
                             ("null-value-counts", file.null_value_counts),
                             ("nan-value-counts", file.nan_value_counts)):
            picked = sorted((k, v) for k, v in (counts or {}).items() if k in ids)
            if picked:
                out[name] = {"keys": [k for k, _ in picked], "values": [v for _, v in picked]}
        for name, bounds in (("lower-bounds", file.lower_bounds), ("upper-bounds", file.upper_bounds)):
            keys, values = [], []
            for field_id, raw in sorted((bounds or {}).items()):
                field_type = self.schema.find_type(field_id) if field_id in ids else None
                if isinstance(field_type, PrimitiveType):
                    keys.append(field_id)
                    values.append(json_value(str(field_type), from_bytes(field_type, raw)))
            if keys:
                out[name] = {"keys": keys, "values": values}
        return out


class _EqualityDeletePairing:
    """pyiceberg's planner refuses equality delete files: this takes them out of its manifest entries as they are
    read (with every data file's data sequence number, which its tasks do not carry) and adds them to the tasks of
    the data files they apply to (lakeledger/domain/equality_deletes.py)."""

    def __init__(self, metadata: TableMetadata, entry_filter: Callable[[ManifestEntry], bool]):
        self.specs = metadata.specs()
        self.entry_filter = entry_filter
        self.equality: list[EqualityDelete[DataFile]] = []
        self.data_sequence_numbers: dict[str, int] = {}

    def keep(self, entry: ManifestEntry) -> bool:
        """The planner's manifest entry filter: the entries it should plan itself."""
        if not self.entry_filter(entry):
            return False
        file = entry.data_file
        sequence_number = entry.sequence_number if entry.sequence_number is not None else INITIAL_SEQUENCE_NUMBER
        if file.content == DataFileContent.EQUALITY_DELETES:
            self.equality.append(EqualityDelete(file, sequence_number, file.spec_id, file.partition,
                                                self.specs[file.spec_id].is_unpartitioned()))
            return False
        if file.content == DataFileContent.DATA:
            self.data_sequence_numbers[file.file_path] = sequence_number
        return True

    def attach(self, planned: Iterable[FileScanTask]) -> Iterable[FileScanTask]:
        index = EqualityDeleteIndex(self.equality)
        if not index:
            return planned
        tasks = list(planned)
        for task in tasks:
            task.delete_files.update(index.for_data_file(self.data_sequence_numbers[task.file.file_path],
                                                         task.file.spec_id, task.file.partition))
        return tasks


def plan_answer(planner: ScanPlanner, limits: PlanningLimits, submit: bool = True) -> dict[str, Any]:
    """The completed (or, for a big plan and ``submit``, submitted) result of ``planner``'s plan."""
    plan_id = scan_plans.encode_plan(planner.plan)
    count = planner.data_manifest_count()
    if submit and limits.submit_above_manifests and count > limits.submit_above_manifests:
        return {"status": "submitted", "plan-id": plan_id}
    if count <= limits.manifests_per_task:
        return {"status": "completed", "plan-id": plan_id, **planner.tasks()}
    tasks = [scan_plans.encode_task(planner.plan, first, end)
             for first, end in scan_plans.chunks(count, limits.manifests_per_task)]
    return {"status": "completed", "plan-id": plan_id, "plan-tasks": tasks}


def decode_plan(plan_id: str, table_id: UUID) -> PlanRequest:
    try:
        return scan_plans.decode_plan(plan_id, table_id)
    except scan_plans.UnknownPlan:
        raise NoSuchPlanId(f"Plan does not exist: {plan_id}") from None


def decode_task(task: str, table_id: UUID) -> tuple[PlanRequest, int, int]:
    try:
        return scan_plans.decode_task(task, table_id)
    except scan_plans.UnknownPlan:
        raise NoSuchPlanTask(f"Plan task does not exist: {task}") from None
