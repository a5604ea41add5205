"""Iceberg view metadata decisions: building a new view, checking a replace's requirements and
applying its updates, as the view spec and the reference catalogs have them. pyiceberg 0.12 models
view metadata but has no update logic for it, so that logic lives here. Pure functions; nothing
here touches storage.

What the rules are, in short:
* a schema equal to a known one (ids aside) is reused, otherwise it gets the next free id;
* a view version equal to a known one (id and timestamp aside) is reused, otherwise it gets the
  next free id; ``-1`` means "the last added" for a version's schema-id and for the new current
  version id;
* every change of the current version is logged in ``version-log``; ``versions`` keeps at most
  ``version.history.num-entries`` versions (never dropping the current one or those just added),
  and log entries older than an expired version are cut off;
* a replace may not lose a SQL dialect unless ``replace.drop-dialect.allowed`` is true.

Refusals carry the messages of Iceberg's ``ViewMetadata.Builder``; those it raises as IllegalArgumentException
are ``InvalidArgument`` here, so a Java client raises the exception it raises against Iceberg's own server.
Those it raises as ValidationException stay plain bad requests (the Java client makes both of that type and
plain 400s a BadRequestException)."""

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.schema import Schema
from pyiceberg.table.update import (
    AddSchemaUpdate,
    AssignUUIDUpdate,
    RemovePropertiesUpdate,
    SetLocationUpdate,
    SetPropertiesUpdate,
    UpgradeFormatVersionUpdate,
)
from pyiceberg.typedef import IcebergBaseModel
from pyiceberg.view.metadata import ViewHistoryEntry, ViewMetadata, ViewVersion

from lakeledger.domain import metadata_v3, v3_types
from lakeledger.domain.errors import BadRequest, CommitFailed, InvalidArgument
from lakeledger.domain.pyiceberg_compat import metadata_file_version
from lakeledger.domain.schemas import check_schema

LAST_ADDED = -1
INITIAL_SCHEMA_ID = 0
INITIAL_VERSION_ID = 1
SUPPORTED_FORMAT_VERSION = 1

VERSION_HISTORY_SIZE = "version.history.num-entries"
VERSION_HISTORY_SIZE_DEFAULT = 10
REPLACE_DROP_DIALECT_ALLOWED = "replace.drop-dialect.allowed"
WRITE_METADATA_LOCATION = "write.metadata.path"


class AddViewVersionUpdate(IcebergBaseModel):
    action: Literal["add-view-version"] = Field(default="add-view-version")
    view_version: ViewVersion = Field(alias="view-version")


class SetCurrentViewVersionUpdate(IcebergBaseModel):
    action: Literal["set-current-view-version"] = Field(default="set-current-view-version")
    view_version_id: int = Field(alias="view-version-id")


class AssertViewUUID(IcebergBaseModel):
    type: Literal["assert-view-uuid"]  # required on the wire: a requirement names what it asserts
    uuid: uuid.UUID

    def validate_against(self, base: ViewMetadata) -> None:
        if _uuid_of(base) != self.uuid:
            raise CommitFailed(f"Requirement failed: view UUID does not match: expected {base.view_uuid} "
                               f"!= {self.uuid}")


ViewUpdate = Annotated[
    AssignUUIDUpdate
    | UpgradeFormatVersionUpdate
    | AddSchemaUpdate
    | SetLocationUpdate
    | SetPropertiesUpdate
    | RemovePropertiesUpdate
    | AddViewVersionUpdate
    | SetCurrentViewVersionUpdate,
    Field(discriminator="action"),
]

ViewRequirement = AssertViewUUID  # the spec's only view requirement; a union once there are more

_updates = TypeAdapter(list[ViewUpdate])
_requirements = TypeAdapter(list[ViewRequirement])


def parse_updates(raw: Any) -> list[ViewUpdate]:
    try:
        return _updates.validate_python(v3_types.in_updates(raw) if raw is not None else [])
    except ValidationError as e:
        raise BadRequest(f"Invalid view updates: {_describe(e)}") from None
    # pyiceberg's own validators fail with plain errors on some shapes (a geometry's default, an unknown algorithm)
    except (TypeError, ValueError, KeyError, NotImplementedError, IcebergValidationError) as e:
        raise BadRequest(f"Invalid view updates: {e}") from None


def parse_requirements(raw: Any) -> list[AssertViewUUID]:
    try:
        return _requirements.validate_python(raw if raw is not None else [])
    except ValidationError as e:
        raise BadRequest(f"Invalid view requirements: {_describe(e)}") from None
    except (TypeError, ValueError, KeyError) as e:  # pyiceberg's own validators fail with plain errors on some shapes
        raise BadRequest(f"Invalid view requirements: {e}") from None


def _describe(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg')}"


def serialize(metadata: ViewMetadata) -> bytes:
    return metadata.model_dump_json().encode()


def parse(data: bytes) -> ViewMetadata:
    """View metadata as stored in a metadata file; the inverse of ``serialize``. Anything that is not
    valid view metadata (a table's metadata file, say) is a bad request."""
    try:
        if v3_types.may_hold(data):
            metadata = ViewMetadata.model_validate(v3_types.in_metadata(json.loads(data)))
        else:
            metadata = ViewMetadata.model_validate_json(data)
    except (ValidationError, ValueError) as e:  # a JSONDecodeError is a ValueError
        raise BadRequest(f"Not valid view metadata: {e}") from None
    _uuid_of(metadata)
    _check_consistent(metadata)
    return metadata


def _uuid_of(metadata: ViewMetadata) -> uuid.UUID:
    try:
        return uuid.UUID(metadata.view_uuid)
    except ValueError:
        raise BadRequest(f"Invalid view-uuid: {metadata.view_uuid!r}") from None


def view_id(metadata: ViewMetadata) -> uuid.UUID:
    return _uuid_of(metadata)


def _check_consistent(metadata: ViewMetadata) -> None:
    versions = {v.version_id: v for v in metadata.versions}
    if metadata.current_version_id not in versions:
        raise BadRequest(f"Current view version {metadata.current_version_id} is not among the versions")
    schema_ids = {s.schema_id for s in metadata.schemas}
    current = versions[metadata.current_version_id]
    if current.schema_id not in schema_ids:
        raise BadRequest(f"Schema {current.schema_id} of the current view version is not among the schemas")


def next_metadata_location(metadata: ViewMetadata, previous_location: str | None) -> str:
    """``<location>/metadata/<n>-<uuid>.metadata.json``, n one more than the previous file's, as for
    tables; ``write.metadata.path`` moves the directory, as in the Java implementation."""
    version = metadata_file_version(previous_location) + 1 if previous_location else 0
    directory = metadata.properties.get(WRITE_METADATA_LOCATION) or f"{metadata.location.rstrip('/')}/metadata"
    return f"{directory.rstrip('/')}/{version:05d}-{uuid.uuid4()}.metadata.json"


def _now_ms() -> int:
    return int(time.time() * 1000)


# -- building ---------------------------------------------------------------------------------


def _dialects(version: ViewVersion) -> set[str]:
    return {r.root.dialect.lower() for r in version.representations}


def _same_version(one: ViewVersion, two: ViewVersion) -> bool:
    """Versions that would behave the same, ignoring id and creation time."""
    return (one.summary == two.summary and one.representations == two.representations
            and one.default_catalog == two.default_catalog
            and tuple(one.default_namespace) == tuple(two.default_namespace) and one.schema_id == two.schema_id)


@dataclass
class _Builder:
    """The metadata being built, and what this one request changed (the ``-1`` references, the
    versions it added, the log entry its current-version change makes)."""

    view_uuid: str | None
    format_version: int
    location: str | None
    schemas: list[Schema]
    current_version_id: int | None
    versions: list[ViewVersion]
    history: list[ViewHistoryEntry]
    properties: dict[str, str]
    now_ms: int
    previous: ViewVersion | None = None
    changed: bool = False
    added_versions: set[int] = field(default_factory=set)
    last_added_schema_id: int | None = None
    last_added_version_id: int | None = None
    history_entry: ViewHistoryEntry | None = None

    @classmethod
    def empty(cls, now_ms: int) -> "_Builder":
        return cls(None, SUPPORTED_FORMAT_VERSION, None, [], None, [], [], {}, now_ms)

    @classmethod
    def of(cls, base: ViewMetadata, now_ms: int) -> "_Builder":
        previous = next(v for v in base.versions if v.version_id == base.current_version_id)
        return cls(base.view_uuid, base.format_version, base.location, list(base.schemas), base.current_version_id,
                   list(base.versions), list(base.version_log), dict(base.properties), now_ms, previous)

    # each update ---------------------------------------------------------------------------

    def apply(self, update: Any) -> None:
        if isinstance(update, AssignUUIDUpdate):
            self.assign_uuid(str(update.uuid))
        elif isinstance(update, UpgradeFormatVersionUpdate):
            self.upgrade_format_version(update.format_version)
        elif isinstance(update, AddSchemaUpdate):
            self.add_schema(update.schema_)
        elif isinstance(update, SetLocationUpdate):
            self.set_location(update.location)
        elif isinstance(update, SetPropertiesUpdate):
            self.set_properties(update.updates)
        elif isinstance(update, RemovePropertiesUpdate):
            self.remove_properties(update.removals)
        elif isinstance(update, AddViewVersionUpdate):
            self.add_version(update.view_version)
        elif isinstance(update, SetCurrentViewVersionUpdate):
            self.set_current_version(update.view_version_id)
        else:  # the parser admits only the types above
            raise BadRequest(f"Unsupported view update: {type(update).__name__}")

    def assign_uuid(self, new_uuid: str) -> None:
        if self.view_uuid is not None and uuid.UUID(self.view_uuid) != uuid.UUID(new_uuid):
            raise InvalidArgument("Cannot reassign uuid")
        if self.view_uuid is None:
            self.view_uuid = new_uuid
            self.changed = True

    def upgrade_format_version(self, version: int) -> None:
        if version < self.format_version:
            raise InvalidArgument(f"Cannot downgrade v{self.format_version} view to v{version}")
        if version > SUPPORTED_FORMAT_VERSION:
            raise InvalidArgument(f"Unsupported format version: {version}")
        if version != self.format_version:
            self.format_version = version
            self.changed = True

    def set_location(self, location: str) -> None:
        if not location:
            raise InvalidArgument("Invalid location: (empty string)")
        if location != self.location:
            self.location = location
            self.changed = True

    def set_properties(self, updates: dict[str, str]) -> None:
        if updates:
            self.properties.update(updates)
            self.changed = True

    def remove_properties(self, removals: list[str]) -> None:
        if removals:
            for key in removals:
                self.properties.pop(key, None)
            self.changed = True

    def add_schema(self, schema: Schema) -> int:
        # a view's schema has no table format version to fit; every type and default is allowed
        check_schema(schema, format_version=metadata_v3.FORMAT_VERSION)
        for known in self.schemas:
            if known == schema:  # pyiceberg's equality ignores the schema id
                return known.schema_id
        new_id = max((s.schema_id for s in self.schemas), default=INITIAL_SCHEMA_ID - 1) + 1
        if schema.schema_id != new_id:
            schema = Schema(*schema.fields, schema_id=new_id, identifier_field_ids=schema.identifier_field_ids)
        self.schemas.append(schema)
        self.last_added_schema_id = new_id
        self.changed = True
        return new_id

    def add_version(self, version: ViewVersion) -> int:
        if version.schema_id == LAST_ADDED:
            if self.last_added_schema_id is None:
                raise BadRequest("Cannot set last added schema: no schema has been added")
            version = version.model_copy(update={"schema_id": self.last_added_schema_id})
        if all(s.schema_id != version.schema_id for s in self.schemas):
            raise InvalidArgument(f"Cannot add version with unknown schema: {version.schema_id}")
        dialects: set[str] = set()
        for representation in version.representations:
            dialect = representation.root.dialect.lower()
            if dialect in dialects:
                raise InvalidArgument(f"Invalid view version: Cannot add multiple queries for dialect {dialect}")
            dialects.add(dialect)
        for known in self.versions:
            if _same_version(known, version):
                # Re-adding a known version makes it the "last added" one, so that a request adding a
                # definition that a concurrent writer added first still means that definition by -1.
                self.last_added_version_id = known.version_id
                return known.version_id
        new_id = max((v.version_id for v in self.versions), default=INITIAL_VERSION_ID - 1) + 1
        version = version.model_copy(update={"version_id": new_id})
        self.versions.append(version)
        self.added_versions.add(new_id)
        self.last_added_version_id = new_id
        self.changed = True
        return new_id

    def set_current_version(self, version_id: int) -> None:
        if version_id == LAST_ADDED:
            if self.last_added_version_id is None:
                raise BadRequest("Cannot set last version id: no current version id has been set")
            version_id = self.last_added_version_id
        if version_id == self.current_version_id:
            return
        version = next((v for v in self.versions if v.version_id == version_id), None)
        if version is None:
            raise InvalidArgument(f"Cannot set current version to unknown version: {version_id}")
        self.current_version_id = version_id
        # A version added by this request became current when it was created; one set current again
        # (a rollback) became current now.
        at = version.timestamp_ms if version_id in self.added_versions else self.now_ms
        self.history_entry = ViewHistoryEntry(timestamp_ms=at, version_id=version_id)
        self.changed = True

    # the result ------------------------------------------------------------------------------

    def build(self) -> ViewMetadata:
        if not self.location:
            raise InvalidArgument("Invalid location: null")
        if not self.versions or self.current_version_id is None:
            raise InvalidArgument("Invalid view: no versions were added")
        current = next(v for v in self.versions if v.version_id == self.current_version_id)
        history = list(self.history)
        if self.history_entry is not None:
            history.append(self.history_entry)
        if self.previous is not None and not _is_true(self.properties.get(REPLACE_DROP_DIALECT_ALLOWED)):
            before, after = _dialects(self.previous), _dialects(current)
            if not before <= after:
                # Iceberg raises IllegalStateException here (a 500 from its reference server); a 400 names the cause
                raise BadRequest(f"Cannot replace view due to loss of view dialects ({REPLACE_DROP_DIALECT_ALLOWED}"
                                 f"=false):\nPrevious dialects: {_listed(before)}\nNew dialects: {_listed(after)}")
        keep = max(len(self.added_versions | {self.current_version_id}), self._history_size())
        versions = self.versions
        if len(versions) > keep:
            versions = _retained_versions(versions, keep, current)
            history = _retained_history(history, {v.version_id for v in versions})
        try:
            return ViewMetadata(view_uuid=self.view_uuid or str(uuid.uuid4()), format_version=self.format_version,
                                location=self.location, schemas=self.schemas,
                                current_version_id=self.current_version_id, versions=versions,
                                version_log=history, properties=self.properties)
        except (ValidationError, ValueError) as e:
            raise InvalidArgument(f"Invalid view metadata: {e}") from None

    def _history_size(self) -> int:
        raw = self.properties.get(VERSION_HISTORY_SIZE)
        if raw is None:
            return VERSION_HISTORY_SIZE_DEFAULT
        try:
            size = int(raw)
        except ValueError:
            raise InvalidArgument(f"{VERSION_HISTORY_SIZE} must be an integer, not {raw!r}") from None
        if size < 1:
            raise InvalidArgument(f"{VERSION_HISTORY_SIZE} must be positive but was {size}")
        return size


def _listed(dialects: set[str]) -> str:
    return "[" + ", ".join(sorted(dialects)) + "]"


def _is_true(value: str | None) -> bool:
    return value is not None and value.strip().lower() == "true"


def _retained_versions(versions: list[ViewVersion], keep: int, current: ViewVersion) -> list[ViewVersion]:
    """The current version and the newest others (ids grow with time), ``keep`` in all, in the
    order they were listed."""
    newest = sorted((v.version_id for v in versions if v.version_id != current.version_id), reverse=True)
    kept = {current.version_id, *newest[:keep - 1]}
    return [v for v in versions if v.version_id in kept]


def _retained_history(history: list[ViewHistoryEntry], known: set[int]) -> list[ViewHistoryEntry]:
    """The log after its last entry for an expired version: a log with a gap could not tell which
    definition was in use then."""
    retained: list[ViewHistoryEntry] = []
    for entry in history:
        if entry.version_id in known:
            retained.append(entry)
        else:
            retained.clear()
    return retained


# -- the two entry points ---------------------------------------------------------------------


# pyiceberg's models signal malformed input with these; they become 400s, never 500s.
_INVALID = (ValueError, TypeError, KeyError, IndexError, AttributeError, ValidationError, IcebergValidationError)


def new_view(view_uuid: uuid.UUID, location: str, schema: Schema, version: ViewVersion, properties: dict[str, str],
             now_ms: int | None = None) -> ViewMetadata:
    """The metadata of a newly created view: the given schema (id 0) and version (id 1, using that
    schema whatever schema-id it named) as the current one, logged."""
    builder = _Builder.empty(now_ms if now_ms is not None else _now_ms())
    try:
        builder.assign_uuid(str(view_uuid))
        builder.set_properties(dict(properties))
        builder.set_location(location)
        schema_id = builder.add_schema(schema)
        builder.set_current_version(builder.add_version(version.model_copy(update={"schema_id": schema_id})))
        return builder.build()
    except _INVALID as e:
        raise BadRequest(f"Invalid view definition: {e}") from None


def apply_replace(base: ViewMetadata, requirements: list[AssertViewUUID], updates: list[ViewUpdate],
                  now_ms: int | None = None) -> ViewMetadata | None:
    """The metadata after a replace; None when the updates change nothing (nothing to write).
    CommitFailed when a requirement does not hold, BadRequest when an update is invalid."""
    for requirement in requirements:
        requirement.validate_against(base)
    builder = _Builder.of(base, now_ms if now_ms is not None else _now_ms())
    try:
        for update in updates:
            builder.apply(update)
        if not builder.changed:
            return None
        return builder.build()
    except _INVALID as e:
        raise BadRequest(f"Invalid view update: {e}") from None
