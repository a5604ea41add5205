"""The rules Iceberg's metadata builder keeps, over HTTP: an added schema, spec or sort order gets a fresh id
unless an equal one exists (never two entries with one id), -1 names the one just added, schemas are validated
before anything is written, v3 column defaults survive a create, requested locations keep their spelling,
commits that change nothing write nothing, and retired metadata files are deleted when the table asks."""

from pathlib import Path

from support import SCHEMA

OTHER_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": True},
    {"id": 2, "name": "data", "type": "string", "required": False},
    {"id": 3, "name": "extra", "type": "int", "required": False},
]}


def _commit(client, path, *updates, requirements=()):
    r = client.post(path, json={"requirements": list(requirements), "updates": list(updates)})
    assert r.status_code == 200, r.text
    return r.json()


def _refused(client, path, log_length, *updates, type_="IllegalArgumentException"):
    before, location = log_length(), client.get(path).json()["metadata-location"]
    r = client.post(path, json={"requirements": [], "updates": list(updates)})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == type_, r.text
    assert log_length() == before and client.get(path).json()["metadata-location"] == location
    return r.json()["error"]["message"]


def _ids(entries, key):
    ids = [entry[key] for entry in entries]
    assert len(ids) == len(set(ids)), ids  # never two entries with one id
    return ids


def test_add_schema_with_a_taken_id_gets_a_fresh_one(client, table_factory):
    path = table_factory("rules", "schemas")
    meta = _commit(client, path, {"action": "add-schema", "schema": OTHER_SCHEMA},
                   {"action": "set-current-schema", "schema-id": -1})["metadata"]
    assert _ids(meta["schemas"], "schema-id") == [0, 1]
    assert meta["current-schema-id"] == 1 and meta["last-column-id"] == 3
    assert [f["name"] for f in meta["schemas"][1]["fields"]] == ["id", "data", "extra"]
    # an equal schema, whatever id it suggests, is the existing one: nothing new, and -1 still names it
    again = _commit(client, path, {"action": "add-schema", "schema": {**SCHEMA, "schema-id": 7}},
                    {"action": "set-current-schema", "schema-id": 0})["metadata"]
    assert _ids(again["schemas"], "schema-id") == [0, 1] and again["current-schema-id"] == 0


def test_minus_one_names_only_what_this_commit_added(client, table_factory, log_length):
    path = table_factory("rules", "last")
    # the schema exists already: this commit added nothing, so -1 names nothing (Java's rule)
    message = _refused(client, path, log_length, {"action": "add-schema", "schema": SCHEMA},
                       {"action": "set-current-schema", "schema-id": -1})
    assert "no schema has been added" in message
    _refused(client, path, log_length, {"action": "set-default-spec", "spec-id": -1})
    _refused(client, path, log_length, {"action": "set-default-sort-order", "sort-order-id": -1})


def test_add_spec_and_sort_order_with_taken_ids(client, table_factory, log_length):
    path = table_factory("rules", "specs")
    spec = {"spec-id": 0, "fields": [{"source-id": 1, "field-id": 1000, "name": "id_bucket",
                                      "transform": "bucket[4]"}]}
    order = {"order-id": 0, "fields": [{"source-id": 1, "transform": "identity", "direction": "asc",
                                        "null-order": "nulls-first"}]}
    answer = _commit(client, path, {"action": "add-spec", "spec": spec}, {"action": "set-default-spec", "spec-id": -1},
                     {"action": "add-sort-order", "sort-order": order},
                     {"action": "set-default-sort-order", "sort-order-id": -1})
    meta = answer["metadata"]
    assert _ids(meta["partition-specs"], "spec-id") == [0, 1] and meta["default-spec-id"] == 1
    assert meta["last-partition-id"] == 1000
    assert _ids(meta["sort-orders"], "order-id") == [0, 1] and meta["default-sort-order-id"] == 1
    # equal ones are reused under any suggested id, and -1 names them when this commit re-adds them
    count = log_length()
    again = _commit(client, path, {"action": "add-spec", "spec": {**spec, "spec-id": 9}},
                    {"action": "add-sort-order", "sort-order": {**order, "order-id": 5}})
    assert again["metadata-location"] == answer["metadata-location"] and log_length() == count
    reloaded = client.get(path).json()["metadata"]
    assert _ids(reloaded["partition-specs"], "spec-id") == [0, 1]
    assert _ids(reloaded["sort-orders"], "order-id") == [0, 1]


def test_equal_additions_change_nothing_and_append_nothing(client, table_factory, log_length):
    path = table_factory("rules", "equal")
    before = client.get(path).json()["metadata-location"]
    count = log_length()
    answer = _commit(client, path, {"action": "add-schema", "schema": {**SCHEMA, "schema-id": 3}},
                     {"action": "add-sort-order", "sort-order": {"order-id": 4, "fields": []}})
    assert answer["metadata-location"] == before and log_length() == count


def test_invalid_schemas_and_orders_are_refused_before_anything_is_written(client, table_factory, warehouse,
                                                                           log_length):
    path = table_factory("rules", "invalid")
    duplicate_ids = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "a", "type": "long", "required": True},
        {"id": 1, "name": "b", "type": "string", "required": False}]}
    assert "field id 1" in _refused(client, path, log_length, {"action": "add-schema", "schema": duplicate_ids})
    nested_duplicate = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "a", "type": "long", "required": True},
        {"id": 2, "name": "s", "type": {"type": "struct", "fields": [
            {"id": 1, "name": "x", "type": "int", "required": False}]}, "required": False}]}
    _refused(client, path, log_length, {"action": "add-schema", "schema": nested_duplicate})
    duplicate_names = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "a", "type": "long", "required": True},
        {"id": 2, "name": "a", "type": "string", "required": False}]}
    _refused(client, path, log_length, {"action": "add-schema", "schema": duplicate_names})
    missing_identifier = {**SCHEMA, "identifier-field-ids": [42]}
    _refused(client, path, log_length, {"action": "add-schema", "schema": missing_identifier})
    unknown_type = {"type": "struct", "fields": [{"id": 1, "name": "a", "type": "decimal(x)", "required": True}]}
    _refused(client, path, log_length, {"action": "add-schema", "schema": unknown_type})
    missing_field = {"order-id": 1, "fields": [{"source-id": 99, "transform": "identity", "direction": "asc",
                                                "null-order": "nulls-first"}]}
    _refused(client, path, log_length, {"action": "add-sort-order", "sort-order": missing_field})
    missing_source = {"spec-id": 1, "fields": [{"source-id": 99, "field-id": 1000, "name": "p",
                                                "transform": "identity"}]}
    _refused(client, path, log_length, {"action": "add-spec", "spec": missing_source})
    # the same schema in a create request
    before = log_length()
    r = client.post(f"{warehouse['prefix']}/namespaces/rules/tables", json={"name": "dup", "schema": duplicate_ids})
    assert r.status_code == 400 and r.json()["error"]["type"] == "IllegalArgumentException", r.text
    assert log_length() == before


def test_v3_column_defaults_survive_a_create(client, warehouse, log_length):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["defaults"]})
    schema = {"type": "struct", "schema-id": 0, "fields": [
        {"id": 1, "name": "id", "type": "long", "required": True},
        {"id": 2, "name": "status", "type": "string", "required": False, "initial-default": "new",
         "write-default": "open"},
        {"id": 3, "name": "score", "type": "int", "required": False, "write-default": 7}]}
    r = client.post(f"{warehouse['prefix']}/namespaces/defaults/tables",
                    json={"name": "t", "schema": schema, "properties": {"format-version": "3"}})
    assert r.status_code == 200, r.text
    for answer in (r.json(), client.get(f"{warehouse['prefix']}/namespaces/defaults/tables/t").json()):
        fields = {f["name"]: f for f in answer["metadata"]["schemas"][0]["fields"]}
        assert fields["status"]["initial-default"] == "new" and fields["status"]["write-default"] == "open"
        assert fields["score"]["write-default"] == 7 and "initial-default" not in fields["score"]
    # a v2 table cannot hold a non-null initial default
    before = log_length()
    r = client.post(f"{warehouse['prefix']}/namespaces/defaults/tables", json={"name": "v2", "schema": schema})
    assert r.status_code == 400 and r.json()["error"]["type"] == "IllegalArgumentException", r.text
    assert "initial default" in r.json()["error"]["message"] and log_length() == before


def test_requested_locations_keep_their_spelling(client, warehouse, log_length):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["spelt"]})
    short = f"file:{warehouse['path']}/custom/t1"  # file:/abs/path, as Java writes it
    r = client.post(f"{warehouse['prefix']}/namespaces/spelt/tables", json={"name": "t1", "schema": SCHEMA,
                                                                            "location": short})
    assert r.status_code == 200, r.text
    loaded = client.get(f"{warehouse['prefix']}/namespaces/spelt/tables/t1").json()
    assert loaded["metadata"]["location"] == short
    assert loaded["metadata-location"].startswith(short + "/metadata/")
    assert (Path(warehouse["path"]) / "custom" / "t1" / "metadata").is_dir()
    # overlap checks still compare the normalised form: the long spelling of the same place is taken
    before = log_length()
    long = f"file://{warehouse['path']}/custom/t1/inner"
    r = client.post(f"{warehouse['prefix']}/namespaces/spelt/tables", json={"name": "t2", "schema": SCHEMA,
                                                                            "location": long})
    assert r.status_code == 400, r.text
    # and a location outside the warehouse is refused in any spelling
    for outside in (f"file:{warehouse['path']}-elsewhere/t", f"file://{warehouse['path']}/../x/t", "file:relative/t"):
        r = client.post(f"{warehouse['prefix']}/namespaces/spelt/tables", json={"name": "t3", "schema": SCHEMA,
                                                                                "location": outside})
        assert r.status_code == 400, (outside, r.text)
    assert log_length() == before


def test_commits_that_change_nothing_write_nothing(client, table_factory, warehouse, log_length):
    path = table_factory("rules", "noop")
    before = client.get(path).json()
    count = log_length()
    files = sorted(Path(warehouse["path"]).rglob("*.metadata.json"))
    for updates in ([], [{"action": "remove-snapshots", "snapshot-ids": [123456789]}],
                    [{"action": "remove-properties", "removals": ["absent"]}]):
        answer = _commit(client, path, *updates, requirements=[
            {"type": "assert-table-uuid", "uuid": before["metadata"]["table-uuid"]}])
        assert answer["metadata-location"] == before["metadata-location"]
        assert answer["metadata"] == before["metadata"]
    assert log_length() == count
    assert sorted(Path(warehouse["path"]).rglob("*.metadata.json")) == files
    # requirements are still checked
    r = client.post(path, json={"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 5}],
                                "updates": []})
    assert r.status_code == 409 and r.json()["error"]["type"] == "CommitFailedException", r.text


def _metadata_files(warehouse) -> set[str]:
    return {p.name for p in Path(warehouse["path"]).rglob("*.metadata.json")}


def test_retired_metadata_files_are_deleted_when_the_table_asks(client, table_factory, warehouse, db):
    keep = table_factory("retire", "keep")
    for i in range(4):
        _commit(client, keep, {"action": "set-properties", "updates": {"n": str(i)}})
    assert len(_metadata_files(warehouse)) == 5  # the default: every metadata file is kept

    path = table_factory("retire", "drop", properties={"write.metadata.delete-after-commit.enabled": "true",
                                                        "write.metadata.previous-versions-max": "2"})
    table_dir = Path(client.get(path).json()["metadata"]["location"].removeprefix("file://"))
    created_at = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    for i in range(5):
        answer = _commit(client, path, {"action": "set-properties", "updates": {"n": str(i)}})
    log = answer["metadata"]["metadata-log"]
    assert len(log) == 2
    on_disk = {str(p) for p in (table_dir / "metadata").glob("*.metadata.json")}
    expected = {entry["metadata-file"].removeprefix("file://") for entry in log}
    expected.add(answer["metadata-location"].removeprefix("file://"))
    assert on_disk == expected
    # the catalog as it was when the table was created pointed at a file that is gone now: a clean 404
    config = client.get("/catalog/v1/config", params={"warehouse": f"{warehouse['name']}@seq:{created_at}"}).json()
    r = client.get(f"/catalog/v1/{config['overrides']['prefix']}/namespaces/retire/tables/drop")
    assert r.status_code == 404, r.text
