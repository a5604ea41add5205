"""Governance tags (Lakekeeper 0.14) against a real server and Postgres: definitions, tags on every object kind and
on columns, where a definition is attached, search by tag, the history, a rebuild giving the same rows, bad input
refused with nothing appended, and a race for one name. Every answer is held to Lakekeeper's document."""

import os
import subprocess
import sys
import threading
import uuid

import lakekeeper_spec
from fuzzing import fresh_objects

from lakeledger.projections.tags import TagsProjection

M = "/management/v1"


def _ok(response, status: int = 200):
    assert response.status_code == status, (response.request.method, response.request.url, response.text)
    return lakekeeper_spec.check(response)


def _define(client, project, name, scope, kind="free-text", values=None):
    body = {"name": name, "scope": scope, "value-kind": kind, "description": f"{name}, for tests"}
    if values is not None:
        body["allowed-values"] = values
    return _ok(client.post(f"{M}/tag-definition", headers=project, json=body), 201)


def _objects(client, tmp_path):
    objects = fresh_objects(client, tmp_path)
    return objects, {"x-project-id": objects["project_id"]}


def _paths(o):
    w = f"{M}/warehouse/{o['warehouse_id']}"
    return {"warehouse": w, "namespace": f"{w}/namespace/{o['namespace_id']}", "table": f"{w}/table/{o['table_id']}",
            "view": f"{w}/view/{o['view_id']}", "generic-table": f"{w}/generic-table/{o['generic_table_id']}"}


def test_definition_lifecycle(client, tmp_path):
    _, project = _objects(client, tmp_path)
    created = _define(client, project, "pii.level", ["table"], "enumerated", ["low", "high"])
    assert created["allowed-values"] == ["low", "high"] and created["value-kind"] == "enumerated"
    tag = f"{M}/tag-definition/{created['id']}"
    assert _ok(client.get(tag, headers=project)) == created
    listed = _ok(client.get(f"{M}/tag-definition", headers=project, params={"name": "PII"}))
    assert [d["id"] for d in listed["tag-definitions"]] == [created["id"]]
    assert "allowed-values" not in listed["tag-definitions"][0]
    updated = _ok(client.post(tag, headers=project, json={
        "name": "PII.Level", "scope": ["table", "column"], "add-allowed-values": ["medium", "low"]}))
    assert (updated["name"], updated["scope"], updated["allowed-values"], updated["description"]) == (
        "PII.Level", ["table", "column"], ["low", "high", "medium"], None)
    assert updated["updated-at"] is not None
    actions = _ok(client.get(f"{tag}/actions", headers=project))["allowed-actions"]
    assert {a["action"] for a in actions} == {"read", "update", "delete", "apply", "remove", "read_attachments",
                                              "read_grants"}
    assert client.delete(tag, headers=project).status_code == 204
    r = client.get(tag, headers=project)
    assert r.status_code == 404 and r.json()["error"]["type"] == "TagDefinitionNotFound"
    # the name is free again
    _define(client, project, "pii.level", ["table"])


def test_tags_on_every_object_kind_and_where_a_definition_is_attached(client, tmp_path):
    o, project = _objects(client, tmp_path)
    paths = _paths(o)
    everywhere = _define(client, project, "owner", list(paths))
    marker = _define(client, project, "certified", ["table", "view"], "marker")
    for kind, path in paths.items():
        applied = _ok(client.put(f"{path}/tags/OWNER", headers=project, json={"value": f"team-{kind}"}))
        assert (applied["tag-definition-id"], applied["name"], applied["value"]) == (
            everywhere["id"], "owner", f"team-{kind}")
        [listed] = _ok(client.get(f"{path}/tags", headers=project))["tags"]
        assert (listed["name"], listed["value"], listed["source"]) == ("owner", f"team-{kind}", "manual")
    # the same value again changes nothing; another value is an update
    again = _ok(client.put(f"{paths['table']}/tags/owner", headers=project, json={"value": "team-table"}))
    changed = _ok(client.put(f"{paths['table']}/tags/owner", headers=project, json={"value": "data-eng"}))
    assert again["applied-at"] < changed["applied-at"]
    _ok(client.put(f"{paths['view']}/tags/certified", headers=project, json={}))
    assert [t["name"] for t in _ok(client.get(f"{paths['view']}/tags", headers=project))["tags"]] == [
        "certified", "owner"]

    # effective tags: a table inherits its namespace's and warehouse's, nearest first; its own win
    effective = _ok(client.get(f"{paths['generic-table']}/tags", headers=project, params={"effective": "true"}))
    assert [(t["value"], (t.get("inherited-from") or {}).get("type")) for t in effective["tags"]] == [
        ("team-generic-table", None)]
    _ok(client.delete(f"{paths['generic-table']}/tags/owner", headers=project), 204)
    effective = _ok(client.get(f"{paths['generic-table']}/tags", headers=project, params={"effective": "true"}))
    assert [(t["value"], t["inherited-from"]) for t in effective["tags"]] == [
        ("team-namespace", {"type": "namespace", "warehouse-id": o["warehouse_id"],
                            "namespace-id": o["namespace_id"]})]

    attachments = _ok(client.get(f"{M}/tag-definition/{everywhere['id']}/attachments", headers=project))
    assert sorted(a["target"]["type"] for a in attachments["attachments"]) == [
        "namespace", "table", "view", "warehouse"]
    page = _ok(client.get(f"{M}/tag-definition/{everywhere['id']}/attachments", headers=project,
                          params={"pageSize": 2}))
    rest = _ok(client.get(f"{M}/tag-definition/{everywhere['id']}/attachments", headers=project,
                          params={"pageSize": 2, "pageToken": page["next-page-token"]}))
    assert len(page["attachments"]) + len(rest["attachments"]) == 4 and rest["next-page-token"] is None
    only = _ok(client.get(f"{M}/tag-definition/{everywhere['id']}/attachments", headers=project,
                          params={"targetType": "view", "value": "team-view"}))
    assert [a["target"] for a in only["attachments"]] == [
        {"type": "view", "warehouse-id": o["warehouse_id"], "view-id": o["view_id"]}]

    # in use: not deleted; removed everywhere, it is
    r = client.delete(f"{M}/tag-definition/{everywhere['id']}", headers=project)
    assert r.status_code == 409 and r.json()["error"]["type"] == "TagDefinitionInUse"
    for path in paths.values():
        _ok(client.delete(f"{path}/tags/owner", headers=project), 204)  # the generic table's twice: idempotent
        assert all(t["name"] != "owner" for t in _ok(client.get(f"{path}/tags", headers=project))["tags"])
    assert client.delete(f"{M}/tag-definition/{everywhere['id']}", headers=project).status_code == 204
    assert marker["id"]


def test_column_tags_follow_the_field_id(client, tmp_path):
    o, project = _objects(client, tmp_path)
    table = _paths(o)["table"]
    pii = _define(client, project, "pii", ["column"], "marker")
    _ok(client.put(f"{table}/column/data/tags/pii", headers=project, json={}))
    _ok(client.put(f"{table}/column/id/tags/pii", headers=project, json={}))
    columns = _ok(client.get(f"{table}/column-tags", headers=project))["columns"]
    assert [(c["field-id"], [t["tag-definition-id"] for t in c["tags"]]) for c in columns] == [
        (1, [pii["id"]]), (2, [pii["id"]])]
    # renamed, the column keeps its tag
    p = f"/catalog/v1/{o['warehouse_id']}/namespaces/{o['namespace']}/tables/{o['table']}"
    r = client.post(p, json={"requirements": [], "updates": [
        {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
            {"id": 1, "name": "id", "type": "long", "required": True},
            {"id": 2, "name": "payload", "type": "string", "required": False}]}},
        {"action": "set-current-schema", "schema-id": -1}]})
    assert r.status_code == 200, r.text
    assert [t["name"] for t in _ok(client.get(f"{table}/column/payload/tags", headers=project))["tags"]] == ["pii"]
    r = client.get(f"{table}/column/data/tags", headers=project)
    assert r.status_code == 404 and r.json()["error"]["type"] == "ColumnNotFound"
    # a column tag is not a table tag
    assert _ok(client.get(f"{table}/tags", headers=project))["tags"] == []
    # a renamed table keeps its column tags (they are its id's and the field's)
    r = client.post(f"/catalog/v1/{o['warehouse_id']}/tables/rename", json={
        "source": {"namespace": [o["namespace"]], "name": o["table"]},
        "destination": {"namespace": [o["namespace"]], "name": "renamed"}})
    assert r.status_code == 204, r.text
    assert len(_ok(client.get(f"{table}/column-tags", headers=project))["columns"]) == 2
    _ok(client.delete(f"{table}/column/payload/tags/pii", headers=project), 204)
    assert [c["field-id"] for c in _ok(client.get(f"{table}/column-tags", headers=project))["columns"]] == [1]
    attached = _ok(client.get(f"{M}/tag-definition/{pii['id']}/attachments", headers=project))["attachments"]
    assert [a["target"] for a in attached] == [
        {"type": "column", "warehouse-id": o["warehouse_id"], "table-id": o["table_id"], "field-id": 1}]


def test_bad_input_appends_nothing(client, tmp_path, log_length):
    o, project = _objects(client, tmp_path)
    paths = _paths(o)
    _define(client, project, "Tier", ["table"], "enumerated", ["gold"])
    _define(client, project, "flag", ["warehouse"], "marker")
    before = log_length()
    refusals = [
        (client.post(f"{M}/tag-definition", headers=project, json={"name": "tier", "scope": ["table"],
                                                                  "value-kind": "marker"}), 409,
         "TagNameAlreadyExists"),
        (client.post(f"{M}/tag-definition", headers=project, json={"name": "system.x", "scope": ["table"],
                                                                  "value-kind": "marker"}), 400,
         "ReservedTagNamespace"),
        (client.post(f"{M}/tag-definition", headers=project, json={"name": "a..b", "scope": ["table"],
                                                                  "value-kind": "marker"}), 400, "InvalidTagName"),
        (client.post(f"{M}/tag-definition", headers=project, json={"name": "e", "scope": ["table"],
                                                                  "value-kind": "enumerated"}), 400,
         "InvalidTagDefinition"),
        (client.post(f"{M}/tag-definition", headers=project, json={"name": "m", "scope": [],
                                                                  "value-kind": "marker"}), 400,
         "InvalidTagDefinition"),
        (client.put(f"{paths['table']}/tags/unknown", headers=project, json={"value": "x"}), 404,
         "TagDefinitionNotFound"),
        (client.put(f"{paths['table']}/tags/tier", headers=project, json={"value": "silver"}), 400,
         "InvalidTagValue"),
        (client.put(f"{paths['table']}/tags/tier", headers=project, json={}), 400, "InvalidTagValue"),
        (client.put(f"{paths['view']}/tags/tier", headers=project, json={"value": "gold"}), 400,
         "TagScopeNotAllowed"),
        (client.put(f"{paths['warehouse']}/tags/flag", headers=project, json={"value": "x"}), 400,
         "InvalidTagValue"),
        (client.put(f"{M}/warehouse/{o['warehouse_id']}/table/{uuid.uuid4()}/tags/tier", headers=project,
                    json={"value": "gold"}), 404, "NoSuchTableException"),
        (client.put(f"{M}/warehouse/{uuid.uuid4()}/tags/flag", headers=project, json={}), 404,
         "NoSuchWarehouseException"),
        (client.put(f"{paths['table']}/column/nope/tags/tier", headers=project, json={"value": "gold"}), 404,
         "ColumnNotFound"),
    ]
    for response, status, error_type in refusals:
        assert (response.status_code, response.json()["error"]["type"]) == (status, error_type), response.text
        lakekeeper_spec.check(response)
    [tier] = _ok(client.get(f"{M}/tag-definition", headers=project, params={"name": "tier"}))["tag-definitions"]
    narrowed = client.post(f"{M}/tag-definition/{tier['id']}", headers=project, json={"name": "tier", "scope": []})
    assert narrowed.status_code == 400
    renamed = client.post(f"{M}/tag-definition/{tier['id']}", headers=project, json={"name": "FLAG",
                                                                                    "scope": ["table"]})
    assert (renamed.status_code, renamed.json()["error"]["type"]) == (409, "TagNameAlreadyExists")
    assert log_length() == before


def test_two_creations_of_one_name_at_once_make_one_definition(client, tmp_path):
    _, project = _objects(client, tmp_path)
    statuses: list[int] = []

    def create(spelling: str) -> None:
        statuses.append(client.post(f"{M}/tag-definition", headers=project, json={
            "name": spelling, "scope": ["table"], "value-kind": "marker"}).status_code)

    for _ in range(3):
        name = f"race-{uuid.uuid4().hex[:6]}"
        statuses.clear()
        threads = [threading.Thread(target=create, args=(s,)) for s in (name, name.upper(), name)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(statuses) == [201, 409, 409]
        listed = _ok(client.get(f"{M}/tag-definition", headers=project, params={"name": name}))
        assert len(listed["tag-definitions"]) == 1


def test_a_dropped_table_keeps_its_tags_for_undrop(client, tmp_path):
    o, project = _objects(client, tmp_path)
    table = _paths(o)["table"]
    profile = f"{M}/warehouse/{o['warehouse_id']}/delete-profile"
    soft = client.post(profile, json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    assert soft.status_code == 200, soft.text
    keep = _define(client, project, "keep", ["table"])
    _ok(client.put(f"{table}/tags/keep", headers=project, json={"value": "yes"}))
    p = f"/catalog/v1/{o['warehouse_id']}/namespaces/{o['namespace']}/tables/{o['table']}"
    assert client.delete(p).status_code == 204
    assert client.get(f"{table}/tags", headers=project).status_code == 404
    r = client.delete(f"{M}/tag-definition/{keep['id']}", headers=project)
    assert r.status_code == 409  # the table can come back
    attached = _ok(client.get(f"{M}/tag-definition/{keep['id']}/attachments", headers=project))["attachments"]
    assert [a["target"]["table-id"] for a in attached] == [o["table_id"]]
    r = client.post(f"{M}/warehouse/{o['warehouse_id']}/deleted-tabulars/undrop",
                    json={"targets": [{"type": "table", "id": o["table_id"]}]})
    assert r.status_code in (200, 204), r.text
    assert [t["value"] for t in _ok(client.get(f"{table}/tags", headers=project))["tags"]] == ["yes"]
    # deleted for good, the table no longer holds the definition back
    assert client.post(profile, json={"delete-profile": {"type": "hard"}}).status_code == 200
    assert client.delete(p).status_code == 204
    assert _ok(client.get(f"{M}/tag-definition/{keep['id']}/attachments", headers=project))["attachments"] == []
    assert client.delete(f"{M}/tag-definition/{keep['id']}", headers=project).status_code == 204


def test_search_by_tag_and_history(client, tmp_path):
    o, project = _objects(client, tmp_path)
    paths = _paths(o)
    gold = _define(client, project, "gold", ["table", "view"], "marker")
    _ok(client.put(f"{paths['view']}/tags/gold", headers=project, json={}))
    search = f"{M}/warehouse/{o['warehouse_id']}/search-tabulars"
    found = client.get(search, params={"tag": "GOLD"})
    assert found.status_code == 200, found.text
    assert [t["name"] for t in found.json()["tabulars"]] == [o["view"]]
    assert client.get(search, params={"tag": "gold", "prefix": "zz-none"}).json()["tabulars"] == []
    assert client.get(search, params={"tag": ["gold", "other"]}).json()["tabulars"] == []
    # Lakekeeper's fuzzy search, narrowed to tagged tabulars
    fuzzy = f"{M}/warehouse/{o['warehouse_id']}/search-tabular"
    everything = _ok(client.post(fuzzy, json={"search": o["namespace"]}))["tabulars"]
    assert {t["tabular-name"] for t in everything} >= {o["table"], o["view"]}
    [only] = _ok(client.post(fuzzy, json={"search": o["namespace"], "tags": ["Gold"]}))["tabulars"]
    assert (only["tabular-id"], only["namespace-name"]) == ({"type": "view", "id": o["view_id"]}, [o["namespace"]])
    [by_id] = _ok(client.post(fuzzy, json={"search": o["table_id"]}))["tabulars"]
    assert (by_id["tabular-name"], by_id["distance"]) == (o["table"], None)
    history = client.get(f"{M}/warehouse/{o['warehouse_id']}/history").json()["events"]
    tagged = [e for e in history if e["type"].startswith("tag-definition.")]
    assert [e["summary"] for e in tagged] == [f"tagged view {o['view_id']} with gold"]
    # the definitions are in the server-level history
    server_level = client.get(f"{M}/history", params={"type": "tag-definition.created",
                                                       "since": gold["created-at"]}).json()["events"]
    assert "created tag definition gold, marker, for table, view" in [e["summary"] for e in server_level]


def test_a_rebuild_gives_the_same_tags(client, tmp_path, db, pg_url, data_dir):
    o, project = _objects(client, tmp_path)
    paths = _paths(o)
    _define(client, project, "rebuilt", ["namespace", "column"], "enumerated", ["a", "b"])
    _ok(client.put(f"{paths['namespace']}/tags/rebuilt", headers=project, json={"value": "a"}))
    _ok(client.put(f"{paths['table']}/column/id/tags/rebuilt", headers=project, json={"value": "b"}))

    def snapshot() -> dict:
        return {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2, 3, 4").fetchall() for t in TagsProjection.tables}

    live = snapshot()
    assert live["ll_tags"]
    env = {"LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert snapshot() == live
    assert _ok(client.get(f"{paths['namespace']}/tags", headers=project))["tags"][0]["value"] == "a"
