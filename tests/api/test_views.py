"""Iceberg REST views over HTTP against a real server: create, load, list, replace with every update,
rename, drop, register, one name space with tables, bad input, concurrent replaces and the events."""

import json
import os
import threading
import uuid

import pytest
from support import SCHEMA

VIEW_SCHEMA = {"type": "struct", "schema-id": 5, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": True}]}
WIDER_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": True},
    {"id": 2, "name": "data", "type": "string", "required": False}]}


def view_version(sql: str = "SELECT id FROM ns.t", schema_id: int = 0, dialect: str = "spark",
                 timestamp_ms: int = 1_700_000_000_000) -> dict:
    return {"version-id": 1, "schema-id": schema_id, "timestamp-ms": timestamp_ms,
            "summary": {"engine-name": "test"}, "default-namespace": ["ns"],
            "representations": [{"type": "sql", "sql": sql, "dialect": dialect}]}


def _create(client, prefix, namespace="ns", name="v", **extra):
    client.post(f"{prefix}/namespaces", json={"namespace": namespace.split("\x1f")})
    r = client.post(f"{prefix}/namespaces/{namespace}/views",
                    json={"name": name, "schema": VIEW_SCHEMA, "view-version": view_version(), "properties": {},
                          **extra})
    assert r.status_code == 200, r.text
    return r.json()


def _load(client, path):
    r = client.get(path)
    assert r.status_code == 200, r.text
    return r.json()


def _error(r, status, type_):
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == status and body["error"]["message"]
    assert body["error"]["type"] == type_, body


@pytest.fixture
def view_path(client, warehouse):
    _create(client, warehouse["prefix"], properties={"comment": "first"})
    return f"{warehouse['prefix']}/namespaces/ns/views/v"


def test_create_load_list_head(client, warehouse, view_path):
    p = warehouse["prefix"]
    body = _load(client, view_path)
    assert set(body) == {"metadata-location", "metadata", "config"}
    meta = body["metadata"]
    assert meta["format-version"] == 1 and meta["properties"] == {"comment": "first"}
    assert meta["location"].startswith(warehouse["location"] + "/")
    assert [s["schema-id"] for s in meta["schemas"]] == [0]  # the sent schema-id 5 is reassigned
    assert [(v["version-id"], v["schema-id"]) for v in meta["versions"]] == [(1, 0)]
    assert meta["current-version-id"] == 1
    assert meta["version-log"] == [{"version-id": 1, "timestamp-ms": 1_700_000_000_000}]
    assert body["metadata-location"].startswith(meta["location"] + "/metadata/00000-")
    assert body["metadata-location"].endswith(".metadata.json")
    with open(body["metadata-location"][len("file://"):], "rb") as f:
        stored = json.loads(f.read())
    assert stored == meta  # the file is what is served
    assert client.head(view_path).status_code == 204
    missing = client.head(view_path + "x")
    assert missing.status_code == 404 and missing.content == b""
    listed = client.get(f"{p}/namespaces/ns/views").json()
    assert listed == {"identifiers": [{"namespace": ["ns"], "name": "v"}], "next-page-token": None}
    _error(client.get(f"{p}/namespaces/ns/views/nope"), 404, "NoSuchViewException")
    _error(client.get(f"{p}/namespaces/nope/views"), 404, "NoSuchNamespaceException")


def test_explicit_location_and_create_twice(client, warehouse):
    p = warehouse["prefix"]
    created = _create(client, p, name="placed", location=f"{warehouse['location']}/views/placed")
    assert created["metadata"]["location"] == f"{warehouse['location']}/views/placed"
    assert created["metadata-location"].startswith(f"{warehouse['location']}/views/placed/metadata/00000-")
    again = client.post(f"{p}/namespaces/ns/views",
                        json={"name": "placed", "schema": VIEW_SCHEMA, "view-version": view_version()})
    _error(again, 409, "AlreadyExistsException")


def test_replace_with_every_update_type(client, warehouse, view_path, log_length):
    meta = _load(client, view_path)["metadata"]
    view_uuid = meta["view-uuid"]
    assert_uuid = [{"type": "assert-view-uuid", "uuid": view_uuid}]

    r = client.post(view_path, json={"requirements": assert_uuid, "updates": [
        {"action": "assign-uuid", "uuid": view_uuid},
        {"action": "upgrade-format-version", "format-version": 1},
        {"action": "add-schema", "schema": WIDER_SCHEMA},
        {"action": "add-view-version", "view-version": view_version("SELECT id, data FROM ns.t", schema_id=-1,
                                                                    timestamp_ms=1_700_000_000_500)},
        {"action": "set-current-view-version", "view-version-id": -1},
        {"action": "set-properties", "updates": {"owner": "ops", "comment": "second"}},
        {"action": "remove-properties", "removals": ["owner"]},
        {"action": "set-location", "location": f"{warehouse['location']}/moved/v"}]})
    assert r.status_code == 200, r.text
    body = r.json()
    meta = body["metadata"]
    assert "/moved/v/metadata/00001-" in body["metadata-location"]
    assert meta["view-uuid"] == view_uuid and meta["format-version"] == 1
    assert [s["schema-id"] for s in meta["schemas"]] == [0, 1]
    assert [(v["version-id"], v["schema-id"]) for v in meta["versions"]] == [(1, 0), (2, 1)]
    assert meta["current-version-id"] == 2
    assert meta["version-log"] == [{"version-id": 1, "timestamp-ms": 1_700_000_000_000},
                                   {"version-id": 2, "timestamp-ms": 1_700_000_000_500}]
    assert meta["properties"] == {"comment": "second"}
    assert meta["location"] == f"{warehouse['location']}/moved/v"
    assert _load(client, view_path) == body

    # roll back to version 1 by id: logged again, at the time of the change
    back = client.post(view_path, json={"requirements": assert_uuid, "updates": [
        {"action": "set-current-view-version", "view-version-id": 1}]}).json()
    assert back["metadata"]["current-version-id"] == 1
    assert [e["version-id"] for e in back["metadata"]["version-log"]] == [1, 2, 1]
    assert back["metadata"]["version-log"][-1]["timestamp-ms"] > 1_700_000_000_500
    assert "/metadata/00002-" in back["metadata-location"]

    # a failed requirement is a 409 and changes nothing
    before = log_length()
    stale = client.post(view_path, json={
        "requirements": [{"type": "assert-view-uuid", "uuid": str(uuid.uuid4())}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    _error(stale, 409, "CommitFailedException")
    assert log_length() == before
    # an update that changes nothing writes nothing
    same = client.post(view_path, json={"requirements": assert_uuid, "updates": [
        {"action": "set-current-view-version", "view-version-id": 1}]})
    assert same.status_code == 200 and same.json()["metadata-location"] == back["metadata-location"]
    assert log_length() == before


def test_rename_within_and_across_namespaces(client, warehouse, view_path):
    p = warehouse["prefix"]
    meta = _load(client, view_path)["metadata"]
    r = client.post(f"{p}/views/rename", json={"source": {"namespace": ["ns"], "name": "v"},
                                               "destination": {"namespace": ["ns"], "name": "w"}})
    assert r.status_code == 204, r.text
    assert client.head(view_path).status_code == 404
    assert _load(client, f"{p}/namespaces/ns/views/w")["metadata"] == meta
    client.post(f"{p}/namespaces", json={"namespace": ["other"]})
    r = client.post(f"{p}/views/rename", json={"source": {"namespace": ["ns"], "name": "w"},
                                               "destination": {"namespace": ["other"], "name": "w2"}})
    assert r.status_code == 204, r.text
    assert client.get(f"{p}/namespaces/ns/views").json()["identifiers"] == []
    assert client.get(f"{p}/namespaces/other/views").json()["identifiers"] == [{"namespace": ["other"],
                                                                                 "name": "w2"}]
    # the old name is free again
    _create(client, p, name="w")
    missing = client.post(f"{p}/views/rename", json={"source": {"namespace": ["ns"], "name": "nope"},
                                                     "destination": {"namespace": ["ns"], "name": "x"}})
    _error(missing, 404, "NoSuchViewException")
    no_ns = client.post(f"{p}/views/rename", json={"source": {"namespace": ["other"], "name": "w2"},
                                                   "destination": {"namespace": ["gone"], "name": "x"}})
    _error(no_ns, 404, "NoSuchNamespaceException")
    onto_view = client.post(f"{p}/views/rename", json={"source": {"namespace": ["other"], "name": "w2"},
                                                       "destination": {"namespace": ["ns"], "name": "w"}})
    _error(onto_view, 409, "AlreadyExistsException")


def test_drop_keeps_files_and_frees_the_name(client, warehouse, view_path, log_length):
    p = warehouse["prefix"]
    metadata_location = _load(client, view_path)["metadata-location"]
    assert client.delete(view_path).status_code == 204
    _error(client.get(view_path), 404, "NoSuchViewException")
    assert client.head(view_path).status_code == 404
    assert client.get(f"{p}/namespaces/ns/views").json()["identifiers"] == []
    assert os.path.exists(metadata_location[len("file://"):])  # never a purge
    before = log_length()
    _error(client.delete(view_path), 404, "NoSuchViewException")
    _error(client.post(view_path, json={"updates": [{"action": "set-properties", "updates": {"a": "b"}}]}),
           404, "NoSuchViewException")
    assert log_length() == before
    recreated = _create(client, p)
    assert recreated["metadata-location"] != metadata_location
    # an empty namespace can be dropped only once its views are gone
    _error(client.delete(f"{p}/namespaces/ns"), 409, "NamespaceNotEmptyException")
    assert client.delete(view_path).status_code == 204
    assert client.delete(f"{p}/namespaces/ns").status_code == 204


def test_register_view(client, warehouse, view_path, log_length):
    p = warehouse["prefix"]
    original = _load(client, view_path)
    # the catalog knows this view's uuid: registering its file again is a conflict
    _error(client.post(f"{p}/namespaces/ns/register-view",
                       json={"name": "again", "metadata-location": original["metadata-location"]}),
           409, "AlreadyExistsException")
    new_uuid = str(uuid.uuid4())
    meta = original["metadata"] | {"view-uuid": new_uuid, "location": f"{warehouse['location']}/registered"}
    target = warehouse["path"] / "registered" / "metadata" / f"00003-{uuid.uuid4()}.metadata.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(meta))
    r = client.post(f"{p}/namespaces/ns/register-view", json={"name": "reg", "metadata-location": f"file://{target}"})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == meta and r.json()["metadata-location"] == f"file://{target}"
    loaded = _load(client, f"{p}/namespaces/ns/views/reg")
    assert loaded == r.json()
    # the next replace continues the file numbering
    replaced = client.post(f"{p}/namespaces/ns/views/reg", json={"updates": [
        {"action": "set-properties", "updates": {"x": "y"}}]})
    assert "/registered/metadata/00004-" in replaced.json()["metadata-location"]

    before = log_length()
    _error(client.post(f"{p}/namespaces/ns/register-view",
                       json={"name": "reg", "metadata-location": f"file://{target}"}), 409, "AlreadyExistsException")
    _error(client.post(f"{p}/namespaces/ns/register-view",
                       json={"name": "out", "metadata-location": "file:///etc/passwd"}), 400, "BadRequestException")
    _error(client.post(f"{p}/namespaces/ns/register-view",
                       json={"name": "gone", "metadata-location": f"{warehouse['location']}/none.metadata.json"}),
           404, "NotFoundException")
    table = client.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).json()
    after_table = log_length()
    _error(client.post(f"{p}/namespaces/ns/register-view",
                       json={"name": "tbl", "metadata-location": table["metadata-location"]}),
           400, "BadRequestException")
    _error(client.post(f"{p}/namespaces/nope/register-view",
                       json={"name": "x", "metadata-location": f"file://{target}"}), 404, "NoSuchNamespaceException")
    assert log_length() == after_table and after_table == before + 2  # the table's claim and creation only



def test_a_dropped_view_is_registered_again_from_its_metadata_file(client, warehouse, log_length):
    """Iceberg 1.11's ViewCatalogTests.registerView: a dropped view (a drop never purges a view's files) comes back,
    the same view (uuid, versions), by registering its last metadata file, as a dropped table does; an event of its
    own."""
    warehouse_id, p = warehouse["id"], warehouse["prefix"]
    view = _create(client, p)
    path = f"{p}/namespaces/ns/views/v"
    assert client.delete(path).status_code == 204
    _error(client.get(path), 404, "NoSuchViewException")

    before = log_length()
    registered = client.post(f"{p}/namespaces/ns/register-view",
                             json={"name": "v", "metadata-location": view["metadata-location"]})
    assert registered.status_code == 200, registered.text
    assert registered.json()["metadata"] == view["metadata"]
    assert registered.json()["metadata-location"] == view["metadata-location"]
    assert _load(client, path) == registered.json()
    assert [v["name"] for v in client.get(f"{p}/namespaces/ns/views").json()["identifiers"]] == ["v"]
    assert log_length() == before + 2  # the name's claim and the view's registration
    history = client.get(f"/management/v1/warehouse/{warehouse_id}/history",
                         params={"type": "view.registered"}).json()["events"]
    assert [e["entity"]["id"] for e in history] == [view["metadata"]["view-uuid"]]
    # the Events API has no register-view: ours, under its own type
    page = client.post(f"{p}/events", json={"operation-types": ["x-lakeledger.view.registered"]})
    assert page.status_code == 200, page.text
    assert [(e["operation"]["operation-type"], e["operation"]["object-uuid"]) for e in page.json()["events"]] == [
        ("x-lakeledger.view.registered", view["metadata"]["view-uuid"])]
    # it lives on: replaced, and registered once more only after another drop
    replaced = client.post(path, json={"updates": [{"action": "set-properties", "updates": {"x": "y"}}]})
    assert replaced.status_code == 200, replaced.text
    _error(client.post(f"{p}/namespaces/ns/register-view",
                       json={"name": "w", "metadata-location": view["metadata-location"]}),
           409, "AlreadyExistsException")


def test_views_and_tables_share_one_name_space(client, warehouse, log_length):
    p = warehouse["prefix"]
    _create(client, p, name="v")
    assert client.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    before = log_length()
    _error(client.post(f"{p}/namespaces/ns/views", json={"name": "t", "schema": VIEW_SCHEMA,
                                                         "view-version": view_version()}),
           409, "AlreadyExistsException")
    _error(client.post(f"{p}/namespaces/ns/tables", json={"name": "v", "schema": SCHEMA}),
           409, "AlreadyExistsException")
    _error(client.get(f"{p}/namespaces/ns/tables/v"), 404, "NoSuchTableException")
    _error(client.get(f"{p}/namespaces/ns/views/t"), 404, "NoSuchViewException")
    assert client.head(f"{p}/namespaces/ns/tables/v").status_code == 404
    assert client.head(f"{p}/namespaces/ns/views/t").status_code == 404
    _error(client.delete(f"{p}/namespaces/ns/tables/v"), 404, "NoSuchTableException")
    _error(client.delete(f"{p}/namespaces/ns/views/t"), 404, "NoSuchViewException")
    _error(client.post(f"{p}/namespaces/ns/views/t", json={"updates": []}), 404, "NoSuchViewException")
    _error(client.post(f"{p}/views/rename", json={"source": {"namespace": ["ns"], "name": "v"},
                                                  "destination": {"namespace": ["ns"], "name": "t"}}),
           409, "AlreadyExistsException")
    _error(client.post(f"{p}/tables/rename", json={"source": {"namespace": ["ns"], "name": "t"},
                                                   "destination": {"namespace": ["ns"], "name": "v"}}),
           409, "AlreadyExistsException")
    _error(client.post(f"{p}/views/rename", json={"source": {"namespace": ["ns"], "name": "t"},
                                                  "destination": {"namespace": ["ns"], "name": "x"}}),
           404, "NoSuchViewException")
    assert client.get(f"{p}/namespaces/ns/tables").json()["identifiers"] == [{"namespace": ["ns"], "name": "t"}]
    assert client.get(f"{p}/namespaces/ns/views").json()["identifiers"] == [{"namespace": ["ns"], "name": "v"}]
    assert log_length() == before


def _message(r, status, type_) -> str:
    _error(r, status, type_)
    return r.json()["error"]["message"]


def test_a_view_in_a_missing_namespace_is_a_missing_view(client, warehouse, log_length):
    # Iceberg's reference server answers so, and Java's loadView raises NoSuchViewException for it
    p = warehouse["prefix"]
    before = log_length()
    view = f"{p}/namespaces/nope/views/v"
    assert _message(client.get(view), 404, "NoSuchViewException") == "View does not exist: nope.v"
    assert client.head(view).status_code == 404
    assert _message(client.post(view, json={"updates": [{"action": "set-properties", "updates": {"a": "b"}}]}),
                    404, "NoSuchViewException") == "View does not exist: nope.v"
    assert _message(client.delete(view), 404, "NoSuchViewException") == "View does not exist: nope.v"
    assert _message(client.get(f"{p}/namespaces/ns%1Fnope/views/v"), 404,
                    "NoSuchViewException") == "View does not exist: ns.nope.v"
    # listing is about the namespace itself
    _error(client.get(f"{p}/namespaces/nope/views"), 404, "NoSuchNamespaceException")
    assert log_length() == before


def test_invalid_view_definitions_are_illegal_arguments(client, warehouse, view_path, log_length):
    # what Iceberg's ViewMetadata.Builder refuses with IllegalArgumentException carries that type and message
    p = warehouse["prefix"]
    before = log_length()
    twice = view_version()
    twice["representations"] = [{"type": "sql", "sql": "SELECT 1", "dialect": "trino"},
                                {"type": "sql", "sql": "SELECT 2", "dialect": "Trino"}]
    r = client.post(f"{p}/namespaces/ns/views", json={"name": "x", "schema": VIEW_SCHEMA, "view-version": twice})
    assert _message(r, 400, "IllegalArgumentException") == \
        "Invalid view version: Cannot add multiple queries for dialect trino"
    cases = [
        ({"action": "add-view-version", "view-version": twice},
         "Invalid view version: Cannot add multiple queries for dialect trino"),
        ({"action": "set-current-view-version", "view-version-id": 99},
         "Cannot set current version to unknown version: 99"),
        ({"action": "add-view-version", "view-version": view_version(schema_id=42)},
         "Cannot add version with unknown schema: 42"),
        ({"action": "upgrade-format-version", "format-version": 2}, "Unsupported format version: 2"),
        ({"action": "assign-uuid", "uuid": str(uuid.uuid4())}, "Cannot reassign uuid"),
        ({"action": "set-properties", "updates": {"version.history.num-entries": "0"}},
         "version.history.num-entries must be positive but was 0"),
    ]
    for update, message in cases:
        r = client.post(view_path, json={"updates": [update]})
        assert _message(r, 400, "IllegalArgumentException") == message, update
    duplicate_ids = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "a", "type": "long", "required": True},
        {"id": 1, "name": "b", "type": "string", "required": False}]}
    r = client.post(view_path, json={"updates": [{"action": "add-schema", "schema": duplicate_ids}]})
    assert "field id 1" in _message(r, 400, "IllegalArgumentException")
    r = client.post(f"{p}/namespaces/ns/views", json={"name": "dup", "schema": duplicate_ids,
                                                       "view-version": view_version()})
    assert "field id 1" in _message(r, 400, "IllegalArgumentException")
    # a "-1" with nothing added before is a ValidationException in Iceberg: a plain bad request
    r = client.post(view_path, json={"updates": [{"action": "set-current-view-version", "view-version-id": -1}]})
    assert _message(r, 400, "BadRequestException") == "Cannot set last version id: no current version id has been set"
    assert log_length() == before


def test_name_clashes_are_worded_as_icebergs_catalogs_word_them(client, warehouse, log_length):
    # the Java client and Iceberg's compatibility kit read these messages
    p = warehouse["prefix"]
    _create(client, p, name="v")
    _create(client, p, name="w")
    assert client.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    before = log_length()

    def create(name):
        return client.post(f"{p}/namespaces/ns/views",
                           json={"name": name, "schema": VIEW_SCHEMA, "view-version": view_version()})

    def rename(source, destination, source_ns="ns", destination_ns="ns"):
        return client.post(f"{p}/views/rename", json={"source": {"namespace": [source_ns], "name": source},
                                                       "destination": {"namespace": [destination_ns],
                                                                       "name": destination}})

    assert _message(create("v"), 409, "AlreadyExistsException") == "View already exists: ns.v"
    assert _message(create("t"), 409, "AlreadyExistsException") == "Table with same name already exists: ns.t"
    assert _message(rename("v", "w"), 409, "AlreadyExistsException") == \
        "Cannot rename ns.v to ns.w. View already exists"
    assert _message(rename("v", "t"), 409, "AlreadyExistsException") == \
        "Cannot rename ns.v to ns.t. Table already exists"
    assert _message(rename("v", "v"), 409, "AlreadyExistsException") == \
        "Cannot rename ns.v to ns.v. View already exists"
    # the destination's namespace is checked first, then the source (a missing namespace: a missing view)
    assert _message(rename("v", "x", destination_ns="gone"), 404, "NoSuchNamespaceException") == \
        "Namespace does not exist: gone"
    assert _message(rename("v", "x", source_ns="gone"), 404, "NoSuchViewException") == \
        "View does not exist: gone.v"
    assert log_length() == before


def test_requested_locations_are_kept_as_spelt(client, warehouse, log_length):
    # Java writes file:/path; the client compares the view's location with the one it sent
    p = warehouse["prefix"]
    spelt = f"file:{warehouse['path']}/placed/v"
    created = _create(client, p, name="placed", location=spelt)
    assert created["metadata"]["location"] == spelt
    assert created["metadata-location"].startswith(f"{spelt}/metadata/00000-")
    assert _load(client, f"{p}/namespaces/ns/views/placed") == created
    moved = f"file:{warehouse['path']}/moved/v/"
    r = client.post(f"{p}/namespaces/ns/views/placed", json={"updates": [{"action": "set-location",
                                                                          "location": moved}]})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["location"] == moved
    assert r.json()["metadata-location"].startswith(f"{moved.rstrip('/')}/metadata/00001-")
    assert (warehouse["path"] / "moved" / "v" / "metadata").is_dir()
    # setting it again changes nothing (no new file, no event) ...
    before = log_length()
    same = client.post(f"{p}/namespaces/ns/views/placed", json={"updates": [{"action": "set-location",
                                                                             "location": moved}]})
    assert same.json()["metadata-location"] == r.json()["metadata-location"] and log_length() == before
    # ... and the overlap rules compare places, not spellings
    clash = client.post(f"{p}/namespaces/ns/views", json={
        "name": "other", "schema": VIEW_SCHEMA, "view-version": view_version(),
        "location": f"file://{warehouse['path']}/moved/v/inner"})
    _error(clash, 400, "BadRequestException")
    assert log_length() == before


def bad_cases(p, view):
    views = f"{p}/namespaces/ns/views"
    good_version = json.dumps(view_version()).encode()
    schema = json.dumps(VIEW_SCHEMA).encode()
    return [
        ("POST", views, b"{not json", 400),
        ("POST", views, b'{"name": "x", "view-version": ' + good_version + b"}", 400),
        ("POST", views, b'{"name": "x", "schema": ' + schema + b"}", 400),
        ("POST", views, b'{"name": "", "schema": ' + schema + b', "view-version": ' + good_version + b"}", 400),
        ("POST", views, b'{"name": "a\\u0001", "schema": ' + schema + b', "view-version": ' + good_version + b"}",
         400),
        ("POST", views, b'{"name": "x", "schema": "nope", "view-version": ' + good_version + b"}", 400),
        ("POST", views, b'{"name": "x", "schema": ' + schema + b', "view-version": {"schema-id": 0}}', 400),
        ("POST", views, b'{"name": "x", "schema": ' + schema + b', "view-version": {"schema-id": 0,'
                        b' "default-namespace": [], "representations": [{"type": "jinja", "sql": "s",'
                        b' "dialect": "d"}]}}', 400),
        ("POST", views, b'{"name": "x", "schema": ' + schema + b', "view-version": {"schema-id": 0,'
                        b' "default-namespace": [], "representations": [{"type": "sql", "sql": "s", "dialect": "d"},'
                        b' {"type": "sql", "sql": "t", "dialect": "D"}]}}', 400),
        ("POST", views, b'{"name": "x", "schema": ' + schema + b', "view-version": ' + good_version
         + b', "properties": {"k": null}}', 400),
        ("POST", views, b'{"name": "x", "location": "file:///elsewhere/x", "schema": ' + schema
         + b', "view-version": ' + good_version + b"}", 400),
        ("POST", views, b'{"name": "x", "schema": ' + schema + b', "view-version": ' + good_version
         + b', "properties": {"version.history.num-entries": "0"}}', 400),
        ("POST", f"{p}/namespaces/nope/views", b'{"name": "x", "schema": ' + schema + b', "view-version": '
         + good_version + b"}", 404),
        ("POST", view, b'{"requirements": []}', 400),
        ("POST", view, b'{"updates": "x"}', 400),
        ("POST", view, b'{"updates": [{"action": "explode"}]}', 400),
        ("POST", view, b'{"updates": [{"action": "add-spec", "spec": {"spec-id": 0, "fields": []}}]}', 400),
        ("POST", view, b'{"requirements": [{"type": "assert-table-uuid", "uuid": "' + str(uuid.uuid4()).encode()
         + b'"}], "updates": []}', 400),
        ("POST", view, b'{"requirements": [{"type": "assert-view-uuid", "uuid": "zzz"}], "updates": []}', 400),
        ("POST", view, b'{"updates": [{"action": "set-current-view-version", "view-version-id": 99}]}', 400),
        ("POST", view, b'{"updates": [{"action": "set-current-view-version", "view-version-id": -1}]}', 400),
        ("POST", view, b'{"updates": [{"action": "add-view-version", "view-version": {"schema-id": 42,'
                       b' "default-namespace": [], "representations": []}}]}', 400),
        ("POST", view, b'{"updates": [{"action": "add-view-version", "view-version": {"schema-id": -1,'
                       b' "default-namespace": [], "representations": []}}]}', 400),
        ("POST", view, b'{"updates": [{"action": "upgrade-format-version", "format-version": 2}]}', 400),
        ("POST", view, b'{"updates": [{"action": "assign-uuid", "uuid": "' + str(uuid.uuid4()).encode() + b'"}]}',
         400),
        ("POST", view, b'{"updates": [{"action": "set-location", "location": "file:///elsewhere/v"}]}', 400),
        ("POST", view, b'{"updates": [{"action": "set-location", "location": "relative"}]}', 400),
        ("POST", view, b'{"updates": [{"action": "remove-properties"}]}', 400),
        ("POST", view, b'{"updates": [{"action": "add-view-version", "view-version": {"schema-id": 0,'
                       b' "default-namespace": [], "representations": [{"type": "sql", "sql": "SELECT 2",'
                       b' "dialect": "trino"}]}}, {"action": "set-current-view-version", "view-version-id": -1}]}',
         400),
        ("POST", f"{p}/views/rename", b'{"source": {"namespace": ["ns"], "name": "v"}}', 400),
        ("POST", f"{p}/views/rename", b'{"source": {"namespace": ["ns"], "name": "v"},'
                                      b' "destination": {"namespace": ["ns"], "name": "v"}}', 409),
        ("POST", f"{p}/namespaces/ns/register-view", b'{"name": "r"}', 400),
        ("POST", f"{p}/namespaces/ns/register-view", b'{"name": "r", "metadata-location": "file:///nowhere/x.json"}',
         400),
        ("GET", f"{p}/namespaces/%1F/views", b"", 400),
        ("GET", f"{p}/namespaces/ns/views?pageToken=garbage", b"", 400),
        ("GET", "/catalog/v1/not-a-uuid/namespaces/ns/views/v", b"", 404),
        ("DELETE", f"{p}/namespaces/ns/views/nope", b"", 404),
    ]


def test_bad_input_is_a_4xx_error_model_and_appends_nothing(client, warehouse, view_path, log_length):
    for method, url, body, status in bad_cases(warehouse["prefix"], view_path):
        before = log_length()
        r = client.request(method, url, content=body, headers={"content-type": "application/json"})
        assert r.status_code == status, (method, url, body, r.status_code, r.text)
        error = r.json()["error"]
        assert error["code"] == status and error["type"] and error["message"], r.text
        assert log_length() == before, (method, url, body)
    assert _load(client, view_path)["metadata"]["current-version-id"] == 1


def test_concurrent_replaces_are_all_applied(server, warehouse, view_path, db):
    import httpx

    view_uuid = None
    with httpx.Client(base_url=server.url, timeout=60) as c:
        view_uuid = _load(c, view_path)["metadata"]["view-uuid"]
    results: list = []
    barrier = threading.Barrier(8)

    def replace(n: int) -> None:
        with httpx.Client(base_url=server.url, timeout=120) as c:
            barrier.wait()
            r = c.post(view_path, json={
                "requirements": [{"type": "assert-view-uuid", "uuid": view_uuid}],
                "updates": [{"action": "add-view-version", "view-version": view_version(f"SELECT {n} AS id")},
                            {"action": "set-current-view-version", "view-version-id": -1}]})
            results.append((r.status_code, r.text))

    threads = [threading.Thread(target=replace, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [s for s, _ in results] == [200] * 8, results
    with httpx.Client(base_url=server.url, timeout=60) as c:
        meta = _load(c, view_path)["metadata"]
    ids = [v["version-id"] for v in meta["versions"]]
    assert sorted(ids) == list(range(1, 10))  # distinct, none lost
    sqls = {v["representations"][0]["sql"] for v in meta["versions"]}
    assert {f"SELECT {n} AS id" for n in range(8)} <= sqls
    assert len(meta["version-log"]) == 9
    rows = db.execute("SELECT count(*) FROM lakeledger_events WHERE originator_id = %s AND topic LIKE %s",
                      (uuid.UUID(view_uuid), "%View.Replaced")).fetchone()
    assert rows[0] == 8


def test_every_change_is_an_event_with_actor_request_id_and_change(client, warehouse, db):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["ev"]})
    created = client.post(f"{p}/namespaces/ev/views", headers={"x-request-id": "view-create-1"},
                          json={"name": "v", "schema": VIEW_SCHEMA, "view-version": view_version()})
    assert created.headers["x-request-id"] == "view-create-1"
    view_uuid = created.json()["metadata"]["view-uuid"]
    updates = [{"action": "set-properties", "updates": {"a": "b"}}]
    requirements = [{"type": "assert-view-uuid", "uuid": view_uuid}]
    replaced = client.post(f"{p}/namespaces/ev/views/v", headers={"x-request-id": "view-replace-1"},
                           json={"requirements": requirements, "updates": updates})
    client.post(f"{p}/views/rename", headers={"x-request-id": "view-rename-1"},
                json={"source": {"namespace": ["ev"], "name": "v"}, "destination": {"namespace": ["ev"], "name": "w"}})
    client.delete(f"{p}/namespaces/ev/views/w", headers={"x-request-id": "view-drop-1"})
    rows = db.execute("SELECT topic, state FROM lakeledger_events WHERE originator_id = %s ORDER BY originator_version",
                      (uuid.UUID(view_uuid),)).fetchall()
    assert [t.rsplit(":", 1)[-1] for t, _ in rows] == ["View.Created", "View.Replaced", "Tabular.Renamed",
                                                       "Tabular.Dropped"]
    events = [json.loads(bytes(state)) for _, state in rows]
    assert [(e["actor"], e["request_id"]) for e in events] == [
        ("anonymous", "view-create-1"), ("anonymous", "view-replace-1"), ("anonymous", "view-rename-1"),
        ("anonymous", "view-drop-1")]
    assert events[0]["request"]["name"] == "v" and events[0]["metadata_location"] == created.json()["metadata-location"]
    assert events[1]["requirements"] == requirements and events[1]["updates"] == updates
    assert events[1]["previous_metadata_location"] == created.json()["metadata-location"]
    assert events[1]["metadata_location"] == replaced.json()["metadata-location"]
    assert events[3]["typ"] == "view" and events[3]["purge_requested"] is False
    assert all("timestamp" in e for e in events)


def test_replaying_the_log_gives_identical_view_rows(client, warehouse, db, pg_url, data_dir):
    import subprocess
    import sys

    p = warehouse["prefix"]
    _create(client, p, name="a")
    _create(client, p, name="b")
    _create(client, p, name="c")
    client.post(f"{p}/namespaces/ns/views/a", json={"updates": [
        {"action": "set-location", "location": f"{warehouse['location']}/elsewhere/a"}]})
    client.post(f"{p}/views/rename", json={"source": {"namespace": ["ns"], "name": "b"},
                                           "destination": {"namespace": ["ns"], "name": "b2"}})
    client.delete(f"{p}/namespaces/ns/views/c")
    query = "SELECT * FROM ll_tabulars WHERE warehouse_id = %s ORDER BY id"
    before = db.execute(query, (uuid.UUID(warehouse["id"]),)).fetchall()
    assert len(before) == 3
    assert any(str(r).find("/elsewhere/a") >= 0 for r in before)  # the set-location reached the read model
    env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    out = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert db.execute(query, (uuid.UUID(warehouse["id"]),)).fetchall() == before
