from uuid import uuid4

import pytest
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from lakeledger.domain import table_metadata as tm
from lakeledger.domain.errors import BadRequest, CommitFailed

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
    for crashes_pyicebergs_validators in ({"action": "set-statistics"}, {"action": "set-properties", "updates": None}):
        with pytest.raises(BadRequest):
            tm.parse_updates([crashes_pyicebergs_validators])


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


# -- every update action, format v3 and encryption keys -------------------------------------------

LOCATION = "file:///w/t/metadata/00000-a.metadata.json"
KEY = {"key-id": "k1", "encrypted-key-metadata": "a2V5LW9uZQ==", "encrypted-by-id": "kms-1",
       "properties": {"scheme": "test"}}


def _commit(base, *updates, requirements=()):
    return tm.apply_commit(base, LOCATION, tm.parse_requirements(list(requirements)), tm.parse_updates(list(updates)))


def _new_v(version: int):
    return tm.new_metadata(SCHEMA, None, None, "file:///w/t", {"format-version": str(version)}, uuid4())


def _snapshot(snapshot_id: int, sequence_number: int, parent: int | None = None, **extra):
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": sequence_number, "timestamp-ms": 1700000000000,
                "manifest-list": f"file:///w/t/metadata/snap-{snapshot_id}.avro", "summary": {"operation": "append"},
                "schema-id": 0, **extra}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    return {"action": "add-snapshot", "snapshot": snapshot}


def _main(snapshot_id: int):
    return {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}


def _round_trip(metadata):
    """The metadata as read back from its file, which must write the very same bytes again."""
    data = tm.serialize(metadata)
    again = tm.parse(data)
    assert tm.serialize(again) == data
    return again


def test_format_version_property_picks_the_format_and_is_not_stored():
    for version in (1, 2, 3):
        metadata = _new_v(version)
        assert metadata.format_version == version and "format-version" not in metadata.properties
        assert _round_trip(metadata).format_version == version
    v3 = _new_v(3)
    assert v3.next_row_id == 0
    assert b'"next-row-id":0' in tm.serialize(v3)
    for bad in ("4", "0", "three"):
        with pytest.raises(BadRequest):
            tm.new_metadata(SCHEMA, None, None, "file:///w/t", {"format-version": bad}, uuid4())


def test_upgrades_keep_the_table_and_start_row_ids_at_zero():
    v1 = _commit(_new_v(1), _snapshot(10, 0), _main(10))
    v2 = _commit(v1, {"action": "upgrade-format-version", "format-version": 2})
    assert v2.format_version == 2 and v2.snapshots == v1.snapshots and v2.current_snapshot_id == 10
    v3 = _round_trip(_commit(v2, {"action": "upgrade-format-version", "format-version": 3}))
    assert v3.format_version == 3 and v3.next_row_id == 0
    assert [s.snapshot_id for s in v3.snapshots] == [10] and v3.snapshots[0].first_row_id is None
    direct = _round_trip(_commit(v1, {"action": "upgrade-format-version", "format-version": 3}))
    assert direct.format_version == 3 and direct.next_row_id == 0 and direct.current_snapshot_id == 10
    assert direct.last_sequence_number == 0 and direct.metadata_log[-1].metadata_file == LOCATION
    same = _commit(v3, {"action": "upgrade-format-version", "format-version": 3})
    assert same.format_version == 3 and same.metadata_log == v3.metadata_log  # no change, no new log entry


def test_downgrades_and_unknown_versions_are_bad_requests():
    for base, target in ((_new_v(3), 2), (_new_v(2), 1), (_new_v(3), 1), (_new_v(2), 4), (_new_v(1), 0)):
        with pytest.raises(BadRequest):
            _commit(base, {"action": "upgrade-format-version", "format-version": target})


def test_encryption_keys_are_added_kept_and_removed():
    base = _new_v(3)
    added = _round_trip(_commit(base, {"action": "add-encryption-key", "encryption-key": KEY}))
    (key,) = added.encryption_keys
    assert (key.key_id, key.encrypted_key_metadata, key.encrypted_by_id, key.properties) == (
        "k1", "a2V5LW9uZQ==", "kms-1", {"scheme": "test"})
    assert b'"encryption-keys":[{"key-id":"k1","encrypted-key-metadata":"a2V5LW9uZQ=="' in tm.serialize(added)
    again = _commit(added, {"action": "add-encryption-key", "encryption-key": KEY})
    assert again.encryption_keys == added.encryption_keys  # the same key twice is one key
    bare = {"key-id": "k0", "encrypted-key-metadata": "a2V5LXplcm8="}
    empty_properties = _commit(added, {"action": "add-encryption-key", "encryption-key": {**bare, "properties": {}}})
    assert _commit(empty_properties, {"action": "add-encryption-key", "encryption-key": bare}) == empty_properties
    assert b'{"key-id":"k0","encrypted-key-metadata":"a2V5LXplcm8="}' in tm.serialize(empty_properties)
    second = _commit(added, {"action": "add-encryption-key",
                             "encryption-key": {"key-id": "k2", "encrypted-key-metadata": "a2V5LXR3bw=="}})
    assert [k.key_id for k in second.encryption_keys] == ["k1", "k2"]
    removed = _round_trip(_commit(second, {"action": "remove-encryption-key", "key-id": "k1"}))
    assert [k.key_id for k in removed.encryption_keys] == ["k2"]
    none_left = _round_trip(_commit(removed, {"action": "remove-encryption-key", "key-id": "k2"}))
    assert not none_left.encryption_keys and b"encryption-keys" not in tm.serialize(none_left)
    unknown = _commit(none_left, {"action": "remove-encryption-key", "key-id": "never-there"})
    assert not unknown.encryption_keys


def test_encryption_keys_refused_when_invalid_or_below_v3():
    with pytest.raises(BadRequest):  # the spec keeps keys in v3 metadata only
        _commit(_new_v(2), {"action": "add-encryption-key", "encryption-key": KEY})
    base = _commit(_new_v(3), {"action": "add-encryption-key", "encryption-key": KEY})
    with pytest.raises(BadRequest):  # one id, two different keys
        _commit(base, {"action": "add-encryption-key", "encryption-key": {**KEY, "encrypted-key-metadata": "b3RoZXI="}})
    not_base64 = {**KEY, "encrypted-key-metadata": "not base64!"}
    for malformed in ({"action": "add-encryption-key"},
                      {"action": "add-encryption-key", "encryption-key": {"key-id": "k"}},
                      {"action": "add-encryption-key", "encryption-key": not_base64},
                      {"action": "remove-encryption-key"},
                      {"action": "remove-encryption-key", "key-id": 7}):
        with pytest.raises(BadRequest):
            tm.parse_updates([malformed])


def test_v3_snapshots_carry_row_lineage_and_key_id():
    base = _commit(_new_v(3), {"action": "add-encryption-key", "encryption-key": KEY})
    first = _round_trip(_commit(base, _snapshot(1, 1, **{"first-row-id": 0, "added-rows": 30, "key-id": "k1"}),
                                _main(1)))
    assert first.next_row_id == 30 and first.snapshots[0].key_id == "k1"
    assert b'"key-id":"k1"}' in tm.serialize(first)
    second = _round_trip(_commit(first, _snapshot(2, 2, parent=1, **{"first-row-id": 30, "added-rows": 5}), _main(2)))
    assert second.next_row_id == 35 and second.current_snapshot_id == 2 and second.last_sequence_number == 2
    for refused in (_snapshot(3, 3, parent=2, **{"first-row-id": 34, "added-rows": 1}),  # behind next-row-id
                    _snapshot(3, 3, parent=2, **{"added-rows": 1}),
                    _snapshot(3, 3, parent=2, **{"first-row-id": 35}),
                    _snapshot(3, 2, parent=2, **{"first-row-id": 35, "added-rows": 1}),  # stale sequence number
                    _snapshot(2, 3, parent=2, **{"first-row-id": 35, "added-rows": 1})):  # id taken
        with pytest.raises(BadRequest):
            _commit(second, refused)


def test_a_v3_file_without_next_row_id_is_not_read():
    data = tm.serialize(_new_v(3)).replace(b',"next-row-id":0', b"")
    with pytest.raises(IcebergValidationError, match="next-row-id"):
        tm.parse(data)


def test_every_v2_update_action_applies():
    base = _new_v(2)
    schema1 = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True}, {"id": 2, "name": "data", "type": "string"},
        {"id": 3, "name": "ts", "type": "timestamptz", "required": False}]}
    evolved = _round_trip(_commit(
        base,
        {"action": "add-schema", "schema": schema1}, {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 1, "fields": [
            {"source-id": 3, "field-id": 1000, "name": "ts_day", "transform": "day"}]}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
            {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-properties", "updates": {"a": "1", "b": "2"}},
        {"action": "remove-properties", "removals": ["a", "not-there"]},
        {"action": "set-location", "location": "file:///w/moved"}))
    assert evolved.current_schema_id == 1 and evolved.last_column_id == 3
    assert evolved.default_spec_id == 1 and evolved.last_partition_id == 1000
    assert evolved.default_sort_order_id == 1 and evolved.properties == {"b": "2"}
    assert evolved.location == "file:///w/moved"

    stats = {"snapshot-id": 1, "statistics-path": "file:///w/s1.puffin", "file-size-in-bytes": 10,
             "file-footer-size-in-bytes": 4, "blob-metadata": []}
    pstats = {"snapshot-id": 1, "statistics-path": "file:///w/p1.parquet", "file-size-in-bytes": 20}
    written = _round_trip(_commit(
        evolved, _snapshot(1, 1), _main(1), _snapshot(2, 2, parent=1), _main(2),
        {"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 1, "max-ref-age-ms": 1000},
        {"action": "set-snapshot-ref", "ref-name": "dev", "type": "branch", "snapshot-id": 2},
        {"action": "set-statistics", "statistics": stats},
        {"action": "set-partition-statistics", "partition-statistics": pstats}))
    assert written.current_snapshot_id == 2 and set(written.refs) == {"main", "v1", "dev"}
    assert written.refs["v1"].max_ref_age_ms == 1000
    assert [s.statistics_path for s in written.statistics] == ["file:///w/s1.puffin"]
    assert [s.statistics_path for s in written.partition_statistics] == ["file:///w/p1.parquet"]

    cleaned = _round_trip(_commit(
        written, {"action": "remove-snapshot-ref", "ref-name": "dev"},
        {"action": "remove-statistics", "snapshot-id": 1},
        {"action": "remove-partition-statistics", "snapshot-id": 1},
        {"action": "remove-partition-specs", "spec-ids": [0]},
        {"action": "remove-schemas", "schema-ids": [0]}))
    assert set(cleaned.refs) == {"main", "v1"} and not cleaned.statistics and not cleaned.partition_statistics
    assert [s.spec_id for s in cleaned.partition_specs] == [1] and [s.schema_id for s in cleaned.schemas] == [1]
    expired = _round_trip(_commit(cleaned, {"action": "remove-snapshots", "snapshot-ids": [1]}))
    assert [s.snapshot_id for s in expired.snapshots] == [2] and set(expired.refs) == {"main"}  # the tag went too
    assert expired.snapshots[0].parent_snapshot_id is None


def test_removing_what_is_already_gone_is_no_change_as_in_java():
    stats = {"snapshot-id": 1, "statistics-path": "file:///w/s1.puffin", "file-size-in-bytes": 10,
             "file-footer-size-in-bytes": 4, "blob-metadata": []}
    pstats = {"snapshot-id": 1, "statistics-path": "file:///w/p1.parquet", "file-size-in-bytes": 20}
    base = _commit(_new_v(2), _snapshot(1, 1), _snapshot(2, 2, parent=1), _main(2),
                   {"action": "set-statistics", "statistics": stats},
                   {"action": "set-partition-statistics", "partition-statistics": pstats})
    # Java's expiry sends remove-snapshots, then removals for the statistics that went with the snapshot
    expired = _commit(base, {"action": "remove-snapshots", "snapshot-ids": [1]},
                      {"action": "remove-statistics", "snapshot-id": 1},
                      {"action": "remove-partition-statistics", "snapshot-id": 1})
    assert [s.snapshot_id for s in expired.snapshots] == [2]
    assert not expired.statistics and not expired.partition_statistics
    unchanged = _commit(expired, {"action": "remove-snapshots", "snapshot-ids": [1]},
                        {"action": "remove-schemas", "schema-ids": [42]},
                        {"action": "remove-partition-specs", "spec-ids": [42]},
                        {"action": "remove-properties", "removals": ["never-set"]})
    assert unchanged.snapshots == expired.snapshots and unchanged.schemas == expired.schemas
    assert unchanged.partition_specs == expired.partition_specs
    with pytest.raises(BadRequest):
        _commit(expired, {"action": "remove-schemas", "schema-ids": [0]})  # the current schema stays
    with pytest.raises(BadRequest):
        _commit(expired, {"action": "remove-partition-specs", "spec-ids": [0]})  # the default spec stays


def test_assert_ref_snapshot_id_null_means_the_ref_is_absent():
    empty = _new_v(2)
    absent = [{"type": "assert-ref-snapshot-id", "ref": "feature", "snapshot-id": None}]
    assert _commit(empty, _snapshot(1, 1), requirements=absent).snapshots  # no snapshots yet, and no such ref
    with_main = _commit(empty, _snapshot(1, 1), _main(1))
    _commit(with_main, requirements=[{"type": "assert-ref-snapshot-id", "ref": "feature"}])
    _commit(with_main, requirements=[{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}])
    for failing in ({"ref": "main", "snapshot-id": None}, {"ref": "main", "snapshot-id": 2},
                    {"ref": "feature", "snapshot-id": 1}):
        with pytest.raises(CommitFailed):
            _commit(with_main, requirements=[{"type": "assert-ref-snapshot-id", **failing}])


def test_assign_uuid_creates_but_never_reassigns():
    base = _new_v(2)
    assert _commit(base, {"action": "assign-uuid", "uuid": str(base.table_uuid)}).table_uuid == base.table_uuid
    with pytest.raises(BadRequest):
        _commit(base, {"action": "assign-uuid", "uuid": str(uuid4())})


def test_v3_table_created_by_a_commit():
    table_uuid = uuid4()
    created = tm.apply_commit(None, None, tm.parse_requirements([{"type": "assert-create"}]), tm.parse_updates([
        {"action": "assign-uuid", "uuid": str(table_uuid)},
        {"action": "upgrade-format-version", "format-version": 3},
        {"action": "add-schema", "schema": {"type": "struct", "schema-id": 0, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True}]}},
        {"action": "set-current-schema", "schema-id": -1},
        {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
        {"action": "set-default-spec", "spec-id": -1},
        {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
        {"action": "set-default-sort-order", "sort-order-id": -1},
        {"action": "set-location", "location": "file:///w/v3"},
        {"action": "add-encryption-key", "encryption-key": KEY},
    ]))
    assert created.format_version == 3 and created.next_row_id == 0 and created.table_uuid == table_uuid
    assert [k.key_id for k in _round_trip(created).encryption_keys] == ["k1"]
    with pytest.raises(BadRequest):  # a create that never adds a schema is not a table
        tm.apply_commit(None, None, tm.parse_requirements([{"type": "assert-create"}]), tm.parse_updates([
            {"action": "assign-uuid", "uuid": str(table_uuid)},
            {"action": "upgrade-format-version", "format-version": 3}]))


def test_metadata_json_keeps_each_snapshots_json_and_says_what_pyiceberg_says():
    """Snapshots' JSON is kept per snapshot object (lakeledger/domain/metadata_json.py): the file says what pyiceberg's
    own serialisation says, for every format, and a snapshot of the same id with other contents (an engine's retry) is
    never written with the kept JSON of the first."""
    import orjson

    for version in (1, 2, 3):
        metadata = _new_v(version)
        assert orjson.loads(tm.serialize(metadata)) == orjson.loads(metadata.model_dump_json())
        for n in range(1, 4):
            lineage = {"first-row-id": n - 1, "added-rows": 1} if version == 3 else {}
            metadata = _commit(metadata, _snapshot(n, n, n - 1 if n > 1 else None, **lineage), _main(n))
            tm.serialize(metadata)  # kept from here on
        assert orjson.loads(tm.serialize(metadata)) == orjson.loads(metadata.model_dump_json())
        assert tm.parse(tm.serialize(metadata)) == tm.parse(metadata.model_dump_json().encode())
    base = _commit(_new_v(2), _snapshot(1, 1), _main(1))
    tm.serialize(_commit(base, _snapshot(7, 2, 1), _main(7)))
    retried = _commit(base, _snapshot(7, 2, 1, **{"manifest-list": "file:///w/t/metadata/snap-7-attempt-2.avro"}),
                      _main(7))
    [seven] = [s for s in orjson.loads(tm.serialize(retried))["snapshots"] if s["snapshot-id"] == 7]
    assert seven["manifest-list"] == "file:///w/t/metadata/snap-7-attempt-2.avro"


def test_metadata_json_built_on_its_base_says_what_pyiceberg_says():
    """A commit's file is its base's snapshot log and snapshots as bytes, then the new entries' JSON
    (lakeledger/domain/metadata_json.py): it says what pyiceberg says through a hundred commits, when the base was read
    back from a file instead, when snapshots were removed, and for a retried snapshot id with other contents."""
    import orjson

    from lakeledger.domain import metadata_json

    def same(metadata, base=None):
        data = tm.serialize(metadata, base)
        assert orjson.loads(data) == orjson.loads(metadata.model_dump_json())
        assert tm.parse(data) == tm.parse(metadata.model_dump_json().encode())
        return data

    metadata = _new_v(2)
    same(metadata)
    for n in range(1, 101):
        base, metadata = metadata, _commit(metadata, _snapshot(n, n, n - 1 if n > 1 else None), _main(n))
        assert n == 1 or metadata_json._written_for(base) is not None  # the path taken: the base's bytes
        same(metadata, base)
    read_back = tm.parse(tm.serialize(metadata))  # other objects: nothing of it was written here
    assert metadata_json._written_for(read_back) is None
    after_read = _commit(read_back, _snapshot(101, 101, 100), _main(101))
    same(after_read, read_back)
    expired = _commit(after_read, {"action": "remove-snapshots", "snapshot-ids": [1, 2, 3]})
    assert [s.snapshot_id for s in expired.snapshots][:2] == [4, 5]
    same(expired, after_read)
    same(_commit(expired, _snapshot(102, 102, 101), _main(102)), expired)
    unchanged = _commit(expired, {"action": "set-properties", "updates": {"owner": "ops"}})
    same(unchanged, expired)  # no new snapshot: the base's arrays as they are
    retried = _commit(expired, _snapshot(102, 102, 101, **{"manifest-list": "file:///w/t/metadata/snap-102-b.avro"}),
                      _main(102))
    [snapshot] = [s for s in orjson.loads(same(retried, expired))["snapshots"] if s["snapshot-id"] == 102]
    assert snapshot["manifest-list"] == "file:///w/t/metadata/snap-102-b.avro"
