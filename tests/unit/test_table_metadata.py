from uuid import uuid4

import pytest
from lakeledger.domain import table_metadata as tm
from lakeledger.domain.errors import BadRequest, CommitFailed
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "data", StringType()))


def _new():
    return tm.new_metadata(SCHEMA, None, None, "file:///w/t", {}, uuid4())


def test_commit_applies_pyicebergs_updates():
    base = _new()
    updates = tm.parse_updates([{"action": "set-properties", "updates": {"owner": "ops"}}])
    new = tm.apply_commit(base, "file:///w/t/metadata/00000-a.metadata.json",
                          tm.parse_requirements([{"type": "assert-table-uuid", "uuid": str(base.table_uuid)}]),
                          updates)
    assert new.properties["owner"] == "ops"
    assert new.metadata_log[-1].metadata_file == "file:///w/t/metadata/00000-a.metadata.json"


def test_failed_requirement_is_a_commit_failure():
    base = _new()
    with pytest.raises(CommitFailed):
        tm.apply_commit(base, None, tm.parse_requirements([{"type": "assert-table-uuid", "uuid": str(uuid4())}]), [])
    with pytest.raises(CommitFailed):
        tm.apply_commit(base, None, tm.parse_requirements([{"type": "assert-create"}]), [])


def test_unknown_update_actions_and_requirement_types_are_bad_requests():
    with pytest.raises(BadRequest):
        tm.parse_updates([{"action": "explode-table"}])
    with pytest.raises(BadRequest):
        tm.parse_requirements([{"type": "assert-the-moon"}])
    with pytest.raises(BadRequest):
        tm.parse_updates([{"action": "set-current-schema", "schema-id": "zero"}])


def test_invalid_update_is_a_bad_request_not_a_crash():
    base = _new()
    with pytest.raises(BadRequest):
        tm.apply_commit(base, None, [], tm.parse_updates([{"action": "set-current-schema", "schema-id": 99}]))


def test_metadata_locations_count_up():
    base = _new()
    first = tm.next_metadata_location(base, None)
    assert first.startswith("file:///w/t/metadata/00000-") and first.endswith(".metadata.json")
    assert "/00001-" in tm.next_metadata_location(base, first)


def test_staged_create_is_built_from_updates_alone():
    table_uuid = uuid4()
    updates = tm.parse_updates([
        {"action": "assign-uuid", "uuid": str(table_uuid)},
        {"action": "upgrade-format-version", "format-version": 2},
        {"action": "add-schema", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True}]}},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": "file:///w/new"},
    ])
    metadata = tm.apply_commit(None, None, tm.parse_requirements([{"type": "assert-create"}]), updates)
    assert tm.is_create(tm.parse_requirements([{"type": "assert-create"}]))
    assert tm.assigned_uuid(updates) == table_uuid == metadata.table_uuid
    assert metadata.location == "file:///w/new" and metadata.format_version == 2
