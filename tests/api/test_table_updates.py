"""Every TableUpdate of the Iceberg REST spec, sent over HTTP to updateTable, comes back in the loaded
metadata, format v3 (row lineage, encryption keys) included. Commits alternate between two API
processes: the second has nothing cached, so each of its commits builds on the metadata file as read
back from storage, which proves the file holds everything the first process was sent."""

import time
import uuid

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable
from support import SCHEMA

KEY = {"key-id": "k1", "encrypted-key-metadata": "a2V5LW9uZQ==", "encrypted-by-id": "kms-1",
       "properties": {"scheme": "test"}}
KEY2 = {"key-id": "k2", "encrypted-key-metadata": "a2V5LXR3bw=="}


@pytest.fixture
def other(second_server):
    """A client of the second API process."""
    with httpx.Client(base_url=second_server.url, timeout=60) as c:
        yield c


def _commit(client, path, *updates, requirements=()):
    r = client.post(path, json={"requirements": list(requirements), "updates": list(updates)})
    assert r.status_code == 200, r.text
    return r.json()["metadata"]


def _load(client, path):
    r = client.get(path)
    assert r.status_code == 200, r.text
    return r.json()


def _loaded(client, other, path):
    """The loaded metadata, the same from both processes."""
    body = _load(client, path)
    assert _load(other, path) == body
    return body["metadata"]


def _refused(client, path, log_length, *updates, requirements=(), status=400, type_="IllegalArgumentException"):
    before, location = log_length(), _load(client, path)["metadata-location"]
    r = client.post(path, json={"requirements": list(requirements), "updates": list(updates)})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["type"] == type_ and error["code"] == status and error["message"]
    assert log_length() == before and _load(client, path)["metadata-location"] == location
    return error["message"]


def _snapshot(snapshot_id, sequence_number, parent=None, **extra):
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": sequence_number, "timestamp-ms": int(time.time() * 1000),
                "manifest-list": f"file:///nowhere/snap-{snapshot_id}.avro", "schema-id": 0,
                "summary": {"operation": "append", "added-records": "10"}, **extra}
    if parent is not None:
        snapshot["parent-snapshot-id"] = parent
    return {"action": "add-snapshot", "snapshot": snapshot}


def _ref(name, snapshot_id, type_="branch", **extra):
    return {"action": "set-snapshot-ref", "ref-name": name, "type": type_, "snapshot-id": snapshot_id, **extra}


def _upgrade(version):
    return {"action": "upgrade-format-version", "format-version": version}


def test_every_update_action_round_trips(client, other, table_factory, warehouse):
    path = table_factory("upd", "all")
    meta = _loaded(client, other, path)
    assert meta["format-version"] == 2
    _commit(client, path, {"action": "assign-uuid", "uuid": meta["table-uuid"]})  # its own uuid: allowed, no change

    schema1 = {"type": "struct", "schema-id": 1, "fields": [
        *SCHEMA["fields"], {"id": 3, "name": "ts", "type": "timestamptz", "required": False}]}
    _commit(client, path, {"action": "add-schema", "schema": schema1},
            {"action": "set-current-schema", "schema-id": -1})
    _commit(other, path, {"action": "add-spec", "spec": {"spec-id": 1, "fields": [
        {"source-id": 3, "field-id": 1000, "name": "ts_day", "transform": "day"}]}},
        {"action": "set-default-spec", "spec-id": -1})
    _commit(client, path, {"action": "add-sort-order", "sort-order": {"order-id": 1, "fields": [
        {"source-id": 1, "transform": "identity", "direction": "desc", "null-order": "nulls-last"}]}},
        {"action": "set-default-sort-order", "sort-order-id": -1})
    meta = _loaded(client, other, path)
    assert meta["current-schema-id"] == 1 and [s["schema-id"] for s in meta["schemas"]] == [0, 1]
    assert meta["last-column-id"] == 3
    assert meta["default-spec-id"] == 1 and meta["partition-specs"][1]["fields"][0]["transform"] == "day"
    assert meta["default-sort-order-id"] == 1 and meta["sort-orders"][1]["fields"][0]["direction"] == "desc"

    _commit(other, path, {"action": "set-properties", "updates": {"a": "1", "b": "2"}})
    _commit(client, path, {"action": "remove-properties", "removals": ["a", "never-set"]})
    moved = f"{warehouse['location']}/moved/all"
    _commit(other, path, {"action": "set-location", "location": moved})
    meta = _loaded(client, other, path)
    assert meta["properties"] == {"b": "2"} and meta["location"] == moved

    _commit(client, path, _snapshot(1, 1), _ref("main", 1))
    _commit(other, path, _snapshot(2, 2, parent=1), _ref("main", 2), _ref("v1", 1, "tag", **{"max-ref-age-ms": 60000}),
            _ref("dev", 2, **{"min-snapshots-to-keep": 3}),
            requirements=[{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1},
                          {"type": "assert-ref-snapshot-id", "ref": "dev", "snapshot-id": None}])
    stats = {"snapshot-id": 1, "statistics-path": f"{moved}/metadata/s1.puffin", "file-size-in-bytes": 10,
             "file-footer-size-in-bytes": 4, "blob-metadata": [
                 {"type": "apache-datasketches-theta-v1", "snapshot-id": 1, "sequence-number": 1, "fields": [1]}]}
    pstats = {"snapshot-id": 1, "statistics-path": f"{moved}/metadata/p1.parquet", "file-size-in-bytes": 20}
    _commit(client, path, {"action": "set-statistics", "statistics": stats},
            {"action": "set-partition-statistics", "partition-statistics": pstats})
    meta = _loaded(client, other, path)
    assert meta["current-snapshot-id"] == 2 and [s["snapshot-id"] for s in meta["snapshots"]] == [1, 2]
    assert meta["refs"] == {"main": {"snapshot-id": 2, "type": "branch"},
                            "v1": {"snapshot-id": 1, "type": "tag", "max-ref-age-ms": 60000},
                            "dev": {"snapshot-id": 2, "type": "branch", "min-snapshots-to-keep": 3}}
    assert meta["statistics"] == [stats] and meta["partition-statistics"] == [pstats]

    _commit(other, path, {"action": "remove-snapshot-ref", "ref-name": "dev"},
            {"action": "remove-partition-specs", "spec-ids": [0]}, {"action": "remove-schemas", "schema-ids": [0]})
    meta = _loaded(client, other, path)
    assert set(meta["refs"]) == {"main", "v1"}
    assert [s["spec-id"] for s in meta["partition-specs"]] == [1] and [s["schema-id"] for s in meta["schemas"]] == [1]

    # a Java client's expiry: the snapshot, then the statistics that went with it (already gone: no change)
    _commit(client, path, {"action": "remove-snapshots", "snapshot-ids": [1]},
            {"action": "remove-statistics", "snapshot-id": 1},
            {"action": "remove-partition-statistics", "snapshot-id": 1})
    meta = _loaded(client, other, path)
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [2] and set(meta["refs"]) == {"main"}
    assert meta["statistics"] == [] and meta["partition-statistics"] == []
    assert "parent-snapshot-id" not in meta["snapshots"][0]


def test_create_with_format_version_3(client, other, table_factory, warehouse, log_length):
    path = table_factory("v3", "t", properties={"format-version": "3", "owner": "ops"})
    meta = _loaded(client, other, path)
    assert meta["format-version"] == 3 and meta["next-row-id"] == 0
    assert meta["properties"] == {"owner": "ops"}  # format-version picks the format; it is not a stored property
    before = log_length()
    for bad in ("4", "zero"):
        r = client.post(f"{warehouse['prefix']}/namespaces/v3/tables",
                        json={"name": f"bad{bad}", "schema": SCHEMA, "properties": {"format-version": bad}})
        assert r.status_code == 400 and r.json()["error"]["type"] == "IllegalArgumentException", r.text
    assert log_length() == before


def test_upgrades_and_refused_downgrades(client, other, table_factory, log_length):
    one_two_three = table_factory("upg", "a", properties={"format-version": "1"})
    assert _loaded(client, other, one_two_three)["format-version"] == 1
    _commit(client, one_two_three, _snapshot(7, 0), _ref("main", 7))
    assert _commit(other, one_two_three, _upgrade(2))["format-version"] == 2
    meta = _commit(client, one_two_three, _upgrade(3))
    assert meta["format-version"] == 3 and meta["next-row-id"] == 0
    assert [s["snapshot-id"] for s in meta["snapshots"]] == [7] and "first-row-id" not in meta["snapshots"][0]
    assert _loaded(client, other, one_two_three) == meta

    one_to_three = table_factory("upg", "b", properties={"format-version": "1"})
    meta = _commit(other, one_to_three, _upgrade(3))
    assert meta["format-version"] == 3 and meta["next-row-id"] == 0 and meta["last-sequence-number"] == 0
    assert _loaded(client, other, one_to_three) == meta
    assert _commit(client, one_to_three, _upgrade(3)) == meta  # already v3: no change

    for target in (2, 1, 4):
        _refused(client, one_to_three, log_length, _upgrade(target))


def test_v3_row_lineage_and_encryption_keys_round_trip(client, other, table_factory, log_length):
    path = table_factory("enc", "t")
    _commit(client, path, _upgrade(3), {"action": "add-encryption-key", "encryption-key": KEY})
    meta = _loaded(client, other, path)
    assert meta["format-version"] == 3 and meta["next-row-id"] == 0 and meta["encryption-keys"] == [KEY]

    # built by the second process from the file: keys, key-id and next-row-id must all have been read back
    _commit(other, path, {"action": "add-encryption-key", "encryption-key": KEY2},
            _snapshot(1, 1, **{"first-row-id": 0, "added-rows": 25, "key-id": "k1"}), _ref("main", 1))
    _commit(client, path, _snapshot(2, 2, parent=1, **{"first-row-id": 25, "added-rows": 5, "key-id": "k2"}),
            _ref("main", 2))
    meta = _loaded(client, other, path)
    assert meta["encryption-keys"] == [KEY, KEY2] and meta["next-row-id"] == 30
    assert [(s["first-row-id"], s["added-rows"], s["key-id"]) for s in meta["snapshots"]] == [(0, 25, "k1"),
                                                                                             (25, 5, "k2")]
    _commit(other, path, {"action": "set-properties", "updates": {"after": "keys"}})
    assert _loaded(client, other, path)["encryption-keys"] == [KEY, KEY2]

    _refused(client, path, log_length, _snapshot(3, 3, parent=2, **{"first-row-id": 29, "added-rows": 1}))
    _refused(client, path, log_length, _snapshot(3, 3, parent=2, **{"added-rows": 1}))
    _refused(client, path, log_length, {"action": "add-encryption-key",
                                        "encryption-key": {**KEY, "encrypted-key-metadata": "b3RoZXI="}})

    _commit(client, path, {"action": "remove-encryption-key", "key-id": "k1"})
    assert _loaded(client, other, path)["encryption-keys"] == [KEY2]
    _commit(other, path, {"action": "remove-encryption-key", "key-id": "k2"})
    meta = _loaded(client, other, path)
    assert "encryption-keys" not in meta and meta["next-row-id"] == 30 and meta["properties"] == {"after": "keys"}


def test_staged_v3_create_and_transaction(client, other, warehouse):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["stx"]})
    staged = client.post(f"{p}/namespaces/stx/tables", json={"name": "s", "schema": SCHEMA, "stage-create": True,
                                                             "properties": {"format-version": "3"}})
    assert staged.status_code == 200, staged.text
    meta = staged.json()["metadata"]
    assert meta["format-version"] == 3 and meta["next-row-id"] == 0
    created = _commit(client, f"{p}/namespaces/stx/tables/s", {"action": "assign-uuid", "uuid": meta["table-uuid"]},
                      _upgrade(3), {"action": "add-schema", "schema": meta["schemas"][0]},
                      {"action": "set-current-schema", "schema-id": -1},
                      {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                      {"action": "set-default-spec", "spec-id": -1},
                      {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                      {"action": "set-default-sort-order", "sort-order-id": -1},
                      {"action": "add-encryption-key", "encryption-key": KEY},
                      requirements=[{"type": "assert-create"}])
    assert created["format-version"] == 3 and created["next-row-id"] == 0 and created["encryption-keys"] == [KEY]
    assert _loaded(client, other, f"{p}/namespaces/stx/tables/s") == created

    path_b = f"{p}/namespaces/stx/tables/b"
    assert client.post(f"{p}/namespaces/stx/tables", json={"name": "b", "schema": SCHEMA}).status_code == 200
    r = other.post(f"{p}/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ["stx"], "name": "s"},
         "updates": [_snapshot(1, 1, **{"first-row-id": 0, "added-rows": 8}), _ref("main", 1)]},
        {"identifier": {"namespace": ["stx"], "name": "b"},
         "updates": [_upgrade(3), {"action": "add-encryption-key", "encryption-key": KEY2}]}]})
    assert r.status_code == 204, r.text
    assert _loaded(client, other, f"{p}/namespaces/stx/tables/s")["next-row-id"] == 8
    meta_b = _loaded(client, other, path_b)
    assert meta_b["format-version"] == 3 and meta_b["encryption-keys"] == [KEY2]


def test_malformed_or_impossible_updates_are_bad_requests_that_change_nothing(client, table_factory, log_length):
    v2 = table_factory("bad", "v2")
    v3 = table_factory("bad", "v3", properties={"format-version": "3"})
    uuid_ = _load(client, v2)["metadata"]["table-uuid"]
    for path, update in [
        (v2, {"action": "add-encryption-key", "encryption-key": KEY}),  # keys live in v3 metadata only
        (v3, {"action": "add-encryption-key"}),
        (v3, {"action": "add-encryption-key", "encryption-key": {"key-id": "k"}}),
        (v3, {"action": "add-encryption-key", "encryption-key": {**KEY, "encrypted-key-metadata": "%%%"}}),
        (v3, {"action": "add-encryption-key", "encryption-key": "k1"}),
        (v3, {"action": "remove-encryption-key"}),
        (v3, {"action": "remove-encryption-key", "key-id": ["k1"]}),
        (v3, {"action": "encrypt-everything"}),
        (v3, {"action": "upgrade-format-version"}),
        (v3, {"action": "upgrade-format-version", "format-version": "three"}),
        (v3, _snapshot(1, 1)),  # v3 snapshots need first-row-id and added-rows
        (v3, _snapshot(1, 1, **{"first-row-id": -1, "added-rows": 1})),
        (v2, {"action": "assign-uuid", "uuid": str(uuid.uuid4())}),  # a table's uuid is never reassigned
        (v2, {"action": "assign-uuid", "uuid": "not-a-uuid"}),
        (v2, {"action": "remove-schemas", "schema-ids": [0]}),  # the current schema
        (v2, {"action": "remove-partition-specs", "spec-ids": [0]}),  # the default spec
        (v2, {"action": "remove-snapshots", "snapshot-ids": "all"}),
        (v2, {"action": "set-statistics", "statistics": {"snapshot-id": 1}}),
        (v2, {"action": "set-partition-statistics", "partition-statistics": {}}),
        (v2, {"action": "remove-statistics"}),
        (v2, {"action": "set-statistics"}),  # pyiceberg's own validator fails on these with plain errors
        (v2, {"action": "set-properties", "updates": None}),
    ]:
        _refused(client, path, log_length, update)
    assert _load(client, v2)["metadata"]["table-uuid"] == uuid_


def test_assert_ref_snapshot_id_null_requires_the_ref_to_be_absent(client, table_factory, log_length):
    path = table_factory("refs", "t")
    # no snapshots and no "audit" branch yet: the requirement holds (pyiceberg alone would refuse it)
    _commit(client, path, _snapshot(1, 1), _ref("audit", 1),
            requirements=[{"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": None}])
    assert set(_load(client, path)["metadata"]["refs"]) == {"audit"}
    _refused(client, path, log_length, _snapshot(2, 2), _ref("audit", 2),
             requirements=[{"type": "assert-ref-snapshot-id", "ref": "audit", "snapshot-id": None}],
             status=409, type_="CommitFailedException")
    _refused(client, path, log_length, {"action": "set-properties", "updates": {"k": "v"}},
             requirements=[{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
             status=409, type_="CommitFailedException")


def test_pyiceberg_reads_a_v3_table(server, client, table_factory, warehouse):
    path = table_factory("py3", "t", properties={"format-version": "3"})
    _commit(client, path, {"action": "add-encryption-key", "encryption-key": KEY},
            _snapshot(1, 1, **{"first-row-id": 0, "added-rows": 12, "key-id": "k1"}), _ref("main", 1))
    catalog = RestCatalog("v3", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    table = catalog.load_table("py3.t")
    assert table.metadata.format_version == 3 and table.metadata.next_row_id == 12
    assert table.current_snapshot().first_row_id == 0 and table.current_snapshot().added_rows == 12
    # pyiceberg's own parser reads the metadata file the catalog wrote
    static = StaticTable.from_metadata(table.metadata_location)
    assert static.metadata.format_version == 3 and static.metadata.next_row_id == 12
    # and pyiceberg commits to it through the catalog, which keeps what pyiceberg does not model
    with table.transaction() as tx:
        tx.set_properties(owner="py")
    meta = _load(client, path)["metadata"]
    assert meta["properties"]["owner"] == "py" and meta["encryption-keys"] == [KEY]
    assert meta["snapshots"][0]["key-id"] == "k1" and meta["next-row-id"] == 12
