"""unregisterTable (``POST .../tables/{table}/unregister``, Iceberg's REST spec after 1.11): the table leaves the
catalog, every file stays, the answer is its last metadata, and the log records an event of its own that the
Events API reports as a drop without purge; the table can be registered again from that metadata."""

import uuid
from pathlib import Path

from support import SCHEMA, wait_until

SOFT = {"type": "soft", "expiration-seconds": 3600}


def _table(client, warehouse, name="t"):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    r = client.post(f"{warehouse['prefix']}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA})
    assert r.status_code == 200, r.text
    return r.json()


def _files(location: str) -> set[str]:
    root = Path(location.removeprefix("file://"))
    return {str(p) for p in root.rglob("*") if p.is_file()}


def test_unregister_keeps_every_file_answers_the_last_metadata_and_can_be_registered_back(client, warehouse):
    created = _table(client, warehouse)
    p = warehouse["prefix"]
    r = client.post(f"{p}/namespaces/ns/tables/t", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"k": "v"}}]})
    assert r.status_code == 200, r.text
    committed = r.json()
    files = _files(created["metadata"]["location"])
    assert committed["metadata-location"].removeprefix("file://") in files
    gone = client.post(f"{p}/namespaces/ns/tables/t/unregister", headers={"Idempotency-Key": str(uuid.uuid4())})
    assert gone.status_code == 200, gone.text
    body = gone.json()
    assert set(body) == {"metadata-location", "metadata"}
    assert body["metadata-location"] == committed["metadata-location"]
    assert body["metadata"]["properties"]["k"] == "v"
    assert body["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]
    assert client.get(f"{p}/namespaces/ns/tables/t").status_code == 404
    assert client.post(f"{p}/namespaces/ns/tables/t", json={"requirements": [], "updates": []}).status_code == 404
    assert _files(created["metadata"]["location"]) == files  # nothing deleted
    # the history says what happened, and the table is registered back from the file the answer named
    history = client.get(f"/management/v1/warehouse/{warehouse['id']}/history",
                         params={"type": "table.unregistered"}).json()["events"]
    assert [e["entity"]["id"] for e in history] == [created["metadata"]["table-uuid"]]
    back = client.post(f"{p}/namespaces/ns/register",
                       json={"name": "t", "metadata-location": body["metadata-location"]})
    assert back.status_code == 200, back.text
    assert client.get(f"{p}/namespaces/ns/tables/t").json()["metadata"]["properties"]["k"] == "v"


def test_unregister_is_final_and_never_purges_even_in_a_soft_delete_warehouse(client, tmp_path, db):
    path = tmp_path / "soft"
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"soft-{uuid.uuid4().hex[:8]}", "delete-profile": SOFT,
        "storage-profile": {"type": "file", "location": f"file://{path}"}})
    assert r.status_code == 201, r.text
    warehouse = {"id": r.json()["warehouse-id"], "prefix": f"/catalog/v1/{r.json()['warehouse-id']}"}
    created = _table(client, warehouse)
    table_id = created["metadata"]["table-uuid"]
    files = _files(created["metadata"]["location"])
    assert client.post(f"{warehouse['prefix']}/namespaces/ns/tables/t/unregister").status_code == 200
    # not in the recycle bin (nothing to undrop), and the read model holds it as gone for good, without purge
    bin_ = client.get(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars").json()
    assert table_id not in str(bin_)
    wait_until(lambda: db.execute("SELECT deleted_at IS NOT NULL, purge_requested, expires_at FROM ll_tabulars"
                                  " WHERE id = %s", (table_id,)).fetchone() == (True, False, None), 10)
    assert _files(created["metadata"]["location"]) == files


def test_the_events_api_reports_an_unregister_as_a_drop_without_purge(client, warehouse):
    created = _table(client, warehouse)
    assert client.post(f"{warehouse['prefix']}/namespaces/ns/tables/t/unregister").status_code == 200
    r = client.post(f"{warehouse['prefix']}/events", json={"operation-types": ["drop-table"]})
    assert r.status_code == 200, r.text
    [event] = r.json()["events"]
    assert event["operation"] == {"operation-type": "drop-table", "identifier": {"namespace": ["ns"], "name": "t"},
                                  "table-uuid": created["metadata"]["table-uuid"], "purge": False,
                                  "x-lakeledger-unregistered": True}


def test_unregister_of_a_missing_or_protected_table_is_refused_and_records_nothing(client, warehouse, log_length):
    created = _table(client, warehouse)
    p = warehouse["prefix"]
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/table/{created['metadata']['table-uuid']}"
                    "/protection", json={"protected": True})
    assert r.status_code == 200, r.text
    before = log_length()
    missing = client.post(f"{p}/namespaces/ns/tables/nope/unregister")
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    assert client.post(f"{p}/namespaces/nons/tables/t/unregister").status_code == 404
    protected = client.post(f"{p}/namespaces/ns/tables/t/unregister")
    assert protected.status_code == 409 and protected.json()["error"]["type"] == "TableProtected"
    assert log_length() == before
    assert client.get(f"{p}/namespaces/ns/tables/t").status_code == 200
