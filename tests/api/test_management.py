import uuid

import httpx


def test_info_and_bootstrap_once(client):
    first = client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
    assert first.status_code in (204, 400)  # the session may have bootstrapped already
    again = client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
    assert again.status_code == 400
    assert again.json()["error"]["type"] == "CatalogAlreadyBootstrapped"
    info = client.get("/management/v1/info").json()
    assert info["bootstrapped"] is True
    assert info["default-project-id"] == "00000000-0000-0000-0000-000000000000"


def test_bootstrap_requires_accepting_the_terms(client):
    r = client.post("/management/v1/bootstrap", json={"accept-terms-of-use": False})
    assert r.status_code == 400


def test_projects(client):
    r = client.post("/management/v1/project", json={"project-name": "analytics"})
    assert r.status_code == 201
    project_id = r.json()["project-id"]
    got = client.get("/management/v1/project", headers={"x-project-id": project_id}).json()
    assert got == {"project-id": project_id, "project-name": "analytics"}
    assert client.post("/management/v1/project/rename", json={"new-name": "bi"},
                       headers={"x-project-id": project_id}).status_code == 200
    listed = client.get("/management/v1/project-list").json()["projects"]
    assert {"project-id": project_id, "project-name": "bi"} in listed
    assert {"project-id": "00000000-0000-0000-0000-000000000000", "project-name": "Default Project"} in listed
    unknown = client.get("/management/v1/project", headers={"x-project-id": str(uuid.uuid4())})
    assert unknown.status_code == 404


def test_warehouse_lifecycle(client, tmp_path):
    profile = {"type": "file", "location": f"file://{tmp_path}/wh"}
    r = client.post("/management/v1/warehouse", json={"warehouse-name": "lifecycle", "storage-profile": profile})
    assert r.status_code == 201, r.text
    wh = r.json()
    assert wh["name"] == "lifecycle" and wh["status"] == "active" and wh["storage-profile"] == profile
    assert wh["delete-profile"] == {"type": "hard"}
    wid = wh["warehouse-id"]

    dup = client.post("/management/v1/warehouse",
                      json={"warehouse-name": "lifecycle", "storage-profile": {"type": "file",
                                                                              "location": f"file://{tmp_path}/other"}})
    assert dup.status_code == 409

    assert client.get(f"/management/v1/warehouse/{wid}").json()["name"] == "lifecycle"
    names = [w["name"] for w in client.get("/management/v1/warehouse").json()["warehouses"]]
    assert "lifecycle" in names

    renamed = client.post(f"/management/v1/warehouse/{wid}/rename", json={"new-name": "renamed"})
    assert renamed.status_code == 200 and renamed.json()["name"] == "renamed"
    assert client.get("/catalog/v1/config", params={"warehouse": "renamed"}).json()["overrides"]["prefix"] == wid
    assert client.get("/catalog/v1/config", params={"warehouse": "lifecycle"}).status_code == 404

    assert client.post(f"/management/v1/warehouse/{wid}/deactivate").status_code == 200
    assert client.get(f"/catalog/v1/{wid}/namespaces").status_code == 403
    inactive = client.get("/management/v1/warehouse", params={"warehouseStatus": "inactive"}).json()["warehouses"]
    assert wid in [w["warehouse-id"] for w in inactive]
    assert client.post(f"/management/v1/warehouse/{wid}/activate").status_code == 200
    assert client.get(f"/catalog/v1/{wid}/namespaces").status_code == 200

    client.post(f"/catalog/v1/{wid}/namespaces", json={"namespace": ["keep"]})
    assert client.delete(f"/management/v1/warehouse/{wid}").status_code == 409
    client.delete(f"/catalog/v1/{wid}/namespaces/keep")
    assert client.delete(f"/management/v1/warehouse/{wid}").status_code == 204
    assert client.get(f"/management/v1/warehouse/{wid}").status_code == 404
    # the name is free again
    again = client.post("/management/v1/warehouse", json={"warehouse-name": "renamed", "storage-profile": profile})
    assert again.status_code == 201


def test_warehouse_names_are_unique_per_project(client, tmp_path):
    project = client.post("/management/v1/project", json={"project-name": "other"}).json()["project-id"]
    for i, headers in enumerate(({}, {"x-project-id": project})):
        r = client.post("/management/v1/warehouse", headers=headers, json={
            "warehouse-name": "shared-name", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/{i}"}})
        assert r.status_code == 201, r.text
    assert client.get("/catalog/v1/config", params={"warehouse": "shared-name"},
                      headers={"x-project-id": project}).status_code == 200


def test_storage_must_not_overlap_another_warehouse(client, warehouse):
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": "nested", "storage-profile": {"type": "file", "location": warehouse["location"] + "/sub"}})
    assert r.status_code == 400
    assert r.json()["error"]["type"] == "BadRequestException"


def test_an_s3_warehouse_needs_a_credential(client):
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": "s3wh", "storage-profile": {"type": "s3", "bucket": "bucket", "region": "us-east-1"}})
    assert r.status_code == 400
    assert "needs a storage-credential" in r.json()["error"]["message"]


def test_default_warehouse_is_created_and_served_without_a_name(second_server, data_dir):
    with httpx.Client(base_url=second_server.url) as c:
        config = c.get("/catalog/v1/config")
        assert config.status_code == 200, config.text
        prefix = config.json()["overrides"]["prefix"]
        wh = c.get(f"/management/v1/warehouse/{prefix}").json()
        assert wh["name"] == "default-wh"
        assert wh["storage-profile"]["location"] == f"file://{(data_dir / 'warehouses' / 'default-wh').resolve()}"


def test_test_storage_proves_a_profile_without_creating_anything(client, tmp_path, log_length):
    """What the console's "Test connection" calls: the create's own probe, nothing appended, nothing kept."""
    before = log_length()
    ok = client.post("/management/v1/warehouse/test-storage",
                     json={"storage-profile": {"type": "file", "location": f"file://{tmp_path}/probe"}})
    assert ok.status_code == 200, ok.text
    assert ok.json()["ok"] is True
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    refused = client.post("/management/v1/warehouse/test-storage",
                          json={"storage-profile": {"type": "file", "location": f"file://{blocker}/below"}})
    assert refused.status_code == 400
    assert refused.json()["error"]["type"] == "BadRequestException"
    assert "Cannot use" in refused.json()["error"]["message"]
    bad = client.post("/management/v1/warehouse/test-storage", json={"storage-profile": {"type": "nope"}})
    assert bad.status_code == 400
    assert log_length() == before
