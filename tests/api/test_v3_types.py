"""Every type of the Iceberg v3 spec (``variant``, ``geometry`` and ``geography`` with their parameters,
``unknown``, ``timestamp_ns``, ``timestamptz_ns``), sent as raw JSON, comes back exactly as sent: from a create, a
staged create, an ``add-schema`` commit, a register, a view, and from the metadata file as the second API process
reads it back (it has nothing cached). What the spec refuses is a 400 that appends nothing, and a rebuild of the
read models from a log holding all of it comes out as the projections wrote it (lakeledger/domain/v3_types.py)."""

import json
from pathlib import Path

import httpx
import pytest
from support import SCHEMA
from test_rebuild import _caught_up, _rebuild, _snapshot

# top-level ids first, then the nested ones, in the order a create assigns fresh ids: the ids come back as sent
V3_FIELDS = [
    {"id": 1, "name": "id", "type": "long", "required": True},
    {"id": 2, "name": "payload", "type": "variant", "required": False},
    {"id": 3, "name": "at_ns", "type": "timestamp_ns", "required": False},
    {"id": 4, "name": "at_tz_ns", "type": "timestamptz_ns", "required": False},
    {"id": 5, "name": "nothing", "type": "unknown", "required": False},
    {"id": 6, "name": "shape", "type": "geometry", "required": False},
    {"id": 7, "name": "point", "type": "geometry(srid:4326)", "required": False},
    {"id": 8, "name": "area", "type": "geography", "required": False},
    {"id": 9, "name": "route", "type": "geography(srid:4269, karney)", "required": False},
    {"id": 10, "name": "path", "type": "geography(OGC:CRS84,vincenty)", "required": False, "doc": "no space"},
    {"id": 11, "name": "quoted", "type": "geometry('EPSG:3857')", "required": False},
    {"id": 12, "name": "events", "required": False, "type": {
        "type": "list", "element-id": 15, "element": "variant", "element-required": False}},
    {"id": 13, "name": "places", "required": False, "type": {
        "type": "map", "key-id": 16, "key": "string", "value-id": 17, "value": "geography(srid:4326, spherical)",
        "value-required": False}},
    {"id": 14, "name": "nested", "required": False, "type": {"type": "struct", "fields": [
        {"id": 18, "name": "inner", "type": "variant", "required": False},
        {"id": 19, "name": "where", "type": "geometry(srid:3857)", "required": False}]}},
]
V3_SCHEMA = {"type": "struct", "schema-id": 0, "fields": V3_FIELDS}
V3 = {"format-version": "3"}


@pytest.fixture
def other(second_server):
    """A client of the second API process, which reads every metadata file back from storage."""
    with httpx.Client(base_url=second_server.url, timeout=60) as c:
        yield c


def _load(client, path):
    r = client.get(path)
    assert r.status_code == 200, r.text
    return r.json()


def _loaded(client, other, path):
    """The loaded metadata: the same from both processes, and the same as the metadata file holds."""
    body = _load(client, path)
    assert _load(other, path) == body
    assert json.loads(Path(body["metadata-location"].removeprefix("file://")).read_text()) == body["metadata"]
    return body["metadata"]


def _commit(client, path, *updates, requirements=()):
    r = client.post(path, json={"requirements": list(requirements), "updates": list(updates)})
    assert r.status_code == 200, r.text
    return r.json()["metadata"]


def _create(client, warehouse, name, schema=V3_SCHEMA, namespace="v3", **extra):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": [namespace]})
    r = client.post(f"{p}/namespaces/{namespace}/tables", json={"name": name, "schema": schema, **extra})
    assert r.status_code == 200, r.text
    return f"{p}/namespaces/{namespace}/tables/{name}", r.json()


def _refused(client, log_length, method, path, body):
    before = log_length()
    r = client.request(method, path, json=body)
    assert r.status_code == 400, r.text
    # refused by the catalog's rules, or already by the request's model (pyiceberg's schema checks)
    assert r.json()["error"]["type"] in ("IllegalArgumentException", "BadRequestException"), r.text
    assert log_length() == before
    return r.json()["error"]["message"]


def test_create_answers_and_stores_every_v3_type_as_sent(client, other, warehouse):
    path, created = _create(client, warehouse, "every", properties=V3)
    assert created["metadata"]["schemas"][0]["fields"] == V3_FIELDS
    meta = _loaded(client, other, path)
    assert meta["format-version"] == 3 and meta["next-row-id"] == 0
    assert meta["schemas"] == [{**V3_SCHEMA, "identifier-field-ids": []}]
    assert meta["last-column-id"] == 19

    # a staged create committed with assert-create goes through pyiceberg's whole-metadata validation
    p = warehouse["prefix"]
    staged = client.post(f"{p}/namespaces/v3/tables", json={"name": "staged", "schema": V3_SCHEMA,
                                                            "stage-create": True, "properties": V3})
    assert staged.status_code == 200, staged.text
    schema = staged.json()["metadata"]["schemas"][0]
    assert schema["fields"] == V3_FIELDS
    done = _commit(client, f"{p}/namespaces/v3/tables/staged",
                   {"action": "assign-uuid", "uuid": staged.json()["metadata"]["table-uuid"]},
                   {"action": "upgrade-format-version", "format-version": 3},
                   {"action": "add-schema", "schema": schema}, {"action": "set-current-schema", "schema-id": -1},
                   {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                   {"action": "set-default-spec", "spec-id": -1},
                   {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                   {"action": "set-default-sort-order", "sort-order-id": -1},
                   requirements=[{"type": "assert-create"}])
    assert done["schemas"][0]["fields"] == V3_FIELDS
    assert _loaded(client, other, f"{p}/namespaces/v3/tables/staged") == done


def test_commits_add_columns_of_every_v3_type_with_row_lineage(client, other, warehouse):
    path, _ = _create(client, warehouse, "grows", schema=SCHEMA, properties=V3)
    added = [{**f, "id": f["id"] + 100} for f in V3_FIELDS[1:11]]
    wider = {"type": "struct", "schema-id": 1, "fields": [*SCHEMA["fields"], *added]}
    _commit(other, path, {"action": "add-schema", "schema": wider}, {"action": "set-current-schema", "schema-id": -1},
            requirements=[{"type": "assert-current-schema-id", "current-schema-id": 0}])
    # then a snapshot with row lineage, built by the other process from the file it reads back
    snapshot = {"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1_700_000_000_000, "schema-id": 1,
                "manifest-list": "file:///nowhere/snap-1.avro", "summary": {"operation": "append"},
                "first-row-id": 0, "added-rows": 12}
    _commit(client, path, {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1})
    meta = _loaded(client, other, path)
    assert meta["current-schema-id"] == 1 and meta["schemas"][1]["fields"] == wider["fields"]
    assert meta["next-row-id"] == 12 and meta["snapshots"][0]["first-row-id"] == 0
    assert meta["snapshots"][0]["added-rows"] == 12

    # the same schema sent again is the one it has: nothing new
    again = _commit(client, path, {"action": "add-schema", "schema": {**wider, "schema-id": 7}})
    assert [s["schema-id"] for s in again["schemas"]] == [0, 1]
    # a column of every nested shape, added by a later commit of the other process
    nested = {"type": "struct", "schema-id": 2, "fields": [*wider["fields"],
                                                          *[{**f, "id": f["id"] + 200} for f in V3_FIELDS[11:]]]}
    nested["fields"][-3]["type"] = {**nested["fields"][-3]["type"], "element-id": 215}
    nested["fields"][-2]["type"] = {**nested["fields"][-2]["type"], "key-id": 216, "value-id": 217}
    nested["fields"][-1]["type"] = {"type": "struct", "fields": [
        {**f, "id": f["id"] + 200} for f in V3_FIELDS[13]["type"]["fields"]]}
    _commit(other, path, {"action": "add-schema", "schema": nested}, {"action": "set-current-schema", "schema-id": -1})
    assert _loaded(client, other, path)["schemas"][2]["fields"] == nested["fields"]


def test_register_brings_back_a_v3_table_as_it_was(client, other, warehouse):
    path, _ = _create(client, warehouse, "orig", properties=V3)
    original = _load(client, path)
    assert client.delete(path, params={"purgeRequested": "false"}).status_code == 204
    r = other.post(f"{warehouse['prefix']}/namespaces/v3/register",
                   json={"name": "back", "metadata-location": original["metadata-location"]})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"] == original["metadata"]
    assert _loaded(client, other, f"{warehouse['prefix']}/namespaces/v3/tables/back") == original["metadata"]


def test_views_keep_every_v3_type(client, other, warehouse):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["vs"]})
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {"engine-name": "t"},
               "default-namespace": ["vs"], "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}
    r = client.post(f"{p}/namespaces/vs/views", json={"name": "v", "schema": V3_SCHEMA, "view-version": version})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["schemas"][0]["fields"] == V3_FIELDS
    path = f"{p}/namespaces/vs/views/v"
    wider = {"type": "struct", "schema-id": 1, "fields": [*V3_FIELDS, {"id": 20, "name": "more", "type": "variant",
                                                                       "required": False}]}
    r = other.post(path, json={"requirements": [], "updates": [
        {"action": "add-schema", "schema": wider},
        {"action": "add-view-version", "view-version": {**version, "version-id": 2, "schema-id": -1}},
        {"action": "set-current-view-version", "view-version-id": -1}]})
    assert r.status_code == 200, r.text
    loaded = _load(client, path)
    assert _load(other, path) == loaded
    assert [s["fields"] for s in loaded["metadata"]["schemas"]] == [V3_FIELDS, wider["fields"]]


@pytest.mark.parametrize(("what", "schema", "extra"), [
    ("a v3 type in a v2 table", V3_SCHEMA, {"properties": {"format-version": "2"}}),
    ("an unknown edge algorithm", {**SCHEMA, "fields": [
        {"id": 1, "name": "g", "type": "geography(srid:4326, flat)", "required": False}]}, {}),
    ("an empty CRS", {**SCHEMA, "fields": [{"id": 1, "name": "g", "type": "geometry()", "required": False}]}, {}),
    ("a variant identifier field", {**SCHEMA, "identifier-field-ids": [1], "fields": [
        {"id": 1, "name": "v", "type": "variant", "required": True}]}, {}),
    ("a variant partition source", SCHEMA | {"fields": [{"id": 1, "name": "v", "type": "variant", "required": False}]},
     {"partition-spec": {"spec-id": 0, "fields": [
         {"source-id": 1, "field-id": 1000, "name": "v", "transform": "identity"}]}}),
    ("a geometry partition source", SCHEMA | {"fields": [
        {"id": 1, "name": "g", "type": "geometry(srid:4326)", "required": False}]},
     {"partition-spec": {"spec-id": 0, "fields": [
         {"source-id": 1, "field-id": 1000, "name": "g", "transform": "identity"}]}}),
    ("a variant sort source", SCHEMA | {"fields": [{"id": 1, "name": "v", "type": "variant", "required": False}]},
     {"write-order": {"order-id": 1, "fields": [
         {"source-id": 1, "transform": "identity", "direction": "asc", "null-order": "nulls-first"}]}}),
    ("a variant with an initial default", SCHEMA | {"fields": [
        {"id": 1, "name": "v", "type": "variant", "required": False, "initial-default": {"a": 1}}]}, {}),
    ("a geometry with a write default", SCHEMA | {"fields": [
        {"id": 1, "name": "g", "type": "geometry(srid:4326)", "required": False, "write-default": "00"}]}, {}),
], ids=lambda x: x if isinstance(x, str) else "")
def test_what_the_spec_refuses_is_a_bad_request_that_appends_nothing(client, warehouse, log_length, what, schema,
                                                                      extra):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["no"]})
    extra = {"properties": V3, **extra}
    _refused(client, log_length, "POST", f"{p}/namespaces/no/tables", {"name": "t", "schema": schema, **extra})


def test_a_v3_type_added_to_a_v2_table_is_refused(client, warehouse, log_length):
    path, _ = _create(client, warehouse, "two", schema=SCHEMA)
    wider = {"type": "struct", "schema-id": 1, "fields": [*SCHEMA["fields"], {**V3_FIELDS[1], "id": 3}]}
    message = _refused(client, log_length, "POST", path, {"requirements": [], "updates": [
        {"action": "add-schema", "schema": wider}, {"action": "set-current-schema", "schema-id": -1}]})
    assert "variant" in message


def test_a_rebuild_replays_a_log_of_v3_tables(client, warehouse, db, pg_url, data_dir):
    path, _ = _create(client, warehouse, "rebuilt", properties=V3)
    wider = {"type": "struct", "schema-id": 1, "fields": [*V3_FIELDS, {"id": 20, "name": "more", "type": "variant",
                                                                       "required": False}]}
    _commit(client, path, {"action": "add-schema", "schema": wider}, {"action": "set-current-schema", "schema-id": -1})
    _caught_up(db)
    live = _snapshot(db)
    _rebuild(pg_url, data_dir)
    assert _snapshot(db) == live
    assert _load(client, path)["metadata"]["schemas"][1]["fields"] == wider["fields"]


@pytest.mark.parametrize("field", [
    {"id": 3, "name": "g", "type": "geography(srid:4326, flat)", "required": False},
    {"id": 3, "name": "g", "type": "geometry(srid:4326)", "required": False, "initial-default": "00"},
    {"id": 3, "name": "u", "type": "unknown", "required": False, "initial-default": 1},
], ids=["unknown algorithm", "geometry default", "unknown default"])
def test_a_refused_v3_column_in_a_table_or_view_commit_is_a_bad_request(client, warehouse, log_length, field):
    path, _ = _create(client, warehouse, "commits", schema=SCHEMA, properties=V3)
    wider = {"type": "struct", "schema-id": 1, "fields": [*SCHEMA["fields"], field]}
    _refused(client, log_length, "POST", path, {"requirements": [], "updates": [{"action": "add-schema",
                                                                                 "schema": wider}]})
    p = warehouse["prefix"]
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {"engine-name": "t"},
               "default-namespace": ["v3"], "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}
    r = client.post(f"{p}/namespaces/v3/views", json={"name": "view", "schema": SCHEMA, "view-version": version})
    assert r.status_code == 200, r.text
    _refused(client, log_length, "POST", f"{p}/namespaces/v3/views/view", {"requirements": [], "updates": [
        {"action": "add-schema", "schema": wider}]})


def test_nanosecond_timestamps_partition_and_sort_as_the_spec_allows(client, other, warehouse, log_length):
    fields = [{"id": 1, "name": "at", "type": "timestamp_ns", "required": False},
              {"id": 2, "name": "at_tz", "type": "timestamptz_ns", "required": False}]
    spec = {"spec-id": 0, "fields": [{"source-id": 1, "field-id": 1000, "name": "at_day", "transform": "day"},
                                     {"source-id": 2, "field-id": 1001, "name": "at_tz_bucket",
                                      "transform": "bucket[8]"}]}
    order = {"order-id": 1, "fields": [{"source-id": 1, "transform": "hour", "direction": "desc",
                                        "null-order": "nulls-last"}]}
    path, _ = _create(client, warehouse, "nanos", schema={"type": "struct", "schema-id": 0, "fields": fields},
                      properties=V3, **{"partition-spec": spec, "write-order": order})
    meta = _loaded(client, other, path)
    assert meta["schemas"][0]["fields"] == fields
    assert meta["partition-specs"] == [spec] and meta["sort-orders"] == [order]
    # truncate takes no timestamp
    bad = {"spec-id": 0, "fields": [{"source-id": 1, "field-id": 1000, "name": "t", "transform": "truncate[4]"}]}
    _refused(client, log_length, "POST", f"{warehouse['prefix']}/namespaces/v3/tables",
             {"name": "bad", "schema": {"type": "struct", "fields": fields}, "partition-spec": bad, "properties": V3})
