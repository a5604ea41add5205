import os
import time
import uuid
from pathlib import Path

from support import SCHEMA


def _load(client, path):
    r = client.get(path)
    assert r.status_code == 200, r.text
    return r.json()


def test_create_load_list_head(client, warehouse, table_factory):
    path = table_factory("ns", "t", properties={"owner": "ops"})
    body = _load(client, path)
    meta = body["metadata"]
    assert meta["properties"]["owner"] == "ops"
    assert meta["location"].startswith(warehouse["location"] + "/")
    assert body["metadata-location"].startswith(meta["location"] + "/metadata/00000-")
    # the catalog wrote the metadata file into the warehouse storage
    assert os.path.exists(body["metadata-location"][len("file://"):])
    assert client.head(path).status_code == 204
    assert client.head(path + "x").status_code == 404
    listed = client.get(f"{warehouse['prefix']}/namespaces/ns/tables").json()
    assert listed["identifiers"] == [{"namespace": ["ns"], "name": "t"}]
    # a missing namespace is a missing table to loadTable (Java clients then try metadata tables)
    missing = client.get(f"{warehouse['prefix']}/namespaces/nope/tables/t")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    missing = client.get(f"{warehouse['prefix']}/namespaces/ns/tables/nope")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"


def test_create_twice_conflicts(client, warehouse, table_factory):
    table_factory("ns", "t")
    r = client.post(f"{warehouse['prefix']}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code == 409 and r.json()["error"]["type"] == "AlreadyExistsException"


def test_commit_checks_requirements(client, table_factory, log_length):
    path = table_factory()
    meta = _load(client, path)["metadata"]
    ok = client.post(path, json={
        "requirements": [{"type": "assert-table-uuid", "uuid": meta["table-uuid"]},
                         {"type": "assert-current-schema-id", "current-schema-id": 0},
                         {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2},
                         {"type": "assert-last-assigned-partition-id", "last-assigned-partition-id": 999},
                         {"type": "assert-default-spec-id", "default-spec-id": 0},
                         {"type": "assert-default-sort-order-id", "default-sort-order-id": 0},
                         {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": None}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert ok.status_code == 200, ok.text
    body = ok.json()
    assert body["metadata"]["properties"]["k"] == "v"
    assert "/metadata/00001-" in body["metadata-location"]
    assert _load(client, path)["metadata-location"] == body["metadata-location"]

    before = log_length()
    stale = client.post(path, json={"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 7}],
                                    "updates": [{"action": "set-properties", "updates": {"k": "w"}}]})
    assert stale.status_code == 409 and stale.json()["error"]["type"] == "CommitFailedException"
    assert log_length() == before


def test_staged_create_then_commit_with_assert_create(client, warehouse):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["stage"]})
    staged = client.post(f"{p}/namespaces/stage/tables", json={"name": "s", "schema": SCHEMA, "stage-create": True})
    assert staged.status_code == 200 and staged.json()["metadata-location"] is None
    meta = staged.json()["metadata"]
    assert client.get(f"{p}/namespaces/stage/tables/s").status_code == 404  # nothing exists yet
    commit = client.post(f"{p}/namespaces/stage/tables/s", json={
        "requirements": [{"type": "assert-create"}],
        "updates": [{"action": "assign-uuid", "uuid": meta["table-uuid"]},
                    {"action": "upgrade-format-version", "format-version": 2},
                    {"action": "add-schema", "schema": meta["schemas"][0]},
                    {"action": "set-current-schema", "schema-id": -1},
                    {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                    {"action": "set-default-spec", "spec-id": -1},
                    {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                    {"action": "set-default-sort-order", "sort-order-id": -1},
                    {"action": "set-location", "location": meta["location"]},
                    {"action": "set-properties", "updates": {"created": "staged"}}]})
    assert commit.status_code == 200, commit.text
    loaded = _load(client, f"{p}/namespaces/stage/tables/s")["metadata"]
    assert loaded["table-uuid"] == meta["table-uuid"] and loaded["properties"]["created"] == "staged"
    again = client.post(f"{p}/namespaces/stage/tables/s", json={"requirements": [{"type": "assert-create"}],
                                                               "updates": []})
    assert again.status_code == 409


def test_commit_to_a_missing_table_is_404(client, warehouse, table_factory):
    table_factory()
    r = client.post(f"{warehouse['prefix']}/namespaces/ns/tables/ghost", json={"requirements": [], "updates": []})
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchTableException"


def test_transaction_is_all_or_nothing(client, warehouse, table_factory, log_length):
    a, b = table_factory("tx", "a"), table_factory("tx", "b")
    p = warehouse["prefix"]
    ok = client.post(f"{p}/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ["tx"], "name": "a"}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"x": "1"}}]},
        {"identifier": {"namespace": ["tx"], "name": "b"}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"x": "1"}}]}]})
    assert ok.status_code == 204, ok.text
    assert _load(client, a)["metadata"]["properties"]["x"] == "1"
    assert _load(client, b)["metadata"]["properties"]["x"] == "1"

    before, a_location = log_length(), _load(client, a)["metadata-location"]
    failed = client.post(f"{p}/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ["tx"], "name": "a"}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"x": "2"}}]},
        {"identifier": {"namespace": ["tx"], "name": "b"},
         "requirements": [{"type": "assert-current-schema-id", "current-schema-id": 5}],
         "updates": [{"action": "set-properties", "updates": {"x": "2"}}]}]})
    assert failed.status_code == 409
    assert log_length() == before
    assert _load(client, a)["metadata-location"] == a_location


def test_rename_across_namespaces(client, warehouse, table_factory):
    p = warehouse["prefix"]
    table_factory("src", "t")
    table_factory("dst", "taken")
    uuid_ = _load(client, f"{p}/namespaces/src/tables/t")["metadata"]["table-uuid"]
    taken = client.post(f"{p}/tables/rename", json={"source": {"namespace": ["src"], "name": "t"},
                                                    "destination": {"namespace": ["dst"], "name": "taken"}})
    assert taken.status_code == 409
    missing_ns = client.post(f"{p}/tables/rename", json={"source": {"namespace": ["src"], "name": "t"},
                                                         "destination": {"namespace": ["nope"], "name": "x"}})
    assert missing_ns.status_code == 404 and missing_ns.json()["error"]["type"] == "NoSuchNamespaceException"
    missing = client.post(f"{p}/tables/rename", json={"source": {"namespace": ["src"], "name": "ghost"},
                                                      "destination": {"namespace": ["dst"], "name": "x"}})
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    ok = client.post(f"{p}/tables/rename", json={"source": {"namespace": ["src"], "name": "t"},
                                                 "destination": {"namespace": ["dst"], "name": "moved"}})
    assert ok.status_code == 204
    assert client.get(f"{p}/namespaces/src/tables/t").status_code == 404
    assert _load(client, f"{p}/namespaces/dst/tables/moved")["metadata"]["table-uuid"] == uuid_
    # the old name is free again
    table_factory("src", "t")


def test_drop_purges_by_default_and_only_inside_the_table(client, warehouse, table_factory):
    kept_path = table_factory("d", "kept")
    kept_meta = _load(client, kept_path)["metadata-location"][len("file://"):]
    path = table_factory("d", "gone")
    location = _load(client, path)["metadata"]["location"][len("file://"):]
    assert os.path.isdir(location)
    assert client.delete(path).status_code == 204
    assert client.get(path).status_code == 404
    assert client.delete(path).status_code == 404
    deadline = time.monotonic() + 20
    while os.path.exists(location) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.path.exists(location)
    assert os.path.exists(kept_meta)
    assert os.path.isdir(warehouse["path"])


def test_drop_without_purge_keeps_files(client, table_factory):
    path = table_factory("d", "keepfiles")
    location = _load(client, path)["metadata"]["location"][len("file://"):]
    assert client.delete(path, params={"purgeRequested": "false"}).status_code == 204
    time.sleep(1.5)
    assert os.path.isdir(location)


def test_register_an_existing_metadata_file(client, warehouse, table_factory):
    p = warehouse["prefix"]
    path = table_factory("r", "orig")
    original = _load(client, path)
    assert client.delete(path, params={"purgeRequested": "false"}).status_code == 204
    # a table dropped without purge comes back by registering its own metadata file
    registered = client.post(f"{p}/namespaces/r/register",
                             json={"name": "back", "metadata-location": original["metadata-location"]})
    assert registered.status_code == 200, registered.text
    back = _load(client, f"{p}/namespaces/r/tables/back")
    assert back["metadata"]["table-uuid"] == original["metadata"]["table-uuid"]
    assert back["metadata-location"] == original["metadata-location"]
    again = client.post(f"{p}/namespaces/r/register",
                        json={"name": "twice", "metadata-location": original["metadata-location"]})
    assert again.status_code == 409  # it is live again
    # dropped with purge, its files are the purge worker's: no registering back
    client.delete(f"{p}/namespaces/r/tables/back", params={"purgeRequested": "true"})
    purged = client.post(f"{p}/namespaces/r/register",
                         json={"name": "back", "metadata-location": original["metadata-location"]})
    assert purged.status_code in (400, 409), purged.text  # 400 once the worker has deleted the file

    meta = dict(original["metadata"])
    other = client.post(f"{p}/namespaces/r/tables", json={"name": "source", "schema": SCHEMA}).json()
    client.delete(f"{p}/namespaces/r/tables/source", params={"purgeRequested": "false"})
    # register a brand-new uuid by rewriting a metadata file under the warehouse
    import json
    new_uuid = str(uuid.uuid4())
    meta = other["metadata"] | {"table-uuid": new_uuid}
    target = warehouse["path"] / "registered" / "metadata" / "00000-x.metadata.json"
    target.parent.mkdir(parents=True)
    meta["location"] = f"file://{warehouse['path']}/registered"
    target.write_text(json.dumps(meta))
    ok = client.post(f"{p}/namespaces/r/register", json={"name": "reg", "metadata-location": f"file://{target}"})
    assert ok.status_code == 200, ok.text
    assert _load(client, f"{p}/namespaces/r/tables/reg")["metadata"]["table-uuid"] == new_uuid
    dup = client.post(f"{p}/namespaces/r/register", json={"name": "reg", "metadata-location": f"file://{target}"})
    assert dup.status_code == 409
    outside = client.post(f"{p}/namespaces/r/register", json={"name": "x", "metadata-location": "file:///etc/passwd"})
    assert outside.status_code == 400


def test_locations_outside_the_warehouse_or_overlapping_are_refused(client, warehouse, table_factory, log_length):
    p = warehouse["prefix"]
    path = table_factory("loc", "a", location=f"{warehouse['location']}/explicit/a")
    assert _load(client, path)["metadata"]["location"] == f"{warehouse['location']}/explicit/a"
    before = log_length()
    for location in ["file:///tmp/elsewhere", f"{warehouse['location']}/explicit/a/inner",
                     f"{warehouse['location']}/explicit", f"{warehouse['location']}/explicit/a"]:
        r = client.post(f"{p}/namespaces/loc/tables", json={"name": "b", "schema": SCHEMA, "location": location})
        assert r.status_code == 400, (location, r.text)
        assert r.json()["error"]["type"] == "BadRequestException"
    moved = client.post(path, json={"requirements": [], "updates": [{"action": "set-location",
                                                                      "location": "file:///tmp/away"}]})
    assert moved.status_code == 400
    assert log_length() == before


def test_metrics_are_accepted(client, table_factory):
    path = table_factory()
    r = client.post(path + "/metrics", json={
        "report-type": "scan-report", "table-name": "ns.t", "snapshot-id": -1, "filter": True, "schema-id": 0,
        "projected-field-ids": [1], "projected-field-names": ["id"], "metrics": {}})
    assert r.status_code == 204


def test_every_change_is_an_event_with_actor_request_id_and_change(client, db, table_factory):
    path = table_factory("ev", "t")
    table_uuid = _load(client, path)["metadata"]["table-uuid"]
    r = client.post(path, headers={"x-request-id": "req-42"}, json={
        "requirements": [{"type": "assert-table-uuid", "uuid": table_uuid}],
        "updates": [{"action": "set-properties", "updates": {"a": "b"}}]})
    assert r.headers["x-request-id"] == "req-42"
    rows = db.execute("SELECT topic, state FROM lakeledger_events WHERE originator_id = %s ORDER BY originator_version",
                      (table_uuid,)).fetchall()
    import json
    assert [t.rsplit(".", 1)[-1] for t, _ in rows] == ["Created", "Committed"]
    committed = json.loads(bytes(rows[1][1]))
    assert committed["actor"] == "anonymous" and committed["request_id"] == "req-42"
    assert committed["requirements"] == [{"type": "assert-table-uuid", "uuid": table_uuid}]
    assert committed["updates"] == [{"action": "set-properties", "updates": {"a": "b"}}]
    assert committed["metadata_location"] == r.json()["metadata-location"]
    assert "timestamp" in committed


def test_the_load_fast_path_answers_like_the_route(client, warehouse, table_factory):
    path = table_factory("fast", "t")
    client.post(path, json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"a": "b"}}]})
    fast = client.get(path, headers={"x-request-id": "fast-1"})
    routed = client.get(path, params={"snapshots": "all"}, headers={"x-request-id": "routed-1"})
    assert fast.status_code == routed.status_code == 200
    assert fast.content == routed.content
    assert fast.headers["content-type"] == routed.headers["content-type"] == "application/json"
    assert (fast.headers["x-request-id"], routed.headers["x-request-id"]) == ("fast-1", "routed-1")
    client.post(f"/management/v1/warehouse/{warehouse['id']}/deactivate")
    assert client.get(path).status_code == 403
    client.post(f"/management/v1/warehouse/{warehouse['id']}/activate")
    assert client.delete(path).status_code == 204
    gone = client.get(path)
    assert gone.status_code == 404 and gone.json()["error"]["type"] == "NoSuchTableException"


def test_a_new_table_location_has_its_data_and_metadata_folders(client, warehouse):
    """Engines that write files themselves before committing (DuckDB's CREATE TABLE AS) create no parent folders."""
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["folders"]})
    for name, staged in (("staged", True), ("created", False)):
        r = client.post(f"{warehouse['prefix']}/namespaces/folders/tables",
                        json={"name": name, "schema": SCHEMA, "stage-create": staged})
        assert r.status_code == 200, r.text
        location = Path(r.json()["metadata"]["location"].removeprefix("file:").removeprefix("//"))
        assert (location / "data").is_dir() and (location / "metadata").is_dir(), name


def test_metrics_of_a_staged_table_not_yet_committed_are_a_clean_404(client, warehouse, log_length):
    """Engines may report scan or commit metrics for a table they staged but have not committed: a 404
    NoSuchTableException ErrorModel, which metrics reporters log and ignore, never a 5xx."""
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["metrics"]})
    r = client.post(f"{warehouse['prefix']}/namespaces/metrics/tables",
                    json={"name": "staged", "schema": SCHEMA, "stage-create": True})
    assert r.status_code == 200, r.text
    before = log_length()
    report = {"report-type": "commit-report", "table-name": "metrics.staged", "snapshot-id": 1, "sequence-number": 1,
              "operation": "append", "metrics": {}}
    r = client.post(f"{warehouse['prefix']}/namespaces/metrics/tables/staged/metrics", json=report)
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchTableException", r.text
    assert log_length() == before
