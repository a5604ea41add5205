"""Maintenance policies against a real server and Postgres (and OpenFGA for who may set them): set on a warehouse,
namespaces (nested) and a table, inherited and overridden setting by setting, each effective setting naming where
it comes from; removal; a rename, a namespace move and a soft drop and undrop keeping a table's own; bad input
refused 400 with nothing appended; the history and the Events API showing every change; a rebuild giving the same
rows."""

import os
import subprocess
import sys
import threading
import uuid

import pytest
from support import SCHEMA, event_count, openfga_api, signed_in

from lakeledger.domain.maintenance_policy import effective
from lakeledger.projections.maintenance_policies import MaintenancePoliciesProjection
from lakeledger.projections.maintenance_policies_queries import levels

M = "/management/v1"
EXPIRY, ORPHANS, COMPACTION = "system.snapshot-expiry", "system.orphan-file-removal", "system.data-compaction"


def _ok(response, status: int = 200):
    assert response.status_code == status, (response.request.method, response.request.url, response.text)
    return response.json() if response.content else None


def _tree(client, warehouse) -> dict:
    """Namespaces a and a.b, a table a.b.t, and a namespace c: their ids and management paths."""
    p = warehouse["prefix"]
    ids = {}
    for path in (["a"], ["a", "b"], ["c"]):
        ids[".".join(path)] = _ok(client.post(f"{p}/namespaces", json={"namespace": path}))["namespace-uuid"]
    t = _ok(client.post(f"{p}/namespaces/a%1Fb/tables", json={"name": "t", "schema": SCHEMA}))
    ids["t"] = t["metadata"]["table-uuid"]
    w = f"{M}/warehouse/{warehouse['id']}"
    return {"ids": ids, "warehouse": w, "a": f"{w}/namespace/{ids['a']}", "a.b": f"{w}/namespace/{ids['a.b']}",
            "c": f"{w}/namespace/{ids['c']}", "t": f"{w}/table/{ids['t']}"}


def _effective(client, path: str, policy_type: str = EXPIRY) -> dict:
    body = _ok(client.get(f"{path}/effective-maintenance-policies"))
    [policy] = [p for p in body["policies"] if p["policy-type"] == policy_type]
    return {name: (s["value"], s["source"]["type"], s["source"].get("id")) for name, s in policy["settings"].items()}


def test_settings_are_inherited_overridden_and_say_where_they_come_from(client, warehouse, log_length, db):
    tree = _tree(client, warehouse)
    ids, wid = tree["ids"], warehouse["id"]
    put = {
        "warehouse": {"enabled": True, "max-snapshot-age": "P7D"},
        "a": {"min-snapshots-to-keep": 5, "trigger-snapshots": 50},
        "a.b": {"max-snapshot-age": "PT36H"},
        "t": {"min-snapshots-to-keep": 10},
    }
    for where, settings in put.items():
        recorded = _ok(client.put(f"{tree[where]}/maintenance-policies/{EXPIRY}", json=settings,
                                  headers={"x-request-id": f"set-{where}"}))
        assert recorded["policy-type"] == EXPIRY and recorded["request-id"] == f"set-{where}"
        assert recorded["set-by"] == "anonymous"
    assert _ok(client.get(f"{tree['a.b']}/maintenance-policies"))["policies"][0]["settings"] == {
        "max-snapshot-age": "P1DT12H"}  # recorded in its canonical spelling

    assert _effective(client, tree["t"]) == {
        "enabled": (True, "warehouse", wid), "schedule-interval": ("PT6H", "default", None),
        "max-snapshot-age": ("P1DT12H", "namespace", ids["a.b"]), "min-snapshots-to-keep": (10, "table", ids["t"]),
        "trigger-snapshots": (50, "namespace", ids["a"])}
    assert _effective(client, tree["a"]) == {
        "enabled": (True, "warehouse", wid), "schedule-interval": ("PT6H", "default", None),
        "max-snapshot-age": ("P7D", "warehouse", wid), "min-snapshots-to-keep": (5, "namespace", ids["a"]),
        "trigger-snapshots": (50, "namespace", ids["a"])}
    assert _effective(client, tree["c"])["min-snapshots-to-keep"] == (1, "default", None)
    body = _ok(client.get(f"{tree['t']}/effective-maintenance-policies"))
    assert body["target"] == {"type": "table", "id": ids["t"], "warehouse-id": wid}
    assert [p["policy-type"] for p in body["policies"]] == [COMPACTION, "system.metadata-compaction", EXPIRY,
                                                            ORPHANS]
    sources = {s["source"]["type"]: s["source"] for p in body["policies"] for s in p["settings"].values()}
    assert sources["namespace"]["name"] in (["a"], ["a", "b"]) and sources["table"]["name"] == ["a", "b", "t"]
    assert sources["warehouse"]["name"] == [warehouse["name"]] and sources["default"] == {"type": "default"}
    # what a runner reads on a connection of its own is what the API answers
    merged = effective(levels(db.cursor(), "table", uuid.UUID(ids["t"]), uuid.UUID(wid)))
    assert {p: {k: [v.value, v.source.json()] for k, v in settings.items()} for p, settings in merged.items()} == {
        p["policy-type"]: {k: [v["value"], v["source"]] for k, v in p["settings"].items()} for p in body["policies"]}
    assert levels(db.cursor(), "table", uuid.UUID(ids["t"]), uuid.uuid4()) == []  # not in that warehouse
    compaction = _effective(client, tree["t"], COMPACTION)
    assert compaction["enabled"] == (False, "default", None)
    assert compaction["target-file-size-bytes"] == (512 * 2**20, "default", None)

    # the same settings again record nothing; removal gives the inherited value back; removing again is a no-op
    before = log_length()
    _ok(client.put(f"{tree['t']}/maintenance-policies/{EXPIRY}", json={"min-snapshots-to-keep": 10}))
    assert log_length() == before
    assert client.delete(f"{tree['t']}/maintenance-policies/{EXPIRY}").status_code == 204
    assert log_length() == before + 1
    assert _effective(client, tree["t"])["min-snapshots-to-keep"] == (5, "namespace", ids["a"])
    assert _ok(client.get(f"{tree['t']}/maintenance-policies"))["policies"] == []
    assert client.delete(f"{tree['t']}/maintenance-policies/{EXPIRY}").status_code == 204
    assert log_length() == before + 1
    # a set replaces what the object sets of the type whole
    _ok(client.put(f"{tree['warehouse']}/maintenance-policies/{EXPIRY}", json={"max-snapshot-age": "P3D"}))
    assert _effective(client, tree["t"])["enabled"] == (False, "default", None)
    # the orphan age may be set down to its floor, a day, and not below
    _ok(client.put(f"{tree['a']}/maintenance-policies/{ORPHANS}", json={"enabled": True, "min-orphan-age": "PT24H"}))
    assert _effective(client, tree["t"], ORPHANS)["min-orphan-age"] == ("P1D", "namespace", ids["a"])


def test_a_renamed_moved_dropped_and_undropped_table_keeps_its_own_and_inherits_where_it_is(client, warehouse):
    tree = _tree(client, warehouse)
    ids, p = tree["ids"], warehouse["prefix"]
    _ok(client.put(f"{tree['t']}/maintenance-policies/{COMPACTION}", json={"min-input-files": 8}))
    _ok(client.put(f"{tree['a']}/maintenance-policies/{COMPACTION}", json={"enabled": True}))
    _ok(client.put(f"{tree['c']}/maintenance-policies/{COMPACTION}", json={"target-file-size-bytes": 2**27}))
    r = client.post(f"{p}/tables/rename", json={"source": {"namespace": ["a", "b"], "name": "t"},
                                                 "destination": {"namespace": ["c"], "name": "u"}})
    assert r.status_code == 204, r.text
    moved = _effective(client, tree["t"], COMPACTION)
    assert moved["min-input-files"] == (8, "table", ids["t"])  # its own, by its id
    assert moved["enabled"] == (False, "default", None)  # no longer under a
    assert moved["target-file-size-bytes"] == (2**27, "namespace", ids["c"])
    # a namespace moved under a brings its table under a's policy
    r = client.post(f"{tree['warehouse']}/namespace/{ids['c']}/move", json={"destination": ["a", "c"]})
    assert r.status_code == 200, r.text
    assert _effective(client, tree["t"], COMPACTION)["enabled"] == (True, "namespace", ids["a"])

    soft = client.post(f"{tree['warehouse']}/delete-profile",
                       json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    assert soft.status_code == 200, soft.text
    assert client.delete(f"{p}/namespaces/a%1Fc/tables/u").status_code == 204
    assert client.get(f"{tree['t']}/effective-maintenance-policies").status_code == 404
    gone = client.put(f"{tree['t']}/maintenance-policies/{COMPACTION}", json={"min-input-files": 9})
    assert (gone.status_code, gone.json()["error"]["type"]) == (404, "NoSuchTableException")
    r = client.post(f"{tree['warehouse']}/deleted-tabulars/undrop",
                    json={"targets": [{"type": "table", "id": ids["t"]}]})
    assert r.status_code in (200, 204), r.text
    assert _effective(client, tree["t"], COMPACTION)["min-input-files"] == (8, "table", ids["t"])


def test_changes_of_one_object_at_once_are_all_kept(client, warehouse):
    """Four types set on one table at once append to one aggregate: each retries on the version another took."""
    t = _tree(client, warehouse)["t"]
    bodies = {EXPIRY: {"min-snapshots-to-keep": 4}, ORPHANS: {"enabled": True}, COMPACTION: {"min-input-files": 7},
              "system.metadata-compaction": {"trigger-manifests": 9}}
    statuses: list[int] = []

    def put(policy_type: str) -> None:
        statuses.append(client.put(f"{t}/maintenance-policies/{policy_type}", json=bodies[policy_type]).status_code)

    threads = [threading.Thread(target=put, args=(p,)) for p in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 4
    own = _ok(client.get(f"{t}/maintenance-policies"))["policies"]
    assert {p["policy-type"]: p["settings"] for p in own} == bodies


def test_bad_input_is_400_and_appends_nothing(client, warehouse, log_length):
    tree = _tree(client, warehouse)
    t, w = tree["t"], tree["warehouse"]
    before = log_length()
    refusals = [
        (client.put(f"{t}/maintenance-policies/system.defragment", json={"enabled": True}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"enabled": "yes"}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"enabled": 1}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"min-snapshots-to-keep": "5"}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"min-snapshots-to-keep": 0}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"max-snapshot-age": 86400}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"max-snapshot-age": "PT10M"}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"max-snapshot-age": "a week"}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"min-snapshots": 3}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={"target-file-size-bytes": 2**27}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json={}), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", json=[1]), 400),
        (client.put(f"{t}/maintenance-policies/{EXPIRY}", content=b"{", headers={"content-type": "application/json"}),
         400),
        (client.put(f"{t}/maintenance-policies/{ORPHANS}", json={"min-orphan-age": "PT23H59M"}), 400),
        (client.put(f"{t}/maintenance-policies/{COMPACTION}", json={"target-file-size-bytes": 1024}), 400),
        (client.put(f"{t}/maintenance-policies/{COMPACTION}", json={"min-input-files": 1}), 400),
        (client.put(f"{t}/maintenance-policies/{COMPACTION}", json={"schedule-interval": "PT1M"}), 400),
        (client.delete(f"{t}/maintenance-policies/system.defragment"), 400),
        (client.put(f"{w}/table/{uuid.uuid4()}/maintenance-policies/{EXPIRY}", json={"enabled": True}), 404),
        (client.put(f"{w}/namespace/{uuid.uuid4()}/maintenance-policies/{EXPIRY}", json={"enabled": True}), 404),
        (client.put(f"{M}/warehouse/{uuid.uuid4()}/maintenance-policies/{EXPIRY}", json={"enabled": True}), 404),
        (client.get(f"{M}/warehouse/{uuid.uuid4()}/effective-maintenance-policies"), 404),
        (client.get(f"{w}/namespace/{tree['ids']['t']}/effective-maintenance-policies"), 404),
    ]
    for response, status in refusals:
        assert response.status_code == status, (response.request.url, response.text)
        error = response.json()["error"]
        assert error["code"] == status and error["message"] and error["type"]
    floor = client.put(f"{t}/maintenance-policies/{ORPHANS}", json={"min-orphan-age": "PT1H"}).json()["error"]
    assert floor["type"] == "InvalidMaintenancePolicy" and "min-orphan-age" in floor["message"]
    assert log_length() == before


def test_changes_are_in_the_history_and_the_events_api(client, warehouse):
    tree = _tree(client, warehouse)
    table = tree["ids"]["t"]
    request_id = f"policy-{uuid.uuid4().hex[:8]}"
    _ok(client.put(f"{tree['t']}/maintenance-policies/{EXPIRY}", headers={"x-request-id": request_id},
                   json={"enabled": True, "max-snapshot-age": "P2D"}))
    assert client.delete(f"{tree['t']}/maintenance-policies/{EXPIRY}").status_code == 204
    history = _ok(client.get(f"{tree['warehouse']}/history", params={"pageSize": 100}))["events"]
    policy = [e for e in history if e["type"].startswith("maintenance-policy.")]
    assert [(e["type"], e["summary"]) for e in policy] == [
        ("maintenance-policy.set", f"set {EXPIRY} on table {table}: enabled=true, max-snapshot-age=P2D"),
        ("maintenance-policy.removed", f"removed {EXPIRY} from table {table}")]
    assert policy[0]["request-id"] == request_id and policy[0]["actor"] == "anonymous"
    events = _ok(client.post(f"{warehouse['prefix']}/events", json={"operation-types": [
        "x-lakeledger.maintenance-policy.set", "x-lakeledger.maintenance-policy.removed"]}))["events"]
    operations = [e["operation"] for e in events]
    assert [o["operation-type"] for o in operations] == ["x-lakeledger.maintenance-policy.set",
                                                         "x-lakeledger.maintenance-policy.removed"]
    assert operations[0]["change"]["parameters"] == {"enabled": True, "max-snapshot-age": "P2D"}
    assert operations[0]["change"]["target_id"] == table and operations[0]["change"]["policy_type"] == EXPIRY


def test_a_rebuild_gives_the_same_rows(client, warehouse, db, pg_url, data_dir):
    tree = _tree(client, warehouse)
    _ok(client.put(f"{tree['warehouse']}/maintenance-policies/{ORPHANS}", json={"enabled": True}))
    _ok(client.put(f"{tree['a.b']}/maintenance-policies/{EXPIRY}", json={"min-snapshots-to-keep": 3}))
    _ok(client.put(f"{tree['t']}/maintenance-policies/{EXPIRY}", json={"max-snapshot-age": "P1D"}))
    assert client.delete(f"{tree['a.b']}/maintenance-policies/{EXPIRY}").status_code == 204

    def snapshot() -> list:
        [table] = MaintenancePoliciesProjection.tables
        return db.execute(f"SELECT * FROM {table} ORDER BY target_id, target_type, policy_type").fetchall()

    live = snapshot()
    assert {(r[1], r[2]) for r in live if r[3] == uuid.UUID(warehouse["id"])} == {("warehouse", ORPHANS),
                                                                                  ("table", EXPIRY)}
    env = {"LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert snapshot() == live
    assert _effective(client, tree["t"])["max-snapshot-age"][0] == "P1D"


# ---- who may: a server of this module's with OpenFGA, where spark (the operator) owns everything and bob nothing --

@pytest.fixture(scope="module")
def fga_api(oidc, openfga, pg_url, tmp_path_factory):
    with openfga_api(pg_url, tmp_path_factory, oidc, openfga, "policies") as server:
        yield server


def test_setting_takes_manage_maintenance_and_reading_takes_seeing(fga_api, oidc, tmp_path):
    with signed_in(fga_api, oidc, "spark") as spark:
        assert spark.post(f"{M}/bootstrap", json={"accept-terms-of-use": True, "is-operator": True}).status_code == 204
        project = _ok(spark.post(f"{M}/project", json={"project-name": "policies"}), 201)["project-id"]
        w = _ok(spark.post(f"{M}/warehouse", json={
            "warehouse-name": "wh", "project-id": project,
            "storage-profile": {"type": "file", "location": f"file://{tmp_path}"}}), 201)["warehouse-id"]
        _ok(spark.post(f"/catalog/v1/{w}/namespaces", json={"namespace": ["ns"]}))
        table = _ok(spark.post(f"/catalog/v1/{w}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}))
        path = f"{M}/warehouse/{w}/table/{table['metadata']['table-uuid']}"
        # the operator is the project's admin: it may set a policy anywhere in it
        _ok(spark.put(f"{M}/warehouse/{w}/maintenance-policies/{EXPIRY}", json={"enabled": True}))
    with signed_in(fga_api, oidc, "bob", project) as bob:
        for r in (bob.get(f"{path}/effective-maintenance-policies"), bob.get(f"{path}/maintenance-policies"),
                  bob.put(f"{path}/maintenance-policies/{EXPIRY}", json={"enabled": False})):
            assert r.status_code == 404, r.text  # he cannot see the table: it is not there for him
        with signed_in(fga_api, oidc, "spark", project) as spark:
            modify = {"privilege": "modify", "principal": {"user": "oidc~bob"}}
            assert spark.post(f"{path}/grants", json={"writes": [modify]}).status_code == 204
        before = event_count(fga_api.database)
        assert _effective(bob, path)["enabled"][0] is True  # he sees it now, and reads its policies
        refused = bob.put(f"{path}/maintenance-policies/{EXPIRY}", json={"enabled": False})
        assert refused.status_code == 403, refused.text  # modify writes data; it does not decide what is deleted
        assert bob.delete(f"{M}/warehouse/{w}/maintenance-policies/{EXPIRY}").status_code in (403, 404)
        assert event_count(fga_api.database) == before
        with signed_in(fga_api, oidc, "spark", project) as spark:
            owner = {"privilege": "ownership", "principal": {"user": "oidc~bob"}}
            assert spark.post(f"{path}/grants", json={"writes": [owner]}).status_code == 204
        _ok(bob.put(f"{path}/maintenance-policies/{EXPIRY}", json={"enabled": False}))  # an owner may
        assert _effective(bob, path)["enabled"] == (False, "table", table["metadata"]["table-uuid"])
        [entry] = _ok(bob.get(f"{path}/maintenance-policies"))["policies"]
        assert entry["set-by"] == "oidc~bob"
