"""A warehouse's time-travel retention (Lakeledger's own setting): how long its tables' past stays readable, which
snapshot expiry run by the catalog's maintenance honours (tests/e2e/test_maintenance_expiry_safety.py). Set through
an endpoint of its own, recorded as an event only when it changes, and a bad value is a 400 that appends nothing."""

import uuid

import pytest

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
