"""A warehouse's format-version policy (Lakekeeper 0.13): POST /management/v1/warehouse/{id}/format-version-policy and
the policy given at creation; creates and upgrades held to it, with Lakekeeper's error types; existing tables keep
their writes; every change an event."""

import uuid

from lakekeeper_spec import check
from support import SCHEMA


def _policy(client, warehouse: dict, allowed, default=None, **headers):
    return client.post(f"/management/v1/warehouse/{warehouse['id']}/format-version-policy", headers=headers,
                       json={"allowed-format-versions": allowed, "default-format-version": default})


def _create(client, warehouse: dict, name: str, **properties):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["f"]})
    return client.post(f"{warehouse['prefix']}/namespaces/f/tables",
                       json={"name": name, "schema": SCHEMA, "properties": properties})


def _error_type(r) -> str:
    assert r.status_code == 400, r.text
    body = check(r) if r.request.url.path.startswith("/management/") else r.json()
    return body["error"]["type"]


def test_creates_take_the_policys_default_and_refuse_what_it_does_not_allow(client, warehouse, log_length):
    request_id = str(uuid.uuid4())
    r = _policy(client, warehouse, [3, 2, 2], 3, **{"x-request-id": request_id})
    assert r.status_code == 200, r.text
    body = check(r)
    assert (body["allowed-format-versions"], body["default-format-version"]) == ([2, 3], 3)
    events = client.get(f"/management/v1/warehouse/{warehouse['id']}/history",
                        params={"type": "warehouse.format-version-policy-set"}).json()["events"]
    assert [(e["request-id"], e["change"]["allowed_format_versions"]) for e in events] == [(request_id, [2, 3])]

    r = _create(client, warehouse, "defaulted")
    assert r.status_code == 200 and r.json()["metadata"]["format-version"] == 3, r.text
    r = _create(client, warehouse, "named", **{"format-version": "2"})
    assert r.status_code == 200 and r.json()["metadata"]["format-version"] == 2, r.text
    before = log_length()
    r = _create(client, warehouse, "old", **{"format-version": "1"})
    assert _error_type(r) == "FormatVersionNotAllowed" and "Allowed versions: [2, 3]" in r.json()["error"]["message"]
    assert log_length() == before

    # without a default, v2 where allowed, else the highest allowed
    assert _policy(client, warehouse, [1, 3]).status_code == 200
    assert _create(client, warehouse, "highest").json()["metadata"]["format-version"] == 3


def test_upgrades_are_held_to_the_policy_and_existing_tables_keep_writing(client, warehouse, log_length):
    assert _create(client, warehouse, "t", **{"format-version": "1"}).status_code == 200
    table = f"{warehouse['prefix']}/namespaces/f/tables/t"
    assert _policy(client, warehouse, [2]).status_code == 200
    # the v1 table still takes writes
    r = client.post(table, json={"updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert r.status_code == 200, r.text
    before = log_length()
    r = client.post(table, json={"updates": [{"action": "upgrade-format-version", "format-version": 3}]})
    assert _error_type(r) == "FormatVersionNotAllowed"
    assert log_length() == before
    r = client.post(table, json={"updates": [{"action": "upgrade-format-version", "format-version": 2}]})
    assert r.status_code == 200 and r.json()["metadata"]["format-version"] == 2, r.text


def test_a_policy_given_at_creation_and_bad_policies(client, tmp_path, log_length):
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"fv-{uuid.uuid4().hex[:8]}", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/w"},
        "allowed-format-versions": [1, 2]})
    assert r.status_code == 201, r.text
    warehouse = check(r)
    assert (warehouse["allowed-format-versions"], warehouse["default-format-version"]) == ([1, 2], None)
    before = log_length()
    assert _error_type(_policy(client, warehouse, [])) == "EmptyAllowedFormatVersions"
    assert _error_type(_policy(client, warehouse, [1, 2], 3)) == "DefaultFormatVersionNotAllowed"
    assert _policy(client, warehouse, [4]).status_code == 400
    assert _policy(client, warehouse, "2").status_code == 400
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": "never", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/n"},
        "allowed-format-versions": [2], "default-format-version": 1})
    assert _error_type(r) == "DefaultFormatVersionNotAllowed"
    report = check(client.post("/management/v1/warehouse-creation-validation", json={
        "warehouse-name": "never", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/n"},
        "allowed-format-versions": [2], "default-format-version": 1}))
    [policy] = [c for c in report["checks"] if c["name"] == "format-version-policy-consistent"]
    assert policy["status"] == "failed" and policy["error"]["type"] == "DefaultFormatVersionNotAllowed"
    assert log_length() == before
    r = client.post(f"/management/v1/warehouse/{uuid.uuid4()}/format-version-policy",
                    json={"allowed-format-versions": [2]})
    assert r.status_code == 404, r.text
