"""A warehouse's managed-by marker (Lakekeeper 0.14): POST /management/v1/warehouse/{id}/managed-by and the field of
POST /warehouse, as events; with authorization off everyone administers the server, so nothing is locked (the
enforcement under OpenFGA: tests/e2e/test_authorization.py)."""

import uuid

from lakekeeper_spec import check


def _managed_by(client, warehouse_id: str, value, **headers):
    return client.post(f"/management/v1/warehouse/{warehouse_id}/managed-by", json={"managed-by": value},
                       headers=headers)


def test_managed_by_is_set_and_cleared_as_events(client, warehouse, log_length):
    request_id = str(uuid.uuid4())
    r = _managed_by(client, warehouse["id"], "instance-admin", **{"x-request-id": request_id})
    assert r.status_code == 200, r.text
    assert check(r)["managed-by"] == "instance-admin"
    assert check(client.get(f"/management/v1/warehouse/{warehouse['id']}"))["managed-by"] == "instance-admin"
    events = client.get(f"/management/v1/warehouse/{warehouse['id']}/history",
                        params={"type": "warehouse.managed-by-set"}).json()["events"]
    assert [(e["request-id"], e["change"]["managed_by"]) for e in events] == [(request_id, "instance-admin")]
    # everyone is the instance's admin here: its settings still change
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/rename", json={"new-name": warehouse["name"] + "-r"})
    assert r.status_code == 200, r.text
    before = log_length()
    assert _managed_by(client, warehouse["id"], "instance-admin").status_code == 200  # no change, no event
    assert _managed_by(client, warehouse["id"], "someone").status_code == 400
    assert log_length() == before
    assert check(_managed_by(client, warehouse["id"], "self-managed"))["managed-by"] == "self-managed"
    r = _managed_by(client, str(uuid.uuid4()), "instance-admin")
    assert r.status_code == 404, r.text


def test_a_warehouse_is_created_managed(client, tmp_path):
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"m-{uuid.uuid4().hex[:8]}", "managed-by": "instance-admin",
        "storage-profile": {"type": "file", "location": f"file://{tmp_path}/m"}})
    assert r.status_code == 201, r.text
    assert check(r)["managed-by"] == "instance-admin"
    report = check(client.post("/management/v1/warehouse-creation-validation", json={
        "warehouse-name": "x", "managed-by": "nobody", "storage-profile": {"type": "file", "location": "file:///tmp/x"}}))
    assert {c["name"]: c["status"] for c in report["checks"]}["managed-by-allowed"] == "failed"
