"""Catalog time travel over HTTP against a real server: /config resolves <warehouse>@<instant> and
<warehouse>@seq:<n> to a read-only prefix, under which namespaces, tables and views list and load as
they were then; writes are refused and append nothing; bad instants and positions are 4xx."""

import time
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import pytest
from support import SCHEMA

VIEW_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000,
                "summary": {"engine-name": "test"}, "default-namespace": ["sales"],
                "representations": [{"type": "sql", "sql": "SELECT id FROM sales.big", "dialect": "spark"}]}


def _ok(r, status=200):
    assert r.status_code == status, r.text
    return r.json() if r.content else None


def _error(r, status, type_=None):
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == status and body["error"]["message"]
    if type_:
        assert body["error"]["type"] == type_, body
    return body["error"]["message"]


def _past(client, warehouse, when: str, root: str = "/catalog") -> str:
    """The path prefix /config hands out for ``warehouse@when``."""
    config = _ok(client.get(f"{root}/v1/config", params={"warehouse": f"{warehouse['name']}@{when}"}))
    return f"{root}/v1/{config['overrides']['prefix']}"


@pytest.fixture
def history(client, warehouse, db):
    """A warehouse with a recorded past: for each step, the log head and an instant just after it."""
    p = warehouse["prefix"]
    steps = {}

    def mark(step: str) -> None:
        # the step's events are in the log (their responses came back), so its head is read before the instant
        steps[step] = (db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0],
                       datetime.now(UTC))
        time.sleep(0.02)  # the next step's events are appended strictly after this instant

    mark("warehouse")
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["sales"], "properties": {"owner": "ann"}}))
    mark("namespace")
    created = _ok(client.post(f"{p}/namespaces/sales/tables", json={"name": "big", "schema": SCHEMA}))
    mark("created")
    committed = _ok(client.post(f"{p}/namespaces/sales/tables/big", json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}))
    mark("committed")
    _ok(client.post(f"{p}/namespaces/sales/views", json={
        "name": "v", "schema": VIEW_SCHEMA, "view-version": VIEW_VERSION, "properties": {}}))
    view = _ok(client.get(f"{p}/namespaces/sales/views/v"))
    mark("view")
    _ok(client.post(f"{p}/namespaces/sales/views/v", json={"updates": [
        {"action": "set-properties", "updates": {"comment": "second"}}]}))
    _ok(client.post(f"{p}/tables/rename", json={"source": {"namespace": ["sales"], "name": "big"},
                                                "destination": {"namespace": ["sales"], "name": "large"}}), 204)
    _ok(client.post(f"{p}/namespaces/sales/properties", json={"updates": {"owner": "bob"}, "removals": []}))
    mark("renamed")
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["tmp"]}))
    _ok(client.delete(f"{p}/namespaces/sales/tables/large", params={"purgeRequested": "false"}), 204)
    _ok(client.delete(f"{p}/namespaces/sales/views/v"), 204)
    _ok(client.post(f"{p}/namespaces/sales/tables", json={"name": "big", "schema": SCHEMA}))
    mark("dropped")
    _ok(client.delete(f"{p}/namespaces/tmp"), 204)
    mark("end")
    return {"steps": steps, "m1": created["metadata-location"], "m2": committed["metadata-location"],
            "view_m1": view["metadata-location"]}


def _tables(client, prefix, namespace="sales"):
    return [t["name"] for t in _ok(client.get(f"{prefix}/namespaces/{namespace}/tables"))["identifiers"]]


def _namespaces(client, prefix):
    return _ok(client.get(f"{prefix}/namespaces"))["namespaces"]


def _appended_by(db, instant: datetime) -> int:
    """The last log position appended at or before ``instant``, read straight from the log."""
    return db.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events WHERE appended_at <= %s",
                      (instant,)).fetchone()[0]


def test_config_encodes_the_position_and_lists_only_reads(client, warehouse, history, db):
    seq = history["steps"]["committed"][0]
    config = _ok(client.get("/catalog/v1/config", params={"warehouse": f"{warehouse['name']}@seq:{seq}"}))
    assert config["overrides"]["prefix"] == f"{warehouse['id']}@seq:{seq}"
    # reads only: scan planning's POSTs and DELETE plan (they change nothing) and metrics reports among them
    assert config["endpoints"] and all(e.startswith(("GET ", "HEAD ")) or e.endswith(("/metrics", "/plan", "/tasks",
                                                                                       "/plan/{plan-id}"))
                                       for e in config["endpoints"])
    # The warehouse id works as well as its name, and an instant resolves to the last event appended at or before
    # it: the step's own events and, as the log is shared, any worker's event (an earlier test's purge) appended
    # between the step and the instant, whatever that event's own timestamp says.
    # (Read from the log once the instant is resolved: no append can land at or before it after that.)
    for step in ("namespace", "created", "committed", "renamed", "end"):
        head, instant = history["steps"][step]
        got = [_ok(client.get("/catalog/v1/config", params={"warehouse": f"{ref}@{instant.isoformat()}"}))
               for ref in (warehouse["name"], warehouse["id"])]
        position = _appended_by(db, instant)
        assert position >= head, step
        assert [g["overrides"]["prefix"] for g in got] == [f"{warehouse['id']}@seq:{position}"] * 2, step
    # Z, a lowercase t and an unencoded "+" (read as a space) are RFC 3339 too
    instant = history["steps"]["created"][1]
    position = _appended_by(db, instant)
    zulu = instant.strftime("%Y-%m-%dt%H:%M:%S.%fZ")
    assert _past(client, warehouse, zulu).endswith(f"@seq:{position}")
    raw = client.get(f"/catalog/v1/config?warehouse={warehouse['name']}@{instant.isoformat()}")
    assert _ok(raw)["overrides"]["prefix"] == f"{warehouse['id']}@seq:{position}"


def test_listings_and_loads_are_those_of_then(client, warehouse, history):
    s = history["steps"]
    at = {step: _past(client, warehouse, f"seq:{s[step][0]}") for step in s}

    assert _namespaces(client, at["warehouse"]) == []
    assert _namespaces(client, at["namespace"]) == [["sales"]]
    assert _tables(client, at["namespace"]) == []
    assert _ok(client.get(f"{at['namespace']}/namespaces/sales"))["properties"] == {
        "location": f"{warehouse['location']}/sales", "owner": "ann"}

    assert _tables(client, at["created"]) == ["big"]
    assert _ok(client.get(f"{at['created']}/namespaces/sales/tables/big"))["metadata-location"] == history["m1"]
    committed = _ok(client.get(f"{at['committed']}/namespaces/sales/tables/big"))
    assert committed["metadata-location"] == history["m2"] and committed["metadata"]["properties"]["k"] == "v"
    assert client.head(f"{at['committed']}/namespaces/sales/tables/big").status_code == 204
    _error(client.get(f"{at['committed']}/namespaces/sales/tables/large"), 404, "NoSuchTableException")
    assert client.head(f"{at['committed']}/namespaces/sales/tables/large").status_code == 404

    # views: the first version, then gone after their drop
    assert [v["name"] for v in _ok(client.get(f"{at['view']}/namespaces/sales/views"))["identifiers"]] == ["v"]
    assert _ok(client.get(f"{at['view']}/namespaces/sales/views/v"))["metadata-location"] == history["view_m1"]
    assert client.head(f"{at['view']}/namespaces/sales/views/v").status_code == 204
    assert _ok(client.get(f"{at['renamed']}/namespaces/sales/views/v"))["metadata-location"] != history["view_m1"]
    _error(client.get(f"{at['dropped']}/namespaces/sales/views/v"), 404, "NoSuchViewException")

    # names of then: renamed, with the namespace's properties of then
    assert _tables(client, at["renamed"]) == ["large"]
    assert _ok(client.get(f"{at['renamed']}/namespaces/sales/tables/large"))["metadata-location"] == history["m2"]
    _error(client.get(f"{at['renamed']}/namespaces/sales/tables/big"), 404, "NoSuchTableException")
    assert _ok(client.get(f"{at['renamed']}/namespaces/sales"))["properties"] == {
        "location": f"{warehouse['location']}/sales", "owner": "bob"}

    # after the drop: a new table took the old name; the dropped one is gone, the namespace of then is listed
    assert _tables(client, at["dropped"]) == ["big"]
    assert _ok(client.get(f"{at['dropped']}/namespaces/sales/tables/big"))["metadata-location"] not in (
        history["m1"], history["m2"])
    assert _namespaces(client, at["dropped"]) == [["sales"], ["tmp"]]
    assert _namespaces(client, at["end"]) == [["sales"]]
    assert _namespaces(client, warehouse["prefix"]) == [["sales"]]
    _error(client.get(f"{at['end']}/namespaces/tmp"), 404, "NoSuchNamespaceException")
    assert client.head(f"{at['dropped']}/namespaces/tmp").status_code == 204

    # the live warehouse is untouched by all of this
    assert _tables(client, warehouse["prefix"]) == ["big"]


def test_the_past_is_the_same_on_every_route_form(client, warehouse, history):
    """The /v1 root alias, a percent-encoded "@", conditional loads and paged listings all see one state."""
    position = history["steps"]["committed"][0]
    past = _past(client, warehouse, f"seq:{position}", root="")
    assert past == f"/v1/{warehouse['id']}@seq:{position}"
    loaded = _ok(client.get(f"{past}/namespaces/sales/tables/big"))
    assert loaded["metadata-location"] == history["m2"]
    encoded = f"/catalog/v1/{quote(warehouse['id'] + '@seq:' + str(position), safe='')}"
    assert _ok(client.get(f"{encoded}/namespaces/sales/tables/big")) == loaded
    tag = client.get(f"{past}/namespaces/sales/tables/big").headers["etag"]
    assert client.get(f"{past}/namespaces/sales/tables/big", headers={"if-none-match": tag}).status_code == 304
    refs = _ok(client.get(f"{past}/namespaces/sales/tables/big", params={"snapshots": "refs"}))
    assert refs["metadata-location"] == history["m2"]

    at_dropped = _past(client, warehouse, f"seq:{history['steps']['dropped'][0]}")
    first = _ok(client.get(f"{at_dropped}/namespaces", params={"pageToken": "", "pageSize": 1}))
    assert first["namespaces"] == [["sales"]] and first["next-page-token"]
    second = _ok(client.get(f"{at_dropped}/namespaces",
                            params={"pageToken": first["next-page-token"], "pageSize": 1}))
    assert second["namespaces"] == [["tmp"]] and second["next-page-token"] is None


def test_every_write_to_the_past_is_refused_and_appends_nothing(client, warehouse, history, log_length):
    past = _past(client, warehouse, f"seq:{history['steps']['committed'][0]}")
    identifier = {"namespace": ["sales"], "name": "big"}
    writes = [
        ("POST", "/namespaces", {"namespace": ["other"]}),
        ("DELETE", "/namespaces/sales", None),
        ("POST", "/namespaces/sales/properties", {"updates": {"a": "b"}, "removals": []}),
        ("POST", "/namespaces/sales/tables", {"name": "new", "schema": SCHEMA}),
        ("POST", "/namespaces/sales/tables/big", {"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"k": "w"}}]}),
        ("DELETE", "/namespaces/sales/tables/big", None),
        ("POST", "/namespaces/sales/register", {"name": "again", "metadata-location": history["m1"]}),
        ("POST", "/tables/rename", {"source": identifier, "destination": {"namespace": ["sales"], "name": "x"}}),
        ("POST", "/transactions/commit", {"table-changes": [{"identifier": identifier, "requirements": [],
                                                             "updates": []}]}),
        ("POST", "/namespaces/sales/views", {"name": "w", "schema": VIEW_SCHEMA, "view-version": VIEW_VERSION}),
        ("POST", "/namespaces/sales/views/v", {"updates": []}),
        ("DELETE", "/namespaces/sales/views/v", None),
        ("POST", "/namespaces/sales/register-view", {"name": "w", "metadata-location": history["view_m1"]}),
        ("POST", "/views/rename", {"source": identifier, "destination": identifier}),
        ("PUT", "/namespaces", {}),
    ]
    before = log_length()
    for method, path, body in writes:
        for base in (past, past.replace("/catalog/v1/", "/v1/")):
            r = client.request(method, base + path, json=body)
            assert "read-only" in _error(r, 403, "ForbiddenException"), (method, path)
    assert log_length() == before
    # a metrics report changes no catalog object and engines send one after every scan of the past too: it is kept,
    # as a report of its own (one event, docs/metrics-reports.md)
    report = {"report-type": "scan-report", "table-name": "sales.big", "snapshot-id": -1, "filter": True,
              "schema-id": 0, "projected-field-ids": [1], "projected-field-names": ["id"], "metrics": {}}
    assert client.post(f"{past}/namespaces/sales/tables/big/metrics", json=report).status_code == 204
    assert log_length() == before + 1
    assert _tables(client, warehouse["prefix"]) == ["big"]


def test_bad_instants_positions_and_warehouses_are_4xx(client, warehouse, history, log_length):
    name, before = warehouse["name"], log_length()
    head = history["steps"]["end"][0]
    warehouse_created = history["steps"]["warehouse"][1] - timedelta(minutes=10)
    for when, status in [
        ("yesterday", 400), ("2026-13-01T00:00:00Z", 400), ("2026-11-01T00:00:00", 400), ("2026-11-01", 400),
        ("2026-11-01T25:00:00Z", 400), ("", 400), ("seq:", 400), ("seq:-1", 400), ("seq:1.5", 400),
        ("seq:abc", 400), (f"seq:{head + 10_000}", 400),
        ((datetime.now(UTC) + timedelta(days=1)).isoformat(), 400),
        (warehouse_created.isoformat(), 404), ("seq:0", 404), ("1970-01-01T00:00:00Z", 404),
    ]:
        r = client.get("/catalog/v1/config", params={"warehouse": f"{name}@{when}"})
        _error(r, status)
    _error(client.get("/catalog/v1/config", params={"warehouse": f"no-such-{name}@seq:1"}), 404,
           "NoSuchWarehouseException")
    wid = warehouse["id"]
    _error(client.get(f"/catalog/v1/{wid}@seq:{head + 10_000}/namespaces"), 400)
    _error(client.get(f"/catalog/v1/{wid}@seq:x/namespaces"), 400)
    _error(client.get(f"/catalog/v1/{wid}@2026-11-01T00:00:00Z/namespaces"), 400)
    _error(client.get("/catalog/v1/not-a-uuid@seq:1/namespaces"), 404, "NoSuchWarehouseException")
    # a position before the warehouse was created shows no warehouse
    _error(client.get(f"/catalog/v1/{wid}@seq:1/namespaces/sales/tables/big"), 404)
    _error(client.get(f"/catalog/v1/{wid}@seq:1/namespaces"), 404, "NoSuchWarehouseException")
    assert log_length() == before
