"""DELETE /management/v1/project (and Lakekeeper's older /project/{id}): refused with 409 ProjectNotEmpty while the
project holds a warehouse, as Lakekeeper refuses it; otherwise one event (actor, request id) and the project is gone."""

import uuid
from concurrent.futures import ThreadPoolExecutor

from lakekeeper_spec import check


def _project(client) -> str:
    r = client.post("/management/v1/project", json={"project-name": f"p-{uuid.uuid4().hex[:8]}"})
    assert r.status_code == 201, r.text
    return check(r)["project-id"]


def test_a_project_with_a_warehouse_is_not_deleted(client, tmp_path, log_length):
    project = _project(client)
    headers = {"x-project-id": project}
    r = client.post("/management/v1/warehouse", headers=headers, json={
        "warehouse-name": "w", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/w"}})
    assert r.status_code == 201, r.text
    warehouse = r.json()["warehouse-id"]
    before = log_length()
    r = client.delete("/management/v1/project", headers=headers)
    assert r.status_code == 409 and check(r)["error"]["type"] == "ProjectNotEmpty", r.text
    assert log_length() == before
    # an inactive warehouse still holds the project
    assert client.post(f"/management/v1/warehouse/{warehouse}/deactivate").status_code == 200
    assert client.delete(f"/management/v1/project/{project}").status_code == 409
    assert client.delete(f"/management/v1/warehouse/{warehouse}").status_code == 204
    r = client.delete("/management/v1/project", headers=headers)
    assert r.status_code == 204, r.text
    assert client.get("/management/v1/project", headers=headers).status_code == 404


def test_deleting_a_project_is_an_event_and_the_project_is_gone(client):
    project = _project(client)
    request_id = str(uuid.uuid4())
    r = client.delete(f"/management/v1/project/{project}", headers={"x-request-id": request_id})
    assert r.status_code == 204, r.text
    events = client.get("/management/v1/history", params={"type": "project.deleted"}).json()["events"]
    [event] = [e for e in events if e["entity"]["id"] == project]
    assert (event["actor"], event["request-id"]) == ("anonymous", request_id), event
    assert project not in [p["project-id"] for p in client.get("/management/v1/project-list").json()["projects"]]
    for r in (client.get(f"/management/v1/project/{project}"),
              client.delete(f"/management/v1/project/{project}"),
              client.post(f"/management/v1/project/{project}/rename", json={"new-name": "again"}),
              client.post("/management/v1/warehouse", headers={"x-project-id": project}, json={
                  "warehouse-name": "w", "storage-profile": {"type": "file", "location": "file:///tmp/nowhere"}})):
        assert r.status_code == 404, (r.request.url, r.text)
        check(r)
    # its id stays taken
    r = client.post("/management/v1/project", json={"project-name": "again", "project-id": project})
    assert r.status_code == 409, r.text


def test_the_older_project_routes_answer_as_the_header_ones(client):
    project = _project(client)
    assert check(client.get(f"/management/v1/project/{project}"))["project-id"] == project
    r = client.post(f"/management/v1/project/{project}/rename", json={"new-name": "renamed"})
    assert r.status_code == 200, r.text
    assert client.get("/management/v1/project", headers={"x-project-id": project}).json()["project-name"] == "renamed"
    assert client.get("/management/v1/project/not-a-uuid").status_code in (400, 404)


def test_a_projects_roles_and_tag_definitions_are_deleted_with_it(client, db):
    project = _project(client)
    headers = {"x-project-id": project}
    outer, inner = (client.post("/management/v1/role", headers=headers, json={"name": name}).json()["id"]
                    for name in ("outer", "inner"))
    r = client.post(f"/management/v1/role/{outer}/members", headers=headers,
                    json={"members": [{"type": "role", "id": inner}]})
    assert r.status_code == 200, r.text
    r = client.post("/management/v1/tag-definition", headers=headers,
                    json={"name": "PII", "scope": ["table"], "value-kind": "marker"})
    assert r.status_code == 201, r.text
    tag = r.json()["id"]
    request_id = str(uuid.uuid4())
    assert client.delete("/management/v1/project", headers={**headers, "x-request-id": request_id}).status_code == 204
    for kind, id_ in (("role", outer), ("role", inner), ("tag-definition", tag)):
        assert client.get(f"/management/v1/{kind}/{id_}", headers=headers).status_code == 404
    # one request: the project's deletion, its roles' and definition's, their members' and their names' claims
    assert client.get("/management/v1/history", params={"pageSize": 1}).status_code == 200  # caught up with the log
    types = {t for (t,) in db.execute("SELECT type FROM ll_history WHERE request_id = %s", (request_id,))}
    assert {"project.deleted", "role.deleted", "role.member-removed", "tag-definition.deleted"} <= types, types
    for table in ("ll_roles", "ll_role_members", "ll_tag_definitions"):
        assert db.execute(f"SELECT count(*) FROM {table} WHERE project_id = %s", (project,)).fetchone()[0] == 0


def test_a_role_created_while_its_project_is_deleted_is_deleted_with_it_or_refused(client, db):
    """A role and a tag definition created at the moment of the deletion: either it is created first and deleted
    with the project, or it finds no project (404); never one left behind in a deleted project."""
    for _ in range(5):
        project = _project(client)
        headers = {"x-project-id": project}
        with ThreadPoolExecutor(3) as pool:
            role = pool.submit(client.post, "/management/v1/role", headers=headers, json={"name": "late"})
            tag = pool.submit(client.post, "/management/v1/tag-definition", headers=headers,
                              json={"name": "late", "scope": ["table"], "value-kind": "marker"})
            deleted = pool.submit(client.delete, "/management/v1/project", headers=headers)
        assert deleted.result().status_code == 204, deleted.result().text
        assert role.result().status_code in (201, 404), role.result().text
        assert tag.result().status_code in (201, 404), tag.result().text
        for table in ("ll_roles", "ll_tag_definitions"):
            assert db.execute(f"SELECT count(*) FROM {table} WHERE project_id = %s", (project,)).fetchone()[0] == 0
