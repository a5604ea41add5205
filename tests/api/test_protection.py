"""Protection flags on warehouses, namespaces, tables and views: a protected object is not dropped without
force=true, the refusal is a 409 ErrorModel that appends nothing, and the flag is recorded in the history."""

import uuid

from support import SCHEMA, VIEW_VERSION


def _objects(client, warehouse) -> dict[str, str]:
    p = warehouse["prefix"]
    ns = client.post(f"{p}/namespaces", json={"namespace": ["ns"]}).json()["namespace-uuid"]
    table = client.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).json()
    view = client.post(f"{p}/namespaces/ns/views", json={"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION,
                                                          "properties": {}}).json()
    return {"namespace": ns, "table": table["metadata"]["table-uuid"], "view": view["metadata"]["view-uuid"]}


def _protection(client, warehouse, kind: str, entity_id: str) -> str:
    return f"/management/v1/warehouse/{warehouse['id']}/{kind}/{entity_id}/protection"


def test_protected_tables_views_and_namespaces_need_force(client, warehouse, log_length):
    ids = _objects(client, warehouse)
    p = warehouse["prefix"]
    for kind, entity_id in ids.items():
        assert client.get(_protection(client, warehouse, kind, entity_id)).json()["protected"] is False
        r = client.post(_protection(client, warehouse, kind, entity_id), json={"protected": True})
        assert r.status_code == 200 and r.json()["protected"] is True and r.json()["updated_at"]
        assert client.get(_protection(client, warehouse, kind, entity_id)).json()["protected"] is True

    before = log_length()
    for path, kind in ((f"{p}/namespaces/ns/tables/t", "Table"), (f"{p}/namespaces/ns/views/v", "View")):
        refused = client.delete(path)
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["type"] == f"{kind}Protected"
        assert "force=true" in refused.json()["error"]["message"]
    # a recursive drop is refused for anything protected inside it
    refused = client.delete(f"{p}/namespaces/ns", params={"recursive": "true"})
    assert refused.status_code == 409 and refused.json()["error"]["type"] == "NamespaceProtected"
    client.post(_protection(client, warehouse, "namespace", ids["namespace"]), json={"protected": False})
    before = log_length()
    refused = client.delete(f"{p}/namespaces/ns", params={"recursive": "true"})
    assert refused.status_code == 409 and refused.json()["error"]["type"] in ("TableProtected", "ViewProtected")
    assert log_length() == before
    assert client.get(f"{p}/namespaces/ns/tables/t").status_code == 200

    assert client.delete(f"{p}/namespaces/ns/views/v", params={"force": "true"}).status_code == 204
    assert client.delete(f"{p}/namespaces/ns/tables/t", params={"force": "true"}).status_code == 204
    history = client.get(f"/management/v1/warehouse/{warehouse['id']}/history",
                         params={"tabular-id": ids["table"]}).json()["events"]
    assert [e["type"] for e in history][:3] == ["table.created", "table.protection-set", "table.dropped"]
    assert history[1]["summary"] == "protected table ns.t"


def test_a_protected_warehouse_is_deleted_only_with_force(client, tmp_path, log_length):
    created = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"p-{uuid.uuid4().hex[:8]}", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/p"}})
    wid = created.json()["warehouse-id"]
    r = client.post(f"/management/v1/warehouse/{wid}/protection", json={"protected": True})
    assert r.status_code == 200 and r.json()["protected"] is True
    assert client.get(f"/management/v1/warehouse/{wid}").json()["protected"] is True
    before = log_length()
    refused = client.delete(f"/management/v1/warehouse/{wid}")
    assert refused.status_code == 409 and refused.json()["error"]["type"] == "WarehouseProtected"
    assert log_length() == before
    assert client.delete(f"/management/v1/warehouse/{wid}", params={"force": "true"}).status_code == 204


def test_protection_of_missing_or_foreign_objects_and_bad_bodies(client, warehouse, log_length):
    ids = _objects(client, warehouse)
    before = log_length()
    assert (
        client.post(_protection(client, warehouse, "table", uuid.uuid4()), json={"protected": True}).status_code == 404
    )
    # a view's id is not a table's
    assert (
        client.post(_protection(client, warehouse, "table", ids["view"]), json={"protected": True}).status_code == 404
    )
    assert client.get(_protection(client, warehouse, "namespace", uuid.uuid4())).status_code == 404
    for body in (None, {}, {"protected": "yes"}, {"protected": True, "extra": 1}, []):
        r = client.post(_protection(client, warehouse, "table", ids["table"]), json=body)
        assert r.status_code == 400, (body, r.text)
    assert (
        client.post(_protection(client, warehouse, "table", "not-a-uuid"), json={"protected": True}).status_code == 400
    )
    other = f"/management/v1/warehouse/{uuid.uuid4()}/table/{ids['table']}/protection"
    assert client.post(other, json={"protected": True}).status_code == 404
    assert log_length() == before


def test_protection_answers_and_refusals_of_each_kind(client, warehouse):
    """The exact answers of the six namespace/table/view protection routes (one core serves them): the body of a
    read and a change, and the error type and message of a missing warehouse, a missing or dropped object and an
    object of another kind."""
    ids = _objects(client, warehouse)
    missing = str(uuid.uuid4())
    errors = {"namespace": "NoSuchNamespaceException", "table": "NoSuchTableException",
              "view": "NoSuchViewException"}
    for kind, entity_id in ids.items():
        read = client.get(_protection(client, warehouse, kind, entity_id))
        assert read.status_code == 200 and read.json()["protected"] is False
        assert set(read.json()) == {"protected", "updated_at"}
        changed = client.post(_protection(client, warehouse, kind, entity_id), json={"protected": True})
        assert changed.status_code == 200 and changed.json()["protected"] is True
        assert changed.json() == client.get(_protection(client, warehouse, kind, entity_id)).json()
        for method in ("GET", "POST"):
            body = {"protected": False} if method == "POST" else None
            r = client.request(method, _protection(client, warehouse, kind, missing), json=body)
            assert r.status_code == 404, r.text
            assert r.json()["error"]["type"] == errors[kind]
            assert r.json()["error"]["message"] == f"{kind.capitalize()} does not exist: {missing}"
            other = f"/management/v1/warehouse/{missing}/{kind}/{entity_id}/protection"
            r = client.request(method, other, json=body)
            assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchWarehouseException", r.text
            assert r.json()["error"]["message"] == f"Warehouse does not exist: {missing}"
    # an object of the other kind is missing under this one
    r = client.get(_protection(client, warehouse, "view", ids["table"]))
    assert r.status_code == 404 and r.json()["error"]["message"] == f"View does not exist: {ids['table']}"
    # a dropped table has no protection to read
    p = warehouse["prefix"]
    assert client.delete(f"{p}/namespaces/ns/tables/t", params={"force": "true"}).status_code == 204
    r = client.get(_protection(client, warehouse, "table", ids["table"]))
    assert r.status_code == 404 and r.json()["error"]["message"] == f"Table does not exist: {ids['table']}"
