"""Soft deletion over HTTP against a real server with its workers: delete profiles, the deleted-tabulars list,
undrop of tables, views and whole namespace trees, expiry on the real clock with the purge that follows,
hard drops, and what bad input gets."""

import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from support import SCHEMA, VIEW_VERSION, wait_until

HOUR = {"type": "soft", "expiration-seconds": 3600}


@pytest.fixture
def soft(client, warehouse):
    """The test's warehouse with a soft delete profile of one hour, plus helpers bound to it."""
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/delete-profile", json={"delete-profile": HOUR})
    assert r.status_code == 200, r.text
    return Bin(client, warehouse)


class Bin:
    def __init__(self, client, warehouse):
        self.client, self.wh, self.p = client, warehouse, warehouse["prefix"]
        self.management = f"/management/v1/warehouse/{warehouse['id']}"

    def namespace(self, *levels: str) -> str:
        r = self.client.post(f"{self.p}/namespaces", json={"namespace": list(levels)})
        assert r.status_code == 200, r.text
        return r.json()["namespace-uuid"]

    def table(self, namespace: str, name: str) -> str:
        r = self.client.post(f"{self.p}/namespaces/{namespace}/tables", json={"name": name, "schema": SCHEMA})
        assert r.status_code == 200, r.text
        return r.json()["metadata"]["table-uuid"]

    def view(self, namespace: str, name: str) -> str:
        r = self.client.post(f"{self.p}/namespaces/{namespace}/views", json={
            "name": name, "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}})
        assert r.status_code == 200, r.text
        return r.json()["metadata"]["view-uuid"]

    def deleted(self, **params) -> list[dict]:
        r = self.client.get(f"{self.management}/deleted-tabulars", params=params)
        assert r.status_code == 200, r.text
        return r.json()["tabulars"]

    def undrop(self, *targets: tuple[str, str]):
        return self.client.post(f"{self.management}/deleted-tabulars/undrop",
                                json={"targets": [{"type": t, "id": i} for t, i in targets]})

    def history(self, tabular_id: str) -> list[str]:
        r = self.client.get(f"{self.management}/history", params={"tabular-id": tabular_id})
        assert r.status_code == 200, r.text
        return [e["type"] for e in r.json()["events"]]

    def files(self, tabular_id: str) -> list[Path]:
        found = []
        # os.walk passes over a directory a running purge removes under it (rglob raised FileNotFoundError)
        for directory, _, names in os.walk(self.wh["path"]):
            found += [Path(directory, n) for n in names if tabular_id in str(Path(directory, n))]
        return found


def test_the_delete_profile_is_set_at_creation_or_later_and_applies_to_later_drops(client, warehouse, tmp_path):
    created = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"soft-{uuid.uuid4().hex[:8]}", "delete-profile": {"type": "soft", "expiration-seconds": 60},
        "storage-profile": {"type": "file", "location": f"file://{tmp_path}/other"}})
    assert created.status_code == 201, created.text
    assert created.json()["delete-profile"] == {"type": "soft", "expiration-seconds": 60}
    assert client.get(f"/management/v1/warehouse/{warehouse['id']}").json()["delete-profile"] == {"type": "hard"}

    bin_ = Bin(client, warehouse)
    bin_.namespace("ns")
    first, second = bin_.table("ns", "first"), bin_.table("ns", "second")
    r = client.post(f"{bin_.management}/delete-profile", json={"delete-profile": HOUR})
    assert r.status_code == 200 and r.json()["delete-profile"] == HOUR
    assert client.delete(f"{bin_.p}/namespaces/ns/tables/first").status_code == 204
    [listed] = bin_.deleted()
    expires = listed["expiration-date"]

    r = client.post(f"{bin_.management}/delete-profile", json={"delete-profile": {"type": "hard"}})
    assert r.status_code == 200 and r.json()["delete-profile"] == {"type": "hard"}
    assert client.delete(f"{bin_.p}/namespaces/ns/tables/second").status_code == 204
    # the earlier soft drop keeps its expiry; the later drop was final
    assert [(t["id"], t["expiration-date"]) for t in bin_.deleted()] == [(first, expires)]
    assert bin_.undrop(("table", second)).status_code == 404
    assert bin_.history(second)[-1] in ("table.dropped", "table.purge-started", "table.purged")


def test_a_soft_dropped_table_is_gone_keeps_its_files_frees_its_name_and_is_listed(soft, client):
    ns_id = soft.namespace("ns")
    table_id = soft.table("ns", "t")
    files = soft.files(table_id)
    assert files
    before = time.time()
    assert client.delete(f"{soft.p}/namespaces/ns/tables/t").status_code == 204

    assert client.get(f"{soft.p}/namespaces/ns/tables/t").status_code == 404
    assert client.get(f"{soft.p}/namespaces/ns/tables").json()["identifiers"] == []
    [entry] = soft.deleted()
    assert entry["id"] == table_id and entry["name"] == "t" and entry["namespace"] == ["ns"]
    assert entry["namespace-id"] == ns_id and entry["typ"] == "table" and entry["warehouse-id"] == soft.wh["id"]
    assert entry["dropped-with"] is None
    from datetime import datetime
    deleted_at = datetime.fromisoformat(entry["deleted-at"])
    expires = datetime.fromisoformat(entry["expiration-date"])
    assert abs(deleted_at.timestamp() - before) < 30
    assert abs((expires - deleted_at).total_seconds() - 3600) < 1
    assert datetime.fromisoformat(entry["created-at"]) <= deleted_at
    assert all(f.exists() for f in files), "a soft drop keeps the files until expiry"

    replacement = soft.table("ns", "t")  # the name is free at once
    assert replacement != table_id
    conflict = soft.undrop(("table", table_id))
    assert conflict.status_code == 409
    assert "name is now taken" in conflict.json()["error"]["message"]

    assert client.delete(f"{soft.p}/namespaces/ns/tables/t").status_code == 204  # the replacement
    assert {e["id"] for e in soft.deleted()} == {table_id, replacement}
    assert [e["id"] for e in soft.deleted(namespaceId=ns_id)] == [table_id, replacement]  # in drop order


def test_undrop_restores_the_table_with_its_history_continuing(soft, client):
    soft.namespace("ns")
    table_id = soft.table("ns", "t")
    p = f"{soft.p}/namespaces/ns/tables/t"
    committed = client.post(p, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"owner": "ana"}}]})
    assert committed.status_code == 200
    location = committed.json()["metadata-location"]
    assert client.delete(p).status_code == 204

    assert soft.undrop(("table", table_id)).status_code == 204
    loaded = client.get(p)
    assert loaded.status_code == 200
    assert loaded.json()["metadata-location"] == location
    assert loaded.json()["metadata"]["properties"]["owner"] == "ana"
    assert soft.deleted() == []
    again = client.post(p, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"owner": "bo"}}]})
    assert again.status_code == 200
    assert soft.history(table_id) == ["table.created", "table.committed", "table.dropped", "table.undropped",
                                      "table.committed"]
    assert soft.undrop(("table", table_id)).status_code == 404  # live: nothing to undrop


def test_views_are_soft_dropped_and_undropped_too(soft, client):
    soft.namespace("ns")
    view_id = soft.view("ns", "v")
    assert client.delete(f"{soft.p}/namespaces/ns/views/v").status_code == 204
    assert client.get(f"{soft.p}/namespaces/ns/views/v").status_code == 404
    [entry] = soft.deleted()
    assert (entry["id"], entry["typ"]) == (view_id, "view")
    assert soft.undrop(("table", view_id)).status_code == 404  # the type must match
    assert soft.undrop(("view", view_id)).status_code == 204
    assert client.get(f"{soft.p}/namespaces/ns/views/v").status_code == 200


def test_a_recursive_namespace_drop_is_undropped_with_everything_in_it(soft, client):
    root = soft.namespace("sales")
    soft.namespace("sales", "eu")
    soft.namespace("other")
    tables = {soft.table("sales", "orders"), soft.table("sales%1Feu", "invoices")}
    view_id = soft.view("sales%1Feu", "summary")
    separately = soft.table("sales", "old")
    assert client.delete(f"{soft.p}/namespaces/sales/tables/old").status_code == 204  # dropped on its own before

    refused = client.delete(f"{soft.p}/namespaces/sales")
    assert refused.status_code == 409 and refused.json()["error"]["type"] == "NamespaceNotEmptyException"
    assert client.delete(f"{soft.p}/namespaces/sales", params={"recursive": "true"}).status_code == 204
    assert client.get(f"{soft.p}/namespaces/sales").status_code == 404
    assert client.get(f"{soft.p}/namespaces").json()["namespaces"] == [["other"]]
    listed = {e["id"]: e["dropped-with"] for e in soft.deleted()}
    assert listed == {**{t: root for t in tables}, view_id: root, separately: None}

    one = soft.undrop(("table", next(iter(tables))))
    assert one.status_code == 409 and root in one.json()["error"]["message"]
    assert soft.undrop(("namespace", root)).status_code == 204
    assert client.get(f"{soft.p}/namespaces", params={"parent": "sales"}).json()["namespaces"] == [["sales", "eu"]]
    assert client.get(f"{soft.p}/namespaces/sales/tables/orders").status_code == 200
    assert client.get(f"{soft.p}/namespaces/sales%1Feu/tables/invoices").status_code == 200
    assert client.get(f"{soft.p}/namespaces/sales%1Feu/views/summary").status_code == 200
    assert [e["id"] for e in soft.deleted()] == [separately]  # only what the namespace drop took came back
    assert soft.undrop(("table", separately)).status_code == 204

    # a namespace created under the same name in the meantime blocks the undrop, saying so
    assert client.delete(f"{soft.p}/namespaces/sales", params={"recursive": "true"}).status_code == 204
    soft.namespace("sales")
    taken = soft.undrop(("namespace", root))
    assert taken.status_code == 409 and "name is now taken" in taken.json()["error"]["message"]


def test_force_deletes_a_namespace_tree_at_once_even_in_a_soft_warehouse(soft, client):
    soft.namespace("tmp")
    table_id = soft.table("tmp", "t")
    assert client.delete(f"{soft.p}/namespaces/tmp", params={"recursive": "true", "force": "true"}).status_code == 204
    assert soft.deleted() == []
    # The purger deletes the files, then records table.purged (so a crash in between purges again rather than
    # leaving files behind): the record is what says the purge is over, and the files are gone by then.
    wait_until(lambda: soft.history(table_id)[-1:] == ["table.purged"], 20, what="the purge of a force-dropped table")
    assert soft.history(table_id)[-3:] == ["table.dropped", "table.purge-started", "table.purged"]
    assert soft.files(table_id) == []


def test_expiry_deletes_for_good_and_purges_only_when_asked(client, warehouse):
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/delete-profile",
                    json={"delete-profile": {"type": "soft", "expiration-seconds": 2}})
    assert r.status_code == 200
    bin_ = Bin(client, warehouse)
    bin_.namespace("ns")
    purged, kept = bin_.table("ns", "purged"), bin_.table("ns", "kept")
    kept_files = bin_.files(kept)
    assert client.delete(f"{bin_.p}/namespaces/ns/tables/purged").status_code == 204
    assert client.delete(f"{bin_.p}/namespaces/ns/tables/kept", params={"purgeRequested": "false"}).status_code == 204
    assert len(bin_.deleted()) == 2 and bin_.files(purged), "nothing happens before the expiry"

    wait_until(lambda: bin_.deleted() == [], 20, what="both expiries")
    wait_until(lambda: not bin_.files(purged), 20, what="the purge")
    assert kept_files and all(f.exists() for f in kept_files)
    assert bin_.undrop(("table", purged)).status_code == 404
    wait_until(lambda: bin_.history(purged)[-1] == "table.purged", 20, what="the purge in the history")
    assert bin_.history(purged) == ["table.created", "table.dropped", "table.expired", "table.purge-started",
                                    "table.purged"]
    assert bin_.history(kept) == ["table.created", "table.dropped", "table.expired"]
    events = client.get(f"{bin_.management}/history", params={"tabular-id": purged}).json()["events"]
    assert events[2]["actor"] == "system" and "deletion is final" in events[2]["summary"]


def test_a_hard_drop_is_final_and_recorded(client, warehouse):
    bin_ = Bin(client, warehouse)
    bin_.namespace("ns")
    table_id = bin_.table("ns", "t")
    assert client.delete(f"{bin_.p}/namespaces/ns/tables/t").status_code == 204
    assert bin_.deleted() == []
    assert bin_.undrop(("table", table_id)).status_code == 404
    wait_until(lambda: not bin_.files(table_id), 20, what="the purge")
    wait_until(lambda: bin_.history(table_id)[-1] == "table.purged", 20, what="the purge in the history")


def test_a_warehouse_with_soft_deleted_tables_cannot_be_deleted(soft, client):
    soft.namespace("ns")
    soft.table("ns", "t")
    assert client.delete(f"{soft.p}/namespaces/ns", params={"recursive": "true"}).status_code == 204
    r = client.delete(soft.management)
    assert r.status_code == 409 and r.json()["error"]["type"] == "WarehouseHasUnfinishedTasks"


def test_the_deleted_list_pages(soft, client):
    soft.namespace("ns")
    ids = [soft.table("ns", f"t{i}") for i in range(5)]
    for i in range(5):
        assert client.delete(f"{soft.p}/namespaces/ns/tables/t{i}").status_code == 204
    seen, token = [], ""
    while token is not None:
        r = client.get(f"{soft.management}/deleted-tabulars", params={"pageSize": 2, "pageToken": token})
        assert r.status_code == 200
        body = r.json()
        assert len(body["tabulars"]) <= 2
        seen += [t["id"] for t in body["tabulars"]]
        token = body["next-page-token"]
    assert seen == ids


def test_concurrent_undrops_of_one_table_restore_it_once(soft, client):
    soft.namespace("ns")
    table_id = soft.table("ns", "t")
    assert client.delete(f"{soft.p}/namespaces/ns/tables/t").status_code == 204
    statuses = []

    def undrop():
        statuses.append(soft.undrop(("table", table_id)).status_code)

    threads = [threading.Thread(target=undrop) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses)[0] == 204 and statuses.count(204) == 1, statuses
    assert set(statuses) <= {204, 404}
    assert soft.history(table_id).count("table.undropped") == 1


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {},
        {"targets": "x"},
        {"targets": [{"type": "table"}]},
        {"targets": [{"type": "tablet", "id": str(uuid.uuid4())}]},
        {"targets": [{"type": "table", "id": "not-a-uuid"}]},
        {"targets": []},
        {"targets": [{"type": "table", "id": "00000000-0000-0000-0000-000000000001"}] * 2},
    ],
)
def test_bad_undrop_requests_are_400_and_append_nothing(soft, client, log_length, body):
    before = log_length()
    r = client.post(f"{soft.management}/deleted-tabulars/undrop", json=body)
    assert r.status_code == 400, r.text
    assert set(r.json()["error"]) >= {"message", "type", "code"}
    assert log_length() == before


@pytest.mark.parametrize("profile", [
    None, {}, {"type": "soft"}, {"type": "soft", "expiration-seconds": 0}, {"type": "soft", "expiration-seconds": -5},
    {"type": "soft", "expiration-seconds": "soon"}, {"type": "bin"}, {"type": "hard", "expiration-seconds": 5},
])
def test_bad_delete_profiles_are_400_and_append_nothing(client, warehouse, log_length, profile):
    before = log_length()
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/delete-profile", json={"delete-profile": profile})
    assert r.status_code == 400, r.text
    assert log_length() == before


def test_bad_listing_and_drop_parameters_are_400(soft, client, log_length):
    before = log_length()
    for params in ({"namespaceId": "x"}, {"pageSize": "0"}, {"pageToken": "garbage"}):
        assert client.get(f"{soft.management}/deleted-tabulars", params=params).status_code == 400
    soft.namespace("ns")
    start = log_length()
    for params in ({"recursive": "perhaps"}, {"force": "2"}, {"purge": "x"}):
        assert client.delete(f"{soft.p}/namespaces/ns", params=params).status_code == 400
    assert client.delete(f"{soft.p}/namespaces/ns/tables/x", params={"force": "maybe"}).status_code == 400
    assert log_length() == start and start > before
    assert client.get(f"/management/v1/warehouse/{uuid.uuid4()}/deleted-tabulars").status_code == 404


def test_force_without_recursive_overrides_protection_and_keeps_the_drop_soft(soft, client):
    ns_id = soft.namespace("kept")
    r = client.post(f"{soft.management}/namespace/{ns_id}/protection", json={"protected": True})
    assert r.status_code == 200
    assert client.delete(f"{soft.p}/namespaces/kept").status_code == 409
    assert client.delete(f"{soft.p}/namespaces/kept", params={"force": "true"}).status_code == 204
    assert client.get(f"{soft.p}/namespaces/kept").status_code == 404
    assert soft.undrop(("namespace", ns_id)).status_code == 204
    assert client.get(f"{soft.p}/namespaces/kept").json()["namespace-uuid"] == ns_id
    assert client.get(f"{soft.management}/namespace/{ns_id}/protection").json()["protected"] is True
