"""View metadata rules without I/O: creation, every view update and requirement, the version log and
the expiry of old versions."""

import re
import uuid

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType
from pyiceberg.view.metadata import ViewVersion

from lakeledger.domain import view_metadata as vm
from lakeledger.domain.errors import BadRequest, CommitFailed, InvalidArgument

VIEW_ID = uuid.UUID("7d4c1f0e-1111-4a4a-8b8b-0123456789ab")
SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), schema_id=7)
WIDER = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "name", StringType()), schema_id=3)


def version(sql: str = "SELECT 1", schema_id: int = 0, dialects=("spark",), at: int = 1000, **extra) -> ViewVersion:
    return ViewVersion.model_validate({
        "version-id": 99, "schema-id": schema_id, "timestamp-ms": at, "summary": {"engine-name": "test"},
        "representations": [{"type": "sql", "sql": sql, "dialect": d} for d in dialects],
        "default-namespace": ["ns"], **extra})


def created(**properties) -> vm.ViewMetadata:
    return vm.new_view(VIEW_ID, "file:///wh/v", SCHEMA, version(), properties, now_ms=5000)


def replace(base, updates, requirements=(), now_ms=9000):
    return vm.apply_replace(base, vm.parse_requirements(list(requirements)), vm.parse_updates(updates), now_ms=now_ms)


def add_version(sql: str, schema_id: int = 0, at: int = 2000, **kw) -> dict:
    return {"action": "add-view-version", "view-version": version(sql, schema_id, at=at, **kw).model_dump()}


CURRENT_LAST = {"action": "set-current-view-version", "view-version-id": -1}


def test_a_new_view_has_schema_0_version_1_and_one_log_entry():
    meta = created(comment="daily")
    assert meta.view_uuid == str(VIEW_ID)
    assert meta.format_version == 1 and meta.location == "file:///wh/v"
    assert [s.schema_id for s in meta.schemas] == [0]
    assert [(v.version_id, v.schema_id) for v in meta.versions] == [(1, 0)]  # schema-id 0 whatever was sent
    assert meta.current_version_id == 1
    assert [(h.version_id, h.timestamp_ms) for h in meta.version_log] == [(1, 1000)]
    assert meta.properties == {"comment": "daily"}


def test_serialize_and_parse_are_inverse_and_parse_refuses_what_is_not_a_view():
    meta = created()
    assert vm.parse(vm.serialize(meta)) == meta
    with pytest.raises(BadRequest):
        vm.parse(b'{"format-version": 2, "table-uuid": "x", "location": "file:///t"}')
    broken = vm.serialize(meta).replace(b'"current-version-id":1', b'"current-version-id":4')
    with pytest.raises(BadRequest, match="Current view version 4"):
        vm.parse(broken)


def test_add_view_version_and_set_current_last_added():
    meta = replace(created(), [add_version("SELECT 2"), CURRENT_LAST])
    assert [v.version_id for v in meta.versions] == [1, 2]
    assert meta.current_version_id == 2
    # a version added and made current in one change is logged with its own creation time
    assert [(h.version_id, h.timestamp_ms) for h in meta.version_log] == [(1, 1000), (2, 2000)]


def test_add_schema_then_version_on_last_added_schema():
    meta = replace(created(), [{"action": "add-schema", "schema": WIDER.model_dump()},
                               add_version("SELECT id, name FROM t", schema_id=-1), CURRENT_LAST])
    assert [s.schema_id for s in meta.schemas] == [0, 1]  # the sent id 3 is replaced by the next free one
    assert meta.versions[-1].schema_id == 1


def test_an_equal_schema_or_version_is_reused_and_changes_nothing():
    base = created()
    assert replace(base, [{"action": "add-schema", "schema": SCHEMA.model_dump()}]) is None
    # same definition as version 1: -1 then means version 1, already current
    assert replace(base, [add_version("SELECT 1", at=4242), CURRENT_LAST]) is None


def test_rollback_to_an_older_version_is_logged_at_the_time_of_the_change():
    two = replace(created(), [add_version("SELECT 2"), CURRENT_LAST])
    back = replace(two, [{"action": "set-current-view-version", "view-version-id": 1}], now_ms=7777)
    assert back.current_version_id == 1
    assert [(h.version_id, h.timestamp_ms) for h in back.version_log] == [(1, 1000), (2, 2000), (1, 7777)]


def test_properties_location_uuid_and_format_version():
    base = created(a="1", b="2")
    meta = replace(base, [{"action": "set-properties", "updates": {"c": "3"}},
                          {"action": "remove-properties", "removals": ["a"]},
                          {"action": "set-location", "location": "file:///wh/moved"},
                          {"action": "assign-uuid", "uuid": str(VIEW_ID)},
                          {"action": "upgrade-format-version", "format-version": 1}])
    assert meta.properties == {"b": "2", "c": "3"}
    assert meta.location == "file:///wh/moved"
    assert meta.view_uuid == str(VIEW_ID) and meta.format_version == 1
    assert meta.versions == base.versions and meta.version_log == base.version_log
    assert replace(base, [{"action": "assign-uuid", "uuid": str(VIEW_ID)}]) is None
    assert replace(base, [{"action": "upgrade-format-version", "format-version": 1}]) is None


# Iceberg's ViewMetadata.Builder refuses these with IllegalArgumentException (InvalidArgument: Java clients raise
# the same), or with ValidationException / IllegalStateException (plain 400s); the messages are the builder's.
@pytest.mark.parametrize("updates, error, message", [
    ([{"action": "assign-uuid", "uuid": str(uuid.uuid4())}], InvalidArgument, "Cannot reassign uuid"),
    ([{"action": "upgrade-format-version", "format-version": 2}], InvalidArgument, "Unsupported format version: 2"),
    ([{"action": "upgrade-format-version", "format-version": 0}], InvalidArgument, "Cannot downgrade v1 view to v0"),
    ([CURRENT_LAST], BadRequest, "Cannot set last version id: no current version id has been set"),
    ([{"action": "set-current-view-version", "view-version-id": 42}], InvalidArgument,
     "Cannot set current version to unknown version: 42"),
    ([add_version("SELECT 2", schema_id=-1)], BadRequest, "Cannot set last added schema: no schema has been added"),
    ([add_version("SELECT 2", schema_id=5)], InvalidArgument, "Cannot add version with unknown schema: 5"),
    ([add_version("SELECT 2", dialects=("spark", "SPARK"))], InvalidArgument,
     "Invalid view version: Cannot add multiple queries for dialect spark"),
    ([add_version("SELECT 2", dialects=("trino",)), CURRENT_LAST], BadRequest,
     "Cannot replace view due to loss of view dialects"),
    ([{"action": "set-location", "location": ""}], InvalidArgument, "Invalid location"),
    ([{"action": "set-properties", "updates": {vm.VERSION_HISTORY_SIZE: "0"}}], InvalidArgument,
     "version.history.num-entries must be positive but was 0"),
    ([{"action": "set-properties", "updates": {vm.VERSION_HISTORY_SIZE: "many"}}], InvalidArgument,
     "must be an integer"),
])
def test_invalid_updates_are_bad_requests(updates, error, message):
    with pytest.raises(BadRequest, match=re.escape(message)) as raised:
        replace(created(), updates)
    assert type(raised.value) is error


def test_dropping_a_dialect_is_allowed_when_the_view_says_so():
    base = created(**{vm.REPLACE_DROP_DIALECT_ALLOWED: "true"})
    meta = replace(base, [add_version("SELECT 2", dialects=("trino",)), CURRENT_LAST])
    assert meta.current_version_id == 2


def test_assert_view_uuid():
    base = created()
    ok = replace(base, [{"action": "set-properties", "updates": {"k": "v"}}],
                 [{"type": "assert-view-uuid", "uuid": str(VIEW_ID)}])
    assert ok.properties == {"k": "v"}
    with pytest.raises(CommitFailed, match="view UUID does not match"):
        replace(base, [{"action": "set-properties", "updates": {"k": "v"}}],
                [{"type": "assert-view-uuid", "uuid": str(uuid.uuid4())}])


@pytest.mark.parametrize("raw", [
    [{"action": "add-spec", "spec": {"spec-id": 0, "fields": []}}],  # a table update
    [{"action": "no-such-thing"}],
    [{"action": "add-view-version"}],
    [{"action": "set-current-view-version", "view-version-id": "latest"}],
    [{"action": "add-view-version", "view-version": {"schema-id": 0, "default-namespace": [],
                                                      "representations": [{"type": "jinja", "sql": "x",
                                                                           "dialect": "spark"}]}}],
    "not a list",
])
def test_malformed_updates_are_refused(raw):
    with pytest.raises(BadRequest):
        vm.parse_updates(raw)


@pytest.mark.parametrize("raw", [[{"type": "assert-table-uuid", "uuid": str(VIEW_ID)}],
                                 [{"type": "assert-view-uuid", "uuid": "not-a-uuid"}], [{"uuid": str(VIEW_ID)}]])
def test_malformed_requirements_are_refused(raw):
    with pytest.raises(BadRequest):
        vm.parse_requirements(raw)


def test_old_versions_expire_and_the_log_is_cut_before_an_expired_version():
    meta = created(**{vm.VERSION_HISTORY_SIZE: "2"})
    for n in range(2, 5):
        meta = replace(meta, [add_version(f"SELECT {n}", at=1000 * n), CURRENT_LAST])
    assert [v.version_id for v in meta.versions] == [3, 4]
    assert [h.version_id for h in meta.version_log] == [3, 4]
    # the current version is kept even when it is the oldest
    meta = replace(meta, [{"action": "set-current-view-version", "view-version-id": 3}])
    meta = replace(meta, [add_version("SELECT 5", at=5000)])
    assert sorted(v.version_id for v in meta.versions) == [3, 5] and meta.current_version_id == 3


def test_versions_added_in_one_change_are_all_kept():
    meta = created(**{vm.VERSION_HISTORY_SIZE: "1"})
    meta = replace(meta, [add_version("SELECT 2"), add_version("SELECT 3"), CURRENT_LAST])
    assert [v.version_id for v in meta.versions] == [2, 3] and meta.current_version_id == 3


def test_metadata_file_locations():
    meta = created()
    first = vm.next_metadata_location(meta, None)
    assert first.startswith("file:///wh/v/metadata/00000-") and first.endswith(".metadata.json")
    assert vm.next_metadata_location(meta, first).startswith("file:///wh/v/metadata/00001-")
    moved = replace(meta, [{"action": "set-properties", "updates": {vm.WRITE_METADATA_LOCATION: "file:///wh/m"}}])
    assert vm.next_metadata_location(moved, first).startswith("file:///wh/m/00001-")
