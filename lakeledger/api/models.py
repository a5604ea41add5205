"""Request bodies of the Iceberg REST API, validated at the edge. Table schema, partition spec and
sort order are pyiceberg's own models; commit requirements and updates are kept as received and
parsed by the domain with pyiceberg's unions (so the event log stores exactly what was sent)."""

from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.table.sorting import SortOrder
from pyiceberg.view.metadata import ViewVersion

from lakeledger.domain import v3_types
from lakeledger.domain.partition_specs import numbered_partition_fields


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    @model_validator(mode="wrap")
    @classmethod
    def _plain_errors_are_invalid_input(cls, data: Any, handler):
        """pyiceberg's models fail on some malformed shapes (a default value of an unknown type, a geometry's
        default, a geography's unknown algorithm) with a plain TypeError, NotImplementedError or its own
        ValidationError, which pydantic would let escape as a 500; it is bad input like any other."""
        try:
            return handler(_without_nulls_of_optional_fields(cls, data))
        except (TypeError, KeyError, AttributeError, NotImplementedError, IcebergValidationError) as e:
            raise ValueError(f"{type(e).__name__}: {e}") from None

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        """The served document says what the validator does: an optional field may be sent as `null` (absent), so
        a client or a fuzzer reading the document meets no request it calls invalid that we accept."""
        schema = handler(core_schema)
        target = handler.resolve_ref_schema(schema)
        required = set(target.get("required", ()))
        for key, field in target.get("properties", {}).items():
            if key not in required and not _admits_null(field):
                kept = {k: field.pop(k) for k in ("title", "description", "default", "examples") if k in field}
                target["properties"][key] = {"anyOf": [field, {"type": "null"}], **kept}
        return schema


def _admits_null(field: dict) -> bool:
    return field.get("type") == "null" or any(_admits_null(choice) for choice in field.get("anyOf", ()))


def _without_nulls_of_optional_fields(model: type[BaseModel], data: Any) -> Any:
    """An optional field sent as `null` is absent (iceberg-go sends `"properties": null`, `"removals": null`); a
    required one stays `null`, and is refused."""
    if not isinstance(data, dict) or None not in data.values():
        return data
    optional = {key for name, field in model.model_fields.items() if not field.is_required()
                for key in (name, field.alias) if key}
    return {key: value for key, value in data.items() if value is not None or key not in optional}


def _without_nulls(data: Any, *keys: str) -> Any:
    """``data`` without the optional ``keys`` it sends as `null` (in pyiceberg's models, where `null` is refused)."""
    if not isinstance(data, dict) or not any(key in data and data[key] is None for key in keys):
        return data
    return {key: value for key, value in data.items() if value is not None or key not in keys}


def schema_without_nulls(schema: Any) -> Any:
    """A schema as sent, ready for pyiceberg's model: without its `null`s, and with the v3 types pyiceberg lacks in
    place (lakeledger/domain/v3_types.py)."""
    return v3_types.in_struct(_without_nulls(schema, "schema-id", "identifier-field-ids"))


class CreateNamespaceRequest(_Body):
    namespace: list[str]
    properties: dict[str, str] = Field(default_factory=dict)


class UpdateNamespacePropertiesRequest(_Body):
    removals: list[str] = Field(default_factory=list)
    updates: dict[str, str] = Field(default_factory=dict)


class CreateTableRequest(_Body):
    name: str
    location: str | None = None
    table_schema: Schema = Field(alias="schema")
    partition_spec: PartitionSpec | None = Field(default=None, alias="partition-spec")
    write_order: SortOrder | None = Field(default=None, alias="write-order")
    stage_create: bool = Field(default=False, alias="stage-create")
    properties: dict[str, str] = Field(default_factory=dict)

    @field_validator("partition_spec", mode="before")
    @classmethod
    def _numbered(cls, spec: Any) -> Any:
        return numbered_partition_fields(_without_nulls(spec, "spec-id"))

    @field_validator("table_schema", mode="before")
    @classmethod
    def _schema(cls, schema: Any) -> Any:
        return schema_without_nulls(schema)


class TableIdentifier(_Body):
    namespace: list[str]
    name: str


class CommitTableRequest(_Body):
    identifier: TableIdentifier | None = None
    requirements: list[dict[str, Any]] = Field(default_factory=list)
    updates: list[dict[str, Any]] = Field(default_factory=list)


class CommitTransactionRequest(_Body):
    table_changes: list[CommitTableRequest] = Field(alias="table-changes")


class RenameTableRequest(_Body):
    source: TableIdentifier
    destination: TableIdentifier


class RegisterTableRequest(_Body):
    name: str
    metadata_location: str = Field(alias="metadata-location")
    overwrite: bool = False


class ReportMetricsRequest(_Body):
    report_type: str | None = Field(default=None, alias="report-type")


class CreateViewRequest(_Body):
    name: str
    location: str | None = None
    view_schema: Schema = Field(alias="schema")
    view_version: ViewVersion = Field(alias="view-version")
    properties: dict[str, str] = Field(default_factory=dict)

    @field_validator("view_schema", mode="before")
    @classmethod
    def _schema(cls, schema: Any) -> Any:
        return schema_without_nulls(schema)


class CommitViewRequest(_Body):
    identifier: TableIdentifier | None = None
    requirements: list[dict[str, Any]] = Field(default_factory=list)
    updates: list[dict[str, Any]]


class RegisterViewRequest(_Body):
    name: str
    metadata_location: str = Field(alias="metadata-location")


class CreateGenericTableRequest(_Body):
    """Lakekeeper's CreateGenericTableRequest: a non-Iceberg table's name, opaque format and what its creator says
    of it (schema and statistics are free-form JSON, kept but never checked against its files)."""

    name: str
    format: str
    base_location: str | None = Field(default=None, alias="base-location")
    doc: str | None = None
    properties: dict[str, str] | None = None
    table_schema: Any = Field(default=None, alias="schema")
    statistics: Any = None


class PlanTableScanRequest(BaseModel):
    """planTableScan's request, as the spec names it; the filter is Iceberg's expression JSON, read by pyiceberg
    (lakeledger/services/scan_planning.py)."""

    model_config = ConfigDict(populate_by_name=True)

    snapshot_id: int | None = Field(default=None, alias="snapshot-id")
    select: list[str] | None = None
    filter: Any = None
    min_rows_requested: int | None = Field(default=None, alias="min-rows-requested")
    case_sensitive: bool = Field(default=True, alias="case-sensitive")
    use_snapshot_schema: bool = Field(default=False, alias="use-snapshot-schema")
    start_snapshot_id: int | None = Field(default=None, alias="start-snapshot-id")
    end_snapshot_id: int | None = Field(default=None, alias="end-snapshot-id")
    stats_fields: list[str] | None = Field(default=None, alias="stats-fields")


class FetchScanTasksRequest(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    plan_task: str = Field(alias="plan-task")


class QueryEventsRequest(BaseModel):
    """The Events API's request (apache/iceberg PR #12584's QueryEventsRequest). Unknown members are refused: a
    filter this server does not know would otherwise be ignored and widen the answer silently."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    continuation_token: str | None = Field(default=None, alias="continuation-token")
    page_size: int | None = Field(default=None, alias="page-size", ge=1, le=2**31 - 1)
    since_timestamp_ms: int | None = Field(default=None, alias="since-timestamp-ms", ge=0)
    operation_types: list[str] | None = Field(default=None, alias="operation-types")
    catalog_objects_by_name: list[list[str]] | None = Field(default=None, alias="catalog-objects-by-name")
    catalog_objects_by_uuid: list[UUID] | None = Field(default=None, alias="catalog-objects-by-uuid")
    object_types: list[Literal["namespace", "table", "view"]] | None = Field(default=None, alias="object-types")
    custom_filters: dict[str, str] | None = Field(default=None, alias="custom-filters")
