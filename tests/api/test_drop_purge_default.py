"""A warehouse's `drop-purge-default` decides what a table drop without `purgeRequested` does: "purge" (Lakekeeper's
default for managed tables, and the default here) deletes the files; "keep" (the REST spec's default: absent =
false) leaves them, so the dropped table's last metadata file can be registered again. Java's dropTable(id) and
Spark's DROP TABLE send no purgeRequested."""

import time
import uuid
from pathlib import Path

import pytest
from support import SCHEMA, wait_until

MANAGEMENT = "/management/v1/warehouse"


def _local(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def _create_warehouse(client, tmp_path, **extra) -> dict:
    r = client.post(MANAGEMENT, json={"warehouse-name": f"dp-{uuid.uuid4().hex[:10]}", "storage-profile": {
        "type": "file", "location": f"file://{tmp_path / uuid.uuid4().hex[:8]}"}, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def _table(client, warehouse_id: str, name: str = "t") -> tuple[str, dict]:
    p = f"/catalog/v1/{warehouse_id}"
    client.post(f"{p}/namespaces", json={"namespace": ["ns"]})
    r = client.post(f"{p}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA})
    assert r.status_code == 200, r.text
    path = f"{p}/namespaces/ns/tables/{name}"
    committed = client.post(path, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"k": "v"}}]})
    assert committed.status_code == 200, committed.text
    return path, committed.json()


def _purged(db, table_uuid: str) -> bool:
    return db.execute("SELECT purged_at IS NOT NULL FROM ll_tabulars WHERE id = %s", (table_uuid,)).fetchone()[0]


def test_the_setting_is_shown_by_get_and_list(client, tmp_path):
    default = _create_warehouse(client, tmp_path)
    keep = _create_warehouse(client, tmp_path, **{"drop-purge-default": "keep"})
    assert default["drop-purge-default"] == "purge" and keep["drop-purge-default"] == "keep"
    assert client.get(f"{MANAGEMENT}/{keep['id']}").json()["drop-purge-default"] == "keep"
    listed = {w["id"]: w["drop-purge-default"] for w in client.get(MANAGEMENT).json()["warehouses"]}
    assert listed[default["id"]] == "purge" and listed[keep["id"]] == "keep"


def test_keep_leaves_the_files_and_the_last_metadata_file_can_be_registered_again(client, tmp_path, db):
    wh = _create_warehouse(client, tmp_path, **{"drop-purge-default": "keep"})
    path, committed = _table(client, wh["id"])
    metadata_location = committed["metadata-location"]
    table_uuid = committed["metadata"]["table-uuid"]
    assert client.delete(path).status_code == 204
    assert db.execute("SELECT purge_requested FROM ll_tabulars WHERE id = %s", (table_uuid,)).fetchone()[0] is False
    time.sleep(1.5)  # the purge worker would have acted by now
    assert _local(metadata_location).is_file() and _local(committed["metadata"]["location"]).is_dir()
    assert not _purged(db, table_uuid)

    p = f"/catalog/v1/{wh['id']}"
    registered = client.post(f"{p}/namespaces/ns/register", json={"name": "t", "metadata-location": metadata_location})
    assert registered.status_code == 200, registered.text
    loaded = client.get(path).json()
    assert loaded["metadata"]["table-uuid"] == table_uuid and loaded["metadata"]["properties"]["k"] == "v"
    # purgeRequested=true still purges in a "keep" warehouse
    assert client.delete(path, params={"purgeRequested": "true"}).status_code == 204
    wait_until(lambda: not _local(metadata_location).exists(), 30, "the purge of an explicit purgeRequested=true")


def test_purge_is_the_default_and_deletes_the_files(client, tmp_path, db):
    wh = _create_warehouse(client, tmp_path)
    path, committed = _table(client, wh["id"])
    assert client.delete(path).status_code == 204
    wait_until(lambda: _purged(db, committed["metadata"]["table-uuid"]), 30, "the purge")
    assert not _local(committed["metadata-location"]).exists()
    again = client.post(f"/catalog/v1/{wh['id']}/namespaces/ns/register",
                        json={"name": "t", "metadata-location": committed["metadata-location"]})
    assert 400 <= again.status_code < 500, again.text


def test_the_setting_can_be_changed_and_applies_to_later_drops(client, tmp_path, db):
    wh = _create_warehouse(client, tmp_path)
    changed = client.post(f"{MANAGEMENT}/{wh['id']}/drop-purge-default", json={"drop-purge-default": "keep"})
    assert changed.status_code == 200 and changed.json()["drop-purge-default"] == "keep", changed.text
    path, committed = _table(client, wh["id"], "kept")
    assert client.delete(path).status_code == 204
    events = client.get(f"{MANAGEMENT}/{wh['id']}/history", params={"type": "warehouse.drop-purge-default-set"})
    [event] = events.json()["events"]
    assert event["change"] == {"drop_purge_default": "keep"} and "keep their files" in event["summary"]

    back = client.post(f"{MANAGEMENT}/{wh['id']}/drop-purge-default", json={"drop-purge-default": "purge"})
    assert back.status_code == 200 and back.json()["drop-purge-default"] == "purge"
    path2, committed2 = _table(client, wh["id"], "gone")
    assert client.delete(path2).status_code == 204
    wait_until(lambda: _purged(db, committed2["metadata"]["table-uuid"]), 30, "the purge")
    assert _local(committed["metadata-location"]).is_file()  # the earlier drop kept its files


@pytest.mark.parametrize("value", ["maybe", True, None, "", ["keep"], "KEEP"])
def test_bad_values_are_400_and_append_nothing(client, warehouse, tmp_path, log_length, value):
    before = log_length()
    r = client.post(f"{MANAGEMENT}/{warehouse['id']}/drop-purge-default", json={"drop-purge-default": value})
    assert r.status_code == 400 and r.json()["error"]["code"] == 400, r.text
    if value is not None:  # null at creation means the default
        r = client.post(MANAGEMENT, json={"warehouse-name": f"bad-{uuid.uuid4().hex[:8]}", "drop-purge-default": value,
                                          "storage-profile": {"type": "file", "location": f"file://{tmp_path}/b"}})
        assert r.status_code == 400 and r.json()["error"]["code"] == 400, r.text
    assert log_length() == before


def test_setting_it_on_a_missing_warehouse_or_to_the_same_value(client, warehouse, log_length):
    before = log_length()
    r = client.post(f"{MANAGEMENT}/{uuid.uuid4()}/drop-purge-default", json={"drop-purge-default": "keep"})
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchWarehouseException"
    r = client.post(f"{MANAGEMENT}/{warehouse['id']}/drop-purge-default", json={"drop-purge-default": "purge"})
    assert r.status_code == 200  # already so: nothing to record
    assert log_length() == before
