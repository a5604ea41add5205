"""updateTable's fast path (lakeledger/api/fast_commit.py) answers in front of the router: what it answers, and what it
hands to the route, must be what the route would answer, every layer around it (idempotency, time travel, request ids,
metrics) seeing it as it sees the route."""

import uuid

import pytest
from test_metrics import LOAD_TABLE as UPDATE_TABLE
from test_metrics import _samples, _value

APPEND = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}


def _events(db) -> int:
    return db.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def _error(r, status: int, type_: str) -> dict:
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert error["code"] == status and error["type"] == type_
    return error


@pytest.mark.parametrize("root", ["/catalog/v1", "/v1"])
def test_a_commit_is_answered_with_its_metadata_and_tag(client, table_factory, root):
    path = table_factory("fast", f"t_{uuid.uuid4().hex[:8]}")
    r = client.post(path.replace("/catalog/v1", root, 1), json=APPEND)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["metadata"]["properties"]["k"] == "v"
    assert r.headers["etag"] and r.headers["content-type"] == "application/json"
    loaded = client.get(path)
    assert loaded.json()["metadata-location"] == body["metadata-location"]
    assert loaded.headers["etag"] == r.headers["etag"]


@pytest.mark.parametrize("content, type_", [
    (b"{not json", "BadRequestException"),
    (b'{"requirements": [], "updates": "set everything"}', "BadRequestException"),
    (b'{"requirements": [{"type": "assert-nothing-known"}], "updates": []}', "IllegalArgumentException"),
    (b"[]", "BadRequestException"),
])
def test_a_malformed_commit_gets_the_routes_400_and_appends_nothing(client, table_factory, db, content, type_):
    path = table_factory("fast_bad", f"t_{uuid.uuid4().hex[:8]}")
    before = _events(db)
    _error(client.post(path, content=content, headers={"content-type": "application/json"}), 400, type_)
    assert _events(db) == before


def test_a_body_sent_as_another_type_goes_to_the_route(client, table_factory, db):
    path = table_factory("fast_type", f"t_{uuid.uuid4().hex[:8]}")
    before = _events(db)
    r = client.post(path, content=b'{"requirements": [], "updates": []}', headers={"content-type": "text/plain"})
    assert 400 <= r.status_code < 500 and r.json()["error"]["code"] == r.status_code
    assert _events(db) == before


def test_errors_are_the_apps_error_models(client, warehouse, table_factory, db):
    path = table_factory("fast_err", f"t_{uuid.uuid4().hex[:8]}")
    before = _events(db)
    _error(client.post(path + "_missing", json=APPEND), 404, "NoSuchTableException")
    _error(client.post(f"/catalog/v1/{uuid.uuid4()}/namespaces/fast_err/tables/t", json=APPEND), 404,
           "NoSuchWarehouseException")
    stale = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}], "updates": []}
    _error(client.post(path, json=stale), 409, "CommitFailedException")
    _error(client.post(path, json={"requirements": [], "updates": [{"action": "upgrade-format-version",
                                                                     "format-version": 1}]}),
           400, "IllegalArgumentException")
    assert _events(db) == before


def test_a_retried_commit_with_an_idempotency_key_is_applied_once(client, table_factory, db):
    path = table_factory("fast_once", f"t_{uuid.uuid4().hex[:8]}")
    key = str(uuid.uuid4())
    before = _events(db)
    first = client.post(path, json=APPEND, headers={"Idempotency-Key": key})
    applied = _events(db)
    again = client.post(path, json=APPEND, headers={"Idempotency-Key": key})
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json()
    assert applied > before and _events(db) == applied


def test_a_commit_carries_the_request_id_and_the_caller_into_the_history(client, warehouse, table_factory):
    name = f"t_{uuid.uuid4().hex[:8]}"
    path = table_factory("fast_who", name)
    request_id = f"req-{uuid.uuid4().hex[:8]}"
    r = client.post(path, json=APPEND, headers={"x-request-id": request_id})
    assert r.status_code == 200 and r.headers["x-request-id"] == request_id
    history = client.get(f"/management/v1/warehouse/{warehouse['id']}/history").json()["events"]
    [committed] = [e for e in history if e["request-id"] == request_id]
    assert committed["actor"] == "anonymous" and committed["entity"]["name"][-1] == name


def test_a_past_prefix_refuses_a_commit(client, warehouse, table_factory, db):
    path = table_factory("fast_past", f"t_{uuid.uuid4().hex[:8]}")
    before = _events(db)
    past = path.replace(warehouse["id"], f"{warehouse['id']}@1", 1)
    r = client.post(past, json=APPEND)
    assert r.status_code in (400, 403) and r.json()["error"]["code"] == r.status_code
    assert _events(db) == before


def test_commits_are_counted_under_the_route_template(client, table_factory):
    path = table_factory("fast_metrics", f"t_{uuid.uuid4().hex[:8]}")
    before = _samples(client)
    for _ in range(3):
        assert client.post(path, json=APPEND).status_code == 200
    assert client.post(path + "_missing", json=APPEND).status_code == 404
    after = _samples(client)

    def delta(status):
        labels = {"method": "POST", "route": UPDATE_TABLE, "status": status}
        return _value(after, "lakeledger_http_requests_total", **labels) - \
            _value(before, "lakeledger_http_requests_total", **labels)

    assert delta("200") == 3 and delta("404") == 1
