"""A warehouse's time-travel retention (Lakeledger's own setting): how long its tables' past stays readable, which
snapshot expiry run by the catalog's maintenance honours (tests/e2e/test_maintenance_expiry_safety.py). Set through
an endpoint of its own, recorded as an event only when it changes, and a bad value is a 400 that appends nothing;
read with what seeing the warehouse takes, set with what its other retention settings take (OpenFGA); rebuilt."""

import os
import subprocess
import sys
import uuid

import pytest
from support import event_count, openfga_api, signed_in

MANAGEMENT = "/management/v1/warehouse"


def _retention(warehouse_id: str) -> str:
    return f"{MANAGEMENT}/{warehouse_id}/time-travel-retention"


def test_the_retention_is_none_until_set_and_one_event_per_change(client, warehouse, log_length):
    path = _retention(warehouse["id"])
    assert client.get(path).json() == {"time-travel-retention": None}
    r = client.post(path, json={"time-travel-retention": "P7D"})
    assert r.status_code == 200 and r.json() == {"time-travel-retention": "P7D"}, r.text
    before = log_length()
    # the same week, spelt otherwise: nothing is recorded
    again = client.post(path, json={"time-travel-retention": "PT168H"})
    assert again.status_code == 200 and again.json() == {"time-travel-retention": "P7D"}
    assert log_length() == before
    r = client.post(path, json={"time-travel-retention": "PT36H"})
    assert r.json() == {"time-travel-retention": "P1DT12H"} and client.get(path).json() == r.json()
    assert client.post(path, json={"time-travel-retention": None}).json() == {"time-travel-retention": None}
    history = client.get(f"{MANAGEMENT}/{warehouse['id']}/history",
                         params={"type": "warehouse.time-travel-retention-set"}).json()["events"]
    assert [e["change"] for e in history] == [{"time_travel_retention": "P7D"}, {"time_travel_retention": "P1DT12H"},
                                              {"time_travel_retention": None}]
    assert "to P7D" in history[0]["summary"] and "removed the time-travel retention" in history[2]["summary"]
    # the warehouse's own answer keeps Lakekeeper's shape
    assert "time-travel-retention" not in client.get(f"{MANAGEMENT}/{warehouse['id']}").json()


@pytest.mark.parametrize("body", [{"time-travel-retention": "7 days"}, {"time-travel-retention": 7},
                                  {"time-travel-retention": "PT30M"}, {"time-travel-retention": "P40000D"},
                                  {"time-travel-retention": ""}, {"time-travel-retention": True}, {}])
def test_bad_values_are_400_and_append_nothing(client, warehouse, log_length, body):
    before = log_length()
    r = client.post(_retention(warehouse["id"]), json=body)
    assert r.status_code == 400 and r.json()["error"]["code"] == 400, r.text
    assert log_length() == before


def test_an_unknown_warehouse_is_404(client):
    unknown = _retention(str(uuid.uuid4()))
    assert client.get(unknown).status_code == 404
    assert client.post(unknown, json={"time-travel-retention": "P1D"}).status_code == 404


def test_a_rebuild_gives_the_same_retentions(client, warehouse, db, pg_url, data_dir):
    assert client.post(_retention(warehouse["id"]), json={"time-travel-retention": "P3D"}).status_code == 200

    def rows() -> list:
        return db.execute("SELECT id, time_travel_retention, time_travel_retention_set_at FROM ll_warehouses"
                          " ORDER BY id").fetchall()

    live = rows()
    assert (uuid.UUID(warehouse["id"]), "P3D") in {(r[0], r[1]) for r in live}
    env = {"LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert rows() == live


@pytest.fixture(scope="module")
def fga_api(oidc, openfga, pg_url, tmp_path_factory):
    with openfga_api(pg_url, tmp_path_factory, oidc, openfga, "retention") as server:
        yield server


def test_reading_takes_seeing_the_warehouse_and_setting_takes_modify(fga_api, oidc, tmp_path):
    with signed_in(fga_api, oidc, "spark") as spark:
        assert spark.post("/management/v1/bootstrap",
                          json={"accept-terms-of-use": True, "is-operator": True}).status_code == 204
        r = spark.post("/management/v1/project", json={"project-name": "retention"})
        project = r.json()["project-id"]
        r = spark.post(MANAGEMENT, json={"warehouse-name": "wh", "project-id": project,
                                         "storage-profile": {"type": "file", "location": f"file://{tmp_path}"}})
        assert r.status_code == 201, r.text
        path = _retention(r.json()["warehouse-id"])
        grants = f"{MANAGEMENT}/{r.json()['warehouse-id']}/grants"

        def grant(privilege: str) -> None:
            with signed_in(fga_api, oidc, "spark", project) as admin:
                assert admin.post(grants, json={"writes": [
                    {"privilege": privilege, "principal": {"user": "oidc~bob"}}]}).status_code == 204

        with signed_in(fga_api, oidc, "bob", project) as bob:
            assert bob.get(path).status_code in (403, 404)
            grant("describe")
            assert bob.get(path).json() == {"time-travel-retention": None}
            before = event_count(fga_api.database)
            refused = bob.post(path, json={"time-travel-retention": "P1D"})
            assert refused.status_code == 403, refused.text
            assert event_count(fga_api.database) == before
            grant("modify")
            r = bob.post(path, json={"time-travel-retention": "P1D"})
            assert r.status_code == 200 and r.json() == {"time-travel-retention": "P1D"}, r.text
