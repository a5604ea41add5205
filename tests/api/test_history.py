"""The audit history API against a real server and Postgres: entries and their sentences, filters, keyset paging,
an entity followed by id across a rename and a drop, the server-level history, bad input refused without
touching the log, and a rebuild of the history read model giving identical rows."""

import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from support import SCHEMA

from lakeledger.bootstrap import Container
from lakeledger.eventstore.identity import event_id
from lakeledger.settings import Settings


def _history(client, warehouse, **params):
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/history", params=params)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"events", "next-page-token"}
    return body


def _snapshot(snapshot_id, files, rows, operation="append"):
    return {"action": "add-snapshot", "snapshot": {
        "snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": int(time.time() * 1000),
        "manifest-list": f"file:///nowhere/snap-{snapshot_id}.avro", "schema-id": 0,
        "summary": {"operation": operation, "added-data-files": str(files), "added-records": str(rows)}}}


def _commit(client, path, *updates, headers=None):
    r = client.post(path, json={"requirements": [], "updates": list(updates)}, headers=headers or {})
    assert r.status_code == 200, r.text


@pytest.fixture
def story(client, warehouse):
    """sales.big: created, appended to, a column added, properties set, renamed to sales.large, dropped; and
    a second table in another namespace."""
    p = warehouse["prefix"]
    for ns in (["sales"], ["ops"]):
        assert client.post(f"{p}/namespaces", json={"namespace": ns}).status_code == 200
    created = client.post(f"{p}/namespaces/sales/tables", json={"name": "big", "schema": SCHEMA},
                          headers={"x-request-id": "req-create-big"})
    assert created.status_code == 200, created.text
    table_id = created.json()["metadata"]["table-uuid"]
    path = f"{p}/namespaces/sales/tables/big"
    _commit(client, path, _snapshot(8123, 2, 1000), {"action": "set-snapshot-ref", "ref-name": "main",
                                                     "type": "branch", "snapshot-id": 8123})
    _commit(client, path, {"action": "add-schema", "schema": {"type": "struct", "schema-id": 1, "fields": [
        *SCHEMA["fields"], {"id": 3, "name": "note", "type": "string", "required": False}]}},
            {"action": "set-current-schema", "schema-id": -1})
    _commit(client, path, {"action": "set-properties", "updates": {"b": "2", "a": "1"}})
    r = client.post(f"{p}/tables/rename", json={"source": {"namespace": ["sales"], "name": "big"},
                                                "destination": {"namespace": ["sales"], "name": "large"}})
    assert r.status_code == 204, r.text
    r = client.delete(f"{p}/namespaces/sales/tables/large", params={"purgeRequested": "false"})
    assert r.status_code == 204, r.text
    other = client.post(f"{p}/namespaces/ops/tables", json={"name": "jobs", "schema": SCHEMA})
    assert other.status_code == 200, other.text
    return {"table_id": table_id, "other_id": other.json()["metadata"]["table-uuid"]}


def test_entries_say_who_changed_what_and_follow_the_table_by_id(client, warehouse, story, db):
    events = _history(client, warehouse)["events"]
    summaries = [e["summary"] for e in events]
    assert summaries == [
        f"created warehouse {warehouse['name']}",
        "created namespace sales",
        "created namespace ops",
        "created table sales.big",
        "appended snapshot 8123: +2 files, +1,000 rows",
        "added column note (string)",
        "set properties a, b",
        "renamed sales.big to sales.large",
        "dropped table sales.large",
        "created table ops.jobs",
    ]
    # positions, ids and types are the log's own
    rows = db.execute("SELECT notification_id, originator_id, originator_version, appended_at FROM lakeledger_events"
                      " WHERE notification_id = ANY(%s) ORDER BY notification_id",
                      ([e["sequence"] for e in events],)).fetchall()
    assert [e["sequence"] for e in events] == [r[0] for r in rows]
    assert [e["id"] for e in events] == [str(event_id(r[1], r[2])) for r in rows]
    # the time is when the event entered the log (its append time), so it follows the log's order
    times = [datetime.fromisoformat(e["time"]) for e in events]
    assert times == [r[3] for r in rows] and times == sorted(times)
    assert [e["type"] for e in events[3:]] == ["table.created", "table.committed", "table.committed",
                                               "table.committed", "table.renamed", "table.dropped", "table.created"]

    created = events[3]
    assert created["actor"] == "anonymous" and created["request-id"] == "req-create-big"
    assert created["entity"] == {"type": "table", "id": story["table_id"], "name": ["sales", "big"]}
    assert created["warehouse-id"] == warehouse["id"]
    assert created["change"]["name"] == "big" and created["change"]["namespace"] == ["sales"]
    assert datetime.fromisoformat(created["time"]).tzinfo is not None
    appended = events[4]
    assert appended["change"]["updates"][0]["snapshot"]["snapshot-id"] == 8123

    # one table, by id, under the name it had at each moment
    followed = _history(client, warehouse, **{"tabular-id": story["table_id"]})["events"]
    assert [e["entity"]["name"] for e in followed] == [["sales", "big"]] * 4 + [["sales", "large"]] * 2
    assert {e["entity"]["id"] for e in followed} == {story["table_id"]}
    assert followed[-1]["change"]["purge_requested"] is False


def test_filters(client, warehouse, story):
    by_namespace = _history(client, warehouse, namespace="ops")["events"]
    assert [e["summary"] for e in by_namespace] == ["created namespace ops", "created table ops.jobs"]
    assert {e["entity"]["id"] for e in _history(client, warehouse, namespace="sales")["events"]} >= {story["table_id"]}

    renames = _history(client, warehouse, type="table.renamed")["events"]
    assert [e["summary"] for e in renames] == ["renamed sales.big to sales.large"]
    assert _history(client, warehouse, actor="someone-else")["events"] == []
    assert len(_history(client, warehouse, actor="anonymous")["events"]) == 10

    everything = _history(client, warehouse)["events"]
    middle = datetime.fromisoformat(everything[5]["time"])
    since = _history(client, warehouse, since=middle.isoformat())["events"]
    until = _history(client, warehouse, until=middle.isoformat())["events"]
    assert since and all(datetime.fromisoformat(e["time"]) >= middle for e in since)
    assert all(datetime.fromisoformat(e["time"]) < middle for e in until)
    assert len(since) + len(until) == len(everything)
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _history(client, warehouse, since=future)["events"] == []


def test_keyset_pages_cover_the_history_once_in_order(client, warehouse, story):
    everything = _history(client, warehouse)["events"]
    seen, token = [], ""
    while True:
        body = _history(client, warehouse, pageToken=token, pageSize=3)
        assert len(body["events"]) <= 3
        seen.extend(body["events"])
        token = body["next-page-token"]
        if token is None:
            break
    assert seen == everything
    # paging composes with filters; without pageToken the first page comes back
    first = _history(client, warehouse, pageSize=2, **{"tabular-id": story["table_id"]})
    assert len(first["events"]) == 2 and first["next-page-token"]


def test_a_write_is_in_the_history_as_soon_as_it_is_answered(client, second_server, warehouse):
    p = warehouse["prefix"]
    with __import__("httpx").Client(base_url=second_server.url, timeout=60) as other:
        assert other.post(f"{p}/namespaces", json={"namespace": ["fresh"]}).status_code == 200
    assert _history(client, warehouse, type="namespace.created")["events"][-1]["entity"]["name"] == ["fresh"]


def test_server_history(client):
    since = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()  # other tests' events come before
    name = f"hist-{uuid.uuid4().hex[:8]}"
    created = client.post("/management/v1/project", json={"project-name": name}, headers={"x-request-id": "rq-p"})
    assert created.status_code == 201
    project_id = created.json()["project-id"]
    assert client.post("/management/v1/project/rename", json={"new-name": name + "-2"},
                       headers={"x-project-id": project_id}).status_code == 200
    r = client.get("/management/v1/history", params={"type": "project.renamed", "pageSize": 1000})
    assert r.status_code == 200, r.text
    mine = [e for e in r.json()["events"] if e["entity"]["id"] == project_id]
    assert [e["summary"] for e in mine] == [f"renamed project {name} to {name}-2"]
    assert mine[0]["entity"] == {"type": "project", "id": project_id, "name": [name + "-2"]}
    every = client.get("/management/v1/history", params={"pageSize": 1000, "since": since}).json()["events"]
    assert {e["entity"]["type"] for e in every} <= {"server", "project", "warehouse", "user", "role", "grant"}
    assert any(e["entity"]["id"] == project_id and e["request-id"] == "rq-p" for e in every)


def test_a_deleted_warehouse_keeps_its_history(client, tmp_path):
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"gone-{uuid.uuid4().hex[:8]}",
        "storage-profile": {"type": "file", "location": f"file://{tmp_path}/gone"}})
    warehouse_id = r.json()["warehouse-id"]
    assert client.delete(f"/management/v1/warehouse/{warehouse_id}").status_code == 204
    events = client.get(f"/management/v1/warehouse/{warehouse_id}/history").json()["events"]
    assert [e["type"] for e in events] == ["warehouse.created", "warehouse.deleted"]


@pytest.mark.parametrize("params", [
    {"since": "yesterday"},
    {"until": "2026-11-01"},  # a date is not a date-time
    {"since": "2026-11-01T00:00:00"},  # no offset
    {"since": "2026-11-02T00:00:00Z", "until": "2026-11-01T00:00:00Z"},
    {"color": "blue"},
    {"tabular-id": "not-a-uuid"},
    {"pageSize": "0"},
    {"pageSize": "many", "pageToken": ""},
    {"pageToken": "garbage!"},
    {"namespace": ""},
])
def test_bad_input_is_refused(client, warehouse, log_length, params):
    before = log_length()
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/history", params=params)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    # a malformed name is an invalid argument, as in Iceberg's reference server
    assert error["type"] in ("BadRequestException", "IllegalArgumentException") and error["code"] == 400
    assert error["message"] and log_length() == before


def test_unknown_warehouses_and_server_filters(client, log_length):
    before = log_length()
    for warehouse_id in (str(uuid.uuid4()), "nope"):
        r = client.get(f"/management/v1/warehouse/{warehouse_id}/history")
        assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchWarehouseException"
    r = client.get("/management/v1/history", params={"namespace": "sales"})
    assert r.status_code == 400 and "namespace" in r.json()["error"]["message"]
    assert log_length() == before


def test_rebuild_gives_identical_rows(client, warehouse, story, db, pg_url, data_dir):
    _history(client, warehouse)  # caught up
    snapshot = "SELECT * FROM {} ORDER BY 1"
    before = {t: db.execute(snapshot.format(t)).fetchall() for t in ("ll_history", "ll_history_entities")}
    assert before["ll_history"]
    container = Container(Settings(pg_url=pg_url, data_dir=data_dir))
    try:
        container.history_view.rebuild()
    finally:
        container.close()
    after = {t: db.execute(snapshot.format(t)).fetchall() for t in ("ll_history", "ll_history_entities")}
    # rows appended meanwhile by other tests may be at the end; every earlier row is unchanged
    for table, rows in before.items():
        again = {r[0]: r for r in after[table]}
        assert [again.get(r[0]) for r in rows] == rows


def test_nul_characters_in_client_data_are_refused_and_the_history_goes_on(client, warehouse, table_factory):
    """Postgres cannot store NUL in text: a request carrying one is refused at the edge (docs/input-validation.md),
    so no event the history could not take is ever appended."""
    path = table_factory("nul", "t")
    before = _history(client, warehouse)["events"][-1]
    r = client.post(path, json={"requirements": [], "updates": [{"action": "set-properties",
                                                                 "updates": {"a\x00b": "v\x00"}}]})
    assert r.status_code == 400 and "NUL" in r.json()["error"]["message"], r.text
    _commit(client, path, {"action": "set-properties", "updates": {"a": "v"}})
    events = _history(client, warehouse)["events"]
    assert events[-2] == before and events[-1]["summary"] == "set properties a"


def test_numbers_beyond_64_bits_are_refused_and_extra_members_kept(client, warehouse, table_factory):
    """The catalog records a client's updates as sent, extra members included; an integer no Iceberg client could
    read back (beyond 64 bits) is refused at the edge."""
    path = table_factory("big", "t")
    r = client.post(path, json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"},
                                                                 "extra": 2**70}]})
    assert r.status_code == 400 and "64-bit" in r.json()["error"]["message"], r.text
    largest = 2**63 - 1
    _commit(client, path, {"action": "set-properties", "updates": {"k": "v"}, "extra": largest})
    last = _history(client, warehouse)["events"][-1]
    assert last["summary"] == "set properties k" and last["change"]["updates"][0]["extra"] == largest
