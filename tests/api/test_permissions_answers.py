"""The exact answers of the permission endpoints under allowall (grants are recorded all the same): which objects
exist for them (a missing one is a 404 naming it; a soft-deleted table still exists, a table deleted for good does
not), what the assignments list holds after grants and revokes, and the access history of a table, with the
refusals of a malformed question. The read-model questions behind them are the named methods of
lakeledger/projections/*_queries.py; these tests hold their answers still."""

import uuid
from datetime import UTC, datetime

from support import SCHEMA, VIEW_VERSION

GRANTEE = "oidc~pinned"


def _table(client, warehouse, name: str) -> str:
    r = client.post(f"{warehouse['prefix']}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA})
    assert r.status_code == 200, r.text
    return r.json()["metadata"]["table-uuid"]


def _objects(client, warehouse) -> dict[str, str]:
    """The permission paths of one object of each kind."""
    p, w = warehouse["prefix"], warehouse["id"]
    ns = client.post(f"{p}/namespaces", json={"namespace": ["ns"]}).json()["namespace-uuid"]
    view = client.post(f"{p}/namespaces/ns/views", json={"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION,
                                                         "properties": {}}).json()["metadata"]["view-uuid"]
    role = client.post("/management/v1/role", json={"name": f"r-{uuid.uuid4().hex[:8]}"})
    assert role.status_code == 201, role.text
    return {"warehouse": f"/warehouse/{w}", "namespace": f"/namespace/{ns}",
            "table": f"/warehouse/{w}/table/{_table(client, warehouse, 't')}", "view": f"/warehouse/{w}/view/{view}",
            "role": f"/role/{role.json()['id']}", "project": f"/project/{uuid.UUID(int=0)}"}


def test_missing_objects_of_each_kind_are_404s_naming_them(client, warehouse):
    objects = _objects(client, warehouse)
    missing = str(uuid.uuid4())
    errors = {"warehouse": "NoSuchWarehouseException"}
    for kind, path in objects.items():
        assert client.get(f"/management/v1/permissions{path}/assignments").status_code == 200, kind
        absent = path.rsplit("/", 1)[0] + "/" + missing
        for method, suffix, body in (("GET", "/assignments", None), ("GET", "/access", None),
                                     ("POST", "/assignments", {"writes": []})):
            r = client.request(method, f"/management/v1/permissions{absent}{suffix}", json=body)
            assert r.status_code == 404, (kind, method, suffix, r.text)
            assert r.json()["error"]["type"] == errors.get(kind, "NotFoundException"), (kind, r.text)
            assert r.json()["error"]["message"] == f"{kind.capitalize()} does not exist: {missing}"


def test_a_table_exists_for_permissions_until_it_is_deleted_for_good(client, warehouse):
    p, w = warehouse["prefix"], warehouse["id"]
    client.post(f"{p}/namespaces", json={"namespace": ["ns"]})
    soft = client.post(f"/management/v1/warehouse/{w}/delete-profile",
                       json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    assert soft.status_code == 200, soft.text
    kept = _table(client, warehouse, "kept")
    assert client.delete(f"{p}/namespaces/ns/tables/kept").status_code == 204
    # soft-deleted: in the recycle bin, and its grants can still be read and changed
    assert client.get(f"/management/v1/permissions/warehouse/{w}/table/{kept}/assignments").status_code == 200
    assert client.post(f"/management/v1/warehouse/{w}/delete-profile",
                       json={"delete-profile": {"type": "hard"}}).status_code == 200
    gone = _table(client, warehouse, "gone")
    assert client.delete(f"{p}/namespaces/ns/tables/gone").status_code == 204
    r = client.get(f"/management/v1/permissions/warehouse/{w}/table/{gone}/assignments")
    assert r.status_code == 404 and r.json()["error"]["message"] == f"Table does not exist: {gone}"


def test_assignments_list_what_holds_now_in_the_order_granted(client, warehouse):
    objects = _objects(client, warehouse)
    url = f"/management/v1/permissions{objects['table']}/assignments"
    before = client.get(url).json()["assignments"]
    writes = [{"type": "select", "user": GRANTEE}, {"type": "modify", "user": GRANTEE},
              {"type": "describe", "user": "oidc~other"}]
    assert client.post(url, json={"writes": writes}).status_code == 204
    assert client.get(url).json()["assignments"] == before + writes
    assert client.post(url, json={"deletes": [writes[1]]}).status_code == 204
    assert client.get(url).json()["assignments"] == before + [writes[0], writes[2]]
    # a filter by relation keeps the order
    only = client.get(url, params={"relations": ["describe", "select"]}).json()["assignments"]
    assert only == [a for a in before + [writes[0], writes[2]] if a["type"] in ("describe", "select")]
    project = client.get(f"/management/v1/permissions{objects['project']}/assignments").json()
    assert project["project-id"] == str(uuid.UUID(int=0)) and isinstance(project["assignments"], list)


def test_the_access_history_of_a_table(client, warehouse):
    objects = _objects(client, warehouse)
    table_id = objects["table"].rsplit("/", 1)[1]
    history = f"/management/v1/warehouse/{warehouse['id']}/access-history"
    before = datetime.now(UTC).isoformat()
    url = f"/management/v1/permissions{objects['table']}/assignments"
    assert client.post(url, json={"writes": [{"type": "select", "user": GRANTEE}]}).status_code == 204

    now = client.get(history, params={"table": table_id})
    assert now.status_code == 200, now.text
    body = now.json()
    assert body["object"] == {"type": "table", "id": table_id} and body["at"] is None
    assert [c["type"] for c in body["chain"]][:3] == ["table", "namespace", "warehouse"]
    [held] = [h for h in body["holders"] if h["user"] == GRANTEE]
    assert held["rights"] == ["describe", "select"]
    [how] = held["through"]
    assert (how["relation"], how["on"], how["source"], how["roles"]) == (
        "select", {"type": "table", "id": table_id}, "grant", [])
    assert how["sequence"] <= body["position"]

    then = client.get(history, params={"table": table_id, "at": before}).json()
    assert then["at"] == before and then["position"] < body["position"]
    assert GRANTEE not in [h["user"] for h in then["holders"]]
    # the warehouse itself when no object is named
    assert client.get(history).json()["object"] == {"type": "warehouse", "id": warehouse["id"]}

    two = client.get(history, params={"table": table_id, "view": table_id})
    assert two.status_code == 400 and two.json()["error"]["message"] == "Name one of table, view or namespace"
    bad = client.get(history, params={"namespace": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["message"] == "namespace must be a UUID, not 'x'"
    missing = str(uuid.uuid4())
    r = client.get(f"/management/v1/warehouse/{missing}/access-history", params={"table": table_id})
    assert r.status_code == 404 and r.json()["error"]["message"] == f"Warehouse does not exist: {missing}"
