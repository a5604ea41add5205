"""The change-approval hook against a real HTTP endpoint run by the test: what it is sent, approvals that let
drops and commits through, refusals that stop them (403 naming the reason, log unchanged), and an endpoint
that fails, babbles, is too slow or is not there at all (424, nothing appended)."""

import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import ForbiddenError
from support import SCHEMA, Server, free_port

APPROVE = (200, b'{"approved": true}')


class ApprovalEndpoint:
    """An approval service on a free port: keeps every proposed change it is sent and answers with
    ``rule(change) -> (status, body bytes)``, or sleeps ``delay`` seconds first."""

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/approve"
        self.received: list[dict] = []
        self.rule = lambda change: APPROVE
        self.delay = 0.0
        self._httpd = None
        self.start()

    def start(self) -> None:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                change = json.loads(raw)
                endpoint.received.append(change)
                time.sleep(endpoint.delay)
                status, body = endpoint.rule(change)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # keep pytest output for failures
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def refuse_when(predicate, reason: str):
    body = json.dumps({"approved": False, "reason": reason}).encode()
    return lambda change: (200, body) if predicate(change) else APPROVE


@pytest.fixture(scope="module")
def endpoint():
    e = ApprovalEndpoint()
    yield e
    e.stop()


@pytest.fixture(scope="module")
def hooked_server(pg_url, data_dir, endpoint):
    s = Server(pg_url, data_dir, LAKELEDGER__CHANGE_APPROVAL_URL=endpoint.url,
               LAKELEDGER__CHANGE_APPROVAL_TIMEOUT_SECONDS="2")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def hooked(hooked_server):
    with httpx.Client(base_url=hooked_server.url, timeout=60) as c:
        yield c


@pytest.fixture
def events(log_length):
    return log_length


@pytest.fixture
def wh(hooked, endpoint, tmp_path):
    """A fresh warehouse on the hooked server with namespace ns, table ns.t and view ns.v; the endpoint
    approves everything and has seen nothing when the test starts. Soft, so that no purge of an approved
    drop lands in the log while a later test counts its events."""
    endpoint.rule, endpoint.delay = (lambda change: APPROVE), 0.0
    name = f"wh-{uuid.uuid4().hex[:12]}"
    r = hooked.post("/management/v1/warehouse", json={
        "warehouse-name": name, "delete-profile": {"type": "soft", "expiration-seconds": 3600},
        "storage-profile": {"type": "file", "location": f"file://{tmp_path / 'warehouse'}"}})
    assert r.status_code == 201, r.text
    p = f"/catalog/v1/{r.json()['warehouse-id']}"
    assert hooked.post(f"{p}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    t = hooked.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert t.status_code == 200, t.text
    v = hooked.post(f"{p}/namespaces/ns/views", json={
        "name": "v", "schema": SCHEMA, "properties": {}, "view-version": {
            "version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000, "summary": {},
            "default-namespace": ["ns"], "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}})
    assert v.status_code == 200, v.text
    endpoint.received.clear()
    return {"id": r.json()["warehouse-id"], "prefix": p, "name": name,
            "table": f"{p}/namespaces/ns/tables/t", "view": f"{p}/namespaces/ns/views/v",
            "table_id": t.json()["metadata"]["table-uuid"], "metadata": t.json()["metadata"]}


def set_property(key: str, value: str) -> dict:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": {key: value}}]}


def assert_error(response, status: int, type_: str, *words: str) -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == status and error["type"] == type_
    for word in words:
        assert word in error["message"]


def test_approved_commit_and_drop_go_through_and_the_endpoint_sees_the_proposed_change(hooked, endpoint, wh):
    r = hooked.post(wh["table"], json=set_property("owner", "finance"), headers={"x-request-id": "req-commit-1"})
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["properties"]["owner"] == "finance"
    (commit,) = endpoint.received
    assert commit["action"] == "commit" and commit["entity-type"] == "table"
    assert commit["entity-id"] == wh["table_id"] and commit["warehouse-id"] == wh["id"]
    assert commit["name"] == ["ns", "t"] and commit["actor"] == "anonymous" and commit["request-id"] == "req-commit-1"
    assert commit["details"]["updates"] == [{"action": "set-properties", "updates": {"owner": "finance"}}]
    assert commit["details"]["requirements"] == []

    endpoint.received.clear()
    assert hooked.delete(wh["table"], headers={"x-request-id": "req-drop-1"}).status_code == 204
    assert hooked.get(wh["table"]).status_code == 404
    (drop,) = endpoint.received
    assert {k: drop[k] for k in ("action", "entity-type", "entity-id", "warehouse-id", "name", "request-id")} == {
        "action": "drop", "entity-type": "table", "entity-id": wh["table_id"], "warehouse-id": wh["id"],
        "name": ["ns", "t"], "request-id": "req-drop-1"}
    assert drop["actor"] == "anonymous" and "purge-requested" in drop["details"]


def test_refused_table_drop_is_a_403_naming_the_reason_and_appends_nothing(hooked, endpoint, wh, events):
    endpoint.rule = refuse_when(lambda c: c["action"] == "drop", "change freeze until Monday (TICKET-42)")
    before = events()
    assert_error(hooked.delete(wh["table"]), 403, "ChangeRefused", "change freeze until Monday (TICKET-42)")
    assert_error(hooked.delete(wh["table"], params={"purgeRequested": "true"}), 403, "ChangeRefused")
    assert hooked.get(wh["table"]).status_code == 200
    assert events() == before
    assert [c["action"] for c in endpoint.received] == ["drop", "drop"]


def test_refused_commit_leaves_metadata_and_log_unchanged(hooked, endpoint, wh, events):
    endpoint.rule = refuse_when(
        lambda c: any(u.get("action") == "set-properties" and "frozen" in u.get("updates", {})
                      for u in c["details"].get("updates", [])), "properties named frozen are reserved")
    before, metadata = events(), hooked.get(wh["table"]).json()["metadata"]
    refused = hooked.post(wh["table"], json=set_property("frozen", "yes"))
    # 403, not 409: Iceberg's Java client retries a 409 commit, it must give up on a refusal at once
    assert refused.status_code == 403
    assert_error(refused, 403, "ChangeRefused", "properties named frozen are reserved")
    assert hooked.get(wh["table"]).json()["metadata"] == metadata
    assert events() == before
    # other commits still pass
    assert hooked.post(wh["table"], json=set_property("thawed", "yes")).status_code == 200
    assert events() == before + 1


def test_pyiceberg_sees_a_refused_commit_as_forbidden(hooked_server, endpoint, wh, events):
    endpoint.rule = refuse_when(lambda c: c["action"] == "commit", "read-only table")
    catalog = RestCatalog("hooked", uri=f"{hooked_server.url}/catalog", warehouse=wh["name"])
    table = catalog.load_table("ns.t")
    before = events()
    with pytest.raises(ForbiddenError, match="read-only table"):
        table.transaction().set_properties(frozen="1").commit_transaction()
    assert events() == before
    assert len(endpoint.received) == 1  # refused once, not retried


def test_refused_namespace_and_view_drops(hooked, endpoint, wh, events):
    endpoint.rule = refuse_when(lambda c: c["action"] == "drop", "keep everything")
    before = events()
    ns = hooked.delete(f"{wh['prefix']}/namespaces/ns", params={"recursive": "true"})
    assert_error(ns, 403, "ChangeRefused", "keep everything")
    assert_error(hooked.delete(wh["view"]), 403, "ChangeRefused", "keep everything")
    assert events() == before
    assert hooked.get(wh["table"]).status_code == 200 and hooked.get(wh["view"]).status_code == 200
    namespace_drop, view_drop = endpoint.received
    assert namespace_drop["entity-type"] == "namespace" and namespace_drop["name"] == ["ns"]
    assert namespace_drop["details"]["recursive"] is True and namespace_drop["details"]["tabulars"] == 2
    assert view_drop["entity-type"] == "view" and view_drop["name"] == ["ns", "v"]


@pytest.mark.parametrize("answer", [(500, b'{"approved": true}'), (200, b"<html>yes</html>"),
                                    (200, b'{"approved": "yes"}'), (302, b"")])
def test_an_endpoint_without_a_verdict_is_a_424(hooked, endpoint, wh, events, answer):
    endpoint.rule = lambda change: answer
    before = events()
    assert_error(hooked.delete(wh["table"]), 424, "ChangeApprovalUnavailable")
    assert_error(hooked.post(wh["table"], json=set_property("a", "b")), 424, "ChangeApprovalUnavailable")
    assert hooked.get(wh["table"]).status_code == 200
    assert events() == before


def test_a_slow_or_absent_endpoint_is_a_424(hooked, endpoint, wh, events):
    before = events()
    endpoint.delay = 3.0  # longer than the 2 s the server waits
    assert_error(hooked.delete(wh["table"]), 424, "ChangeApprovalUnavailable", "could not be reached")
    endpoint.delay = 0.0
    endpoint.stop()  # nothing listens on the port any more
    try:
        assert_error(hooked.delete(wh["table"]), 424, "ChangeApprovalUnavailable", "could not be reached")
        assert_error(hooked.delete(wh["view"]), 424, "ChangeApprovalUnavailable")
    finally:
        endpoint.start()
    assert events() == before
    assert hooked.delete(wh["table"]).status_code == 204  # back, and approving


def test_without_a_hook_drops_just_work(client, table_factory):
    assert client.delete(table_factory()).status_code == 204
