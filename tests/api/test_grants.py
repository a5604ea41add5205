"""Lakekeeper 0.14's authorization surface (issue 29 point 7): "what may I do here" (``…/actions``,
``…/authorizer-actions``), many checks in one call (``/action/batch-check``), the grants API (``…/grants``), and
the roles' transitive listings, metadata and source system.

Two servers: the session's (allowall: every decision is yes, grants are recorded all the same) and one of this
module's with a real OpenID provider and a real OpenFGA, where `spark` (the operator) owns everything and `bob`
starts with nothing. A grant given through the grants API is the same assignment the permission endpoints write
(one event, one tuple), decides real requests, and shows through both APIs; bad input is a 4xx ErrorModel that
appends nothing."""

import uuid

from support import SCHEMA

BOB = "oidc~bob"


# ---- allowall (the session's server) ----------------------------------------------------------------------------

def _namespace_and_table(client, warehouse) -> tuple[str, str]:
    p = warehouse["prefix"]
    ns = client.post(f"{p}/namespaces", json={"namespace": ["ns"]})
    assert ns.status_code == 200, ns.text
    t = client.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert t.status_code == 200, t.text
    return ns.json()["namespace-uuid"], t.json()["metadata"]["table-uuid"]


def test_actions_under_allowall_are_every_action_lakekeeper_names_that_we_decide(client, warehouse):
    _, table = _namespace_and_table(client, warehouse)
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/table/{table}/actions")
    assert r.status_code == 200, r.text
    actions = [a["action"] for a in r.json()["allowed-actions"]]
    assert actions == ["drop", "write_data", "read_data", "get_metadata", "commit", "rename", "include_in_list",
                       "undrop", "set_protection", "read_grants"]
    server = client.get("/management/v1/server/actions").json()["allowed-actions"]
    assert {"action": "create_project"} in server and {"action": "read_grants"} in server
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/table/{uuid.uuid4()}/actions")
    assert r.status_code == 404 and r.json()["error"]["code"] == 404
    authorizer = client.get(f"/management/v1/permissions/warehouse/{warehouse['id']}/authorizer-actions").json()
    assert authorizer["allowed-actions"][0] == "read_assignments" and "change_ownership" in authorizer[
        "allowed-actions"]


def test_batch_check_answers_in_order_with_ids_and_missing_objects_denied(client, warehouse, log_length):
    ns, table = _namespace_and_table(client, warehouse)
    w = warehouse["id"]
    checks = [
        {"operation": {"table": {"action": "read_data", "warehouse-id": w, "table-id": table}}},
        {"id": "by-name", "operation": {"table": {"action": "commit", "warehouse-id": w, "namespace": ["ns"],
                                                  "table": "t"}}},
        {"operation": {"namespace": {"action": "create_table", "warehouse-id": w, "namespace-id": ns}}},
        {"id": "gone", "operation": {"table": {"action": "drop", "warehouse-id": w, "table-id": str(uuid.uuid4())}}},
        {"operation": {"server": {"action": "create_project"}}},
    ]
    before = log_length()
    r = client.post("/management/v1/action/batch-check", json={"checks": checks})
    assert r.status_code == 200, r.text
    assert r.json()["results"] == [{"id": "0", "allowed": True}, {"id": "by-name", "allowed": True},
                                   {"id": "2", "allowed": True}, {"id": "gone", "allowed": False},
                                   {"id": "4", "allowed": True}]
    r = client.post("/management/v1/action/batch-check", json={"checks": checks, "error-on-not-found": True})
    assert r.status_code == 404, r.text
    for bad in ({"checks": [{"operation": {"table": {"action": "fly", "warehouse-id": w, "table-id": table}}}]},
                {"checks": [{"operation": {"moon": {"action": "drop"}}}]},
                {"checks": [{"operation": {"server": {"action": "create_project"}}, "identity": {}}]},
                {"checks": [], "unknown": 1}):
        r = client.post("/management/v1/action/batch-check", json=bad)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["type"]
    assert log_length() == before
