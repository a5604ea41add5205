"""Read-only maintenance mode (Lakekeeper 0.12.3): switched on and off by POST /management/v1/maintenance-mode, each
switch an event with its actor and request id; while on, every write answers 503 MaintenanceModeError with
Retry-After and appends nothing, and reads go on."""

import time
import uuid

import httpx
import pytest
from support import SCHEMA, Server


@pytest.fixture
def read_only(client):
    def switch(mode: str, **headers) -> dict:
        r = client.post("/management/v1/maintenance-mode", json={"mode": mode}, headers=headers)
        assert r.status_code == 200, r.text
        return r.json()
    yield switch
    switch("off")  # the session's server serves every later test


def _refused(r) -> None:
    assert r.status_code == 503, (r.request.method, r.request.url, r.text)
    assert r.headers["retry-after"] == "60"
    assert r.json()["error"] == {"message": r.json()["error"]["message"], "type": "MaintenanceModeError",
                                 "code": 503}


def test_writes_are_refused_and_reads_served_while_read_only(client, warehouse, read_only, log_length):
    p = warehouse["prefix"]
    assert client.post(f"{p}/namespaces", json={"namespace": ["m"]}).status_code == 200
    r = client.post(f"{p}/namespaces/m/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code == 200, r.text
    table = r.json()["metadata"]["table-uuid"]
    request_id = str(uuid.uuid4())
    assert read_only("read-only", **{"x-request-id": request_id}) == {
        "mode": "read-only", "recorded": "read-only", "setting": "off"}
    before = log_length()
    _refused(client.post(f"{p}/namespaces", json={"namespace": ["n"]}))
    _refused(client.post(f"{p}/namespaces/m/tables/t", json={  # the fast commit path too
        "requirements": [{"type": "assert-table-uuid", "uuid": table}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}))
    _refused(client.delete(f"{p}/namespaces/m/tables/t"))
    _refused(client.post("/management/v1/project", json={"project-name": "no"}))
    _refused(client.post(f"/management/v1/warehouse/{warehouse['id']}/rename", json={"new-name": "no"}))
    assert log_length() == before
    assert client.get(f"{p}/namespaces/m/tables/t").status_code == 200
    assert client.get(f"/management/v1/warehouse/{warehouse['id']}").status_code == 200
    assert client.get("/management/v1/maintenance-mode").json()["mode"] == "read-only"
    assert client.get("/health").status_code == 200
    assert client.post(f"{p}/events", json={"page-size": 1}).status_code == 200  # a read, by POST
    tasks = f"/management/v1/warehouse/{warehouse['id']}/task"
    assert client.post(f"{tasks}/list", json={}).status_code == 200  # a read, by POST
    _refused(client.post(f"{tasks}/control", json={"action": {"action-type": "cancel"}, "task-ids": []}))

    events = [e for t in ("maintenance-mode.started", "maintenance-mode.switched")
              for e in client.get("/management/v1/history", params={"type": t}).json()["events"]]
    [on] = [e for e in events if e["request-id"] == request_id]
    assert on["change"]["read_only"] is True and on["actor"] == "anonymous"

    assert read_only("off")["mode"] == "off"
    assert client.post(f"{p}/namespaces", json={"namespace": ["n"]}).status_code == 200


def test_a_switch_that_changes_nothing_records_nothing(client, read_only, log_length):
    before = log_length()
    assert read_only("off")["mode"] == "off"
    assert log_length() == before
    r = client.post("/management/v1/maintenance-mode", json={"mode": "maybe"})
    assert r.status_code == 400, r.text


def _poll(check, attempts: int = 200) -> bool:
    for _ in range(attempts):
        if check():
            return True
        time.sleep(0.05)
    return False


def test_every_process_follows_a_switch_and_the_setting_holds_it_on(database, tmp_path):
    servers: list[Server] = []

    def start(name: str, **env: str) -> Server:
        (tmp_path / name).mkdir()
        servers.append(Server(database, tmp_path / name, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="2",
                              **env))
        return servers[-1]

    try:
        first, second, held = start("a"), start("b"), start("c", LAKELEDGER__MAINTENANCE_MODE="read-only")
        with httpx.Client(base_url=first.url) as a, httpx.Client(base_url=second.url) as b, \
                httpx.Client(base_url=held.url) as c:
            project = {"project-name": "p"}
            _refused(c.post("/management/v1/project", json=project))
            assert c.get("/management/v1/maintenance-mode").json() == {
                "mode": "read-only", "recorded": "off", "setting": "read-only"}
            assert a.post("/management/v1/maintenance-mode", json={"mode": "read-only"}).status_code == 200
            # the other process reads the switch from the read model
            assert _poll(lambda: b.get("/management/v1/maintenance-mode").json()["mode"] == "read-only")
            _refused(b.post("/management/v1/project", json=project))
            assert a.post("/management/v1/maintenance-mode", json={"mode": "off"}).status_code == 200
            assert _poll(lambda: b.get("/management/v1/maintenance-mode").json()["mode"] == "off")
            assert b.post("/management/v1/project", json=project).status_code == 201
            # the setting holds its process read-only whatever the log says
            assert _poll(lambda: c.get("/management/v1/maintenance-mode").json()["recorded"] == "off")
            _refused(c.post("/management/v1/project", json=project))
    finally:
        for server in servers:
            server.stop()
