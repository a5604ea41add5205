"""Server-side scan planning end to end: pyiceberg 0.12 reads through the catalog's plans (planTableScan, plan tasks
fetched with fetchScanTasks) exactly the rows it reads when it plans itself, on a real server over HTTP with real
files; and the planning endpoints' answers for snapshots, incremental ranges, submitted plans, cancels, unknown ids
and bad requests.

A server of this module's own runs with small limits, so that few appends make a plan of plan tasks
(LAKELEDGER__SCAN_PLANNING_MANIFESTS_PER_TASK=2) or a submitted one (..._SUBMIT_ABOVE_MANIFESTS=4)."""

import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import (
    And,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    Not,
    NotEqualTo,
    Or,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType
from support import Server

ENCRYPTION_KEY = "lakeledger-tests-encryption-key"
PER_TASK = 2
SUBMIT_ABOVE = 4

SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType()),
                NestedField(3, "note", StringType()))
SPEC = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="region"))


@pytest.fixture(scope="module")
def planning_server(pg_url, tmp_path_factory):
    s = Server(pg_url, tmp_path_factory.mktemp("planning"), LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY,
               LAKELEDGER__WORKERS="off", LAKELEDGER__SCAN_PLANNING_MODE="server",
               LAKELEDGER__SCAN_PLANNING_MANIFESTS_PER_TASK=str(PER_TASK),
               LAKELEDGER__SCAN_PLANNING_SUBMIT_ABOVE_MANIFESTS=str(SUBMIT_ABOVE))
    yield s
    s.stop()


@pytest.fixture
def http(planning_server):
    with httpx.Client(base_url=planning_server.url, timeout=60) as c:
        yield c


@pytest.fixture
def wh(http, tmp_path):
    name = f"plan-{uuid.uuid4().hex[:12]}"
    response = http.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{tmp_path / 'wh'}"}})
    assert response.status_code == 201, response.text
    wid = response.json()["warehouse-id"]
    return {"name": name, "id": wid, "prefix": f"/catalog/v1/{wid}"}


def _catalog(server, wh, mode: str) -> RestCatalog:
    # pyiceberg takes the mode from /config's defaults; "client" set here overrides the server's "server"
    return RestCatalog(f"c-{mode}", uri=f"{server.url}/catalog", warehouse=wh["name"],
                       **({"scan-planning-mode": "client"} if mode == "client" else {}))


def _batch(first: int, count: int, region: str) -> pa.Table:
    ids = list(range(first, first + count))
    return pa.table({"id": pa.array(ids, pa.int64()), "region": pa.array([region] * count, pa.string()),
                     "note": pa.array([None if i % 3 == 0 else f"n{i}" for i in ids], pa.string())},
                    schema=SCHEMA.as_arrow())


def _table(server, wh, name: str, batches: list[pa.Table]):
    catalog = _catalog(server, wh, "client")
    catalog.create_namespace_if_not_exists("plans")
    table = catalog.create_table(f"plans.{name}", schema=SCHEMA, partition_spec=SPEC)
    for batch in batches:
        table.append(batch)
    return table


def _rows(table, row_filter=None, snapshot_id=None) -> list[tuple]:
    scan = table.scan(row_filter=row_filter, snapshot_id=snapshot_id) if row_filter is not None \
        else table.scan(snapshot_id=snapshot_id)
    return sorted(tuple(r.values()) for r in scan.to_arrow().to_pylist())


FILTERS = [
    None,
    EqualTo("region", "eu"),
    GreaterThan("id", 25),
    And(EqualTo("region", "us"), LessThan("id", 35)),
    Or(EqualTo("region", "ap"), GreaterThanOrEqual("id", 58)),
    In("region", {"eu", "ap"}),
    IsNull("note"),
    Not(EqualTo("region", "eu")),
    NotEqualTo("id", 3),
    EqualTo("region", "nowhere"),
]


def _plan(http, wh, table: str, body: dict, **headers) -> httpx.Response:
    return http.post(f"{wh['prefix']}/namespaces/plans/tables/{table}/plan", json=body, headers=headers)


def _ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def _error(response: httpx.Response, code: int, type_: str) -> str:
    assert response.status_code == code, response.text
    error = response.json()["error"]
    assert error["type"] == type_ and error["code"] == code, error
    return error["message"]


def test_config_and_load_table_tell_clients_to_plan_on_the_server(http, wh, planning_server):
    config = _ok(http.get("/catalog/v1/config", params={"warehouse": wh["name"]}))
    assert config["defaults"]["scan-planning-mode"] == "server"
    for endpoint in ("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan",
                     "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
                     "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan/{plan-id}",
                     "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/tasks"):
        assert endpoint in config["endpoints"]
    _table(planning_server, wh, "cfg", [_batch(0, 3, "eu")])
    for _ in range(2):  # the route, then the fast path (its metadata now cached)
        loaded = _ok(http.get(f"{wh['prefix']}/namespaces/plans/tables/cfg"))
        assert loaded["config"]["scan-planning-mode"] == "server"


def test_the_default_server_keeps_client_planning(client, warehouse, table_factory):
    config = _ok(client.get("/catalog/v1/config", params={"warehouse": warehouse["name"]}))
    assert "scan-planning-mode" not in config["defaults"]
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan" in config["endpoints"]
    table_factory()
    assert "scan-planning-mode" not in _ok(client.get(f"{warehouse['prefix']}/namespaces/ns/tables/t"))["config"]


def test_pyiceberg_reads_the_same_rows_through_server_planning(http, wh, planning_server):
    """One append per region (three data manifests, more than PER_TASK): the plans answer plan tasks, which
    pyiceberg fetches; every filter gives the rows client planning gives."""
    _table(planning_server, wh, "orders", [_batch(0, 20, "eu"), _batch(20, 20, "us"), _batch(40, 20, "ap")])
    server_side = _catalog(planning_server, wh, "server").load_table("plans.orders")
    client_side = _catalog(planning_server, wh, "client").load_table("plans.orders")
    assert server_side.scan()._should_use_server_side_planning()
    assert not client_side.scan()._should_use_server_side_planning()
    for row_filter in FILTERS:
        expected = _rows(client_side, row_filter)
        assert _rows(server_side, row_filter) == expected, row_filter
    assert len(_rows(server_side)) == 60

    answer = _ok(_plan(http, wh, "orders", {}))
    assert answer["status"] == "completed" and answer["plan-id"]
    assert "file-scan-tasks" not in answer and len(answer["plan-tasks"]) == 2  # 3 manifests, 2 per task
    files = []
    for task in answer["plan-tasks"]:
        fetched = _ok(http.post(f"{wh['prefix']}/namespaces/plans/tables/orders/tasks", json={"plan-task": task}))
        files += [t["data-file"] for t in fetched["file-scan-tasks"]]
    assert sorted(f["partition"][0] for f in files) == ["ap", "eu", "us"]
    assert sum(f["record-count"] for f in files) == 60


def test_filters_prune_files_and_leave_residuals(http, wh, planning_server):
    _table(planning_server, wh, "pruned", [_batch(0, 10, "eu"), _batch(10, 10, "us")])
    answer = _ok(_plan(http, wh, "pruned", {"filter": {"type": "and",
                                                       "left": {"type": "eq", "term": "region", "value": "us"},
                                                       "right": {"type": "gt", "term": "id", "value": 15}}}))
    [task] = answer["file-scan-tasks"]
    assert task["data-file"]["partition"] == ["us"] and task["data-file"]["file-format"] == "parquet"
    # the partition predicate is settled by the partition; what is left for the rows is id > 15
    assert task["residual-filter"] == {"type": "gt", "term": "id", "value": 15}
    # column statistics only when asked for, and only of the fields asked for
    assert "lower-bounds" not in task["data-file"]
    stats = _ok(_plan(http, wh, "pruned", {"filter": {"type": "eq", "term": "region", "value": "eu"},
                                           "stats-fields": ["id"]}))["file-scan-tasks"][0]["data-file"]
    assert stats["lower-bounds"] == {"keys": [1], "values": [0]}
    assert stats["upper-bounds"] == {"keys": [1], "values": [9]}
    assert stats["value-counts"] == {"keys": [1], "values": [10]}
    # a filter that matches nothing: nothing to read
    assert _ok(_plan(http, wh, "pruned", {"filter": {"type": "lt", "term": "id", "value": 0}}))[
        "file-scan-tasks"] == []


def test_a_snapshot_scan_and_an_incremental_range(http, wh, planning_server):
    table = _table(planning_server, wh, "history", [_batch(0, 5, "eu"), _batch(5, 5, "us"), _batch(10, 5, "eu")])
    first, second, third = [s.snapshot_id for s in table.metadata.snapshots]
    server_side = _catalog(planning_server, wh, "server").load_table("plans.history")
    client_side = _catalog(planning_server, wh, "client").load_table("plans.history")
    for snapshot_id in (first, second):
        assert _rows(server_side, snapshot_id=snapshot_id) == _rows(client_side, snapshot_id=snapshot_id)
    assert len(_rows(server_side, snapshot_id=first)) == 5

    # (first, third]: what the second and third appends added, and nothing of the first
    answer = _ok(_plan(http, wh, "history", {"start-snapshot-id": first, "end-snapshot-id": third}))
    assert sorted(t["data-file"]["record-count"] for t in answer["file-scan-tasks"]) == [5, 5]
    added = {t["data-file"]["file-path"] for t in answer["file-scan-tasks"]}
    at_first = {t["data-file"]["file-path"] for t in _ok(_plan(http, wh, "history", {"snapshot-id": first}))[
        "file-scan-tasks"]}
    assert not added & at_first
    # with a filter: only the eu rows of the range
    answer = _ok(_plan(http, wh, "history", {"start-snapshot-id": first, "end-snapshot-id": third,
                                             "filter": {"type": "eq", "term": "region", "value": "eu"}}))
    assert [t["data-file"]["partition"] for t in answer["file-scan-tasks"]] == [["eu"]]
    # the range is empty when it starts where it ends
    assert _ok(_plan(http, wh, "history", {"start-snapshot-id": third, "end-snapshot-id": third}))[
        "file-scan-tasks"] == []


def test_a_big_plan_is_submitted_then_fetched_and_can_be_cancelled(http, wh, planning_server):
    _table(planning_server, wh, "big", [_batch(i * 3, 3, r) for i, r in enumerate(["eu", "us", "ap", "eu", "us"])])
    answer = _ok(_plan(http, wh, "big", {"filter": {"type": "not-eq", "term": "region", "value": "ap"}}))
    assert answer == {"status": "submitted", "plan-id": answer["plan-id"]}  # 5 data manifests > SUBMIT_ABOVE
    path = f"{wh['prefix']}/namespaces/plans/tables/big/plan/{answer['plan-id']}"
    result = _ok(http.get(path))
    assert result["status"] == "completed" and "plan-id" not in result
    assert len(result["plan-tasks"]) == 3  # 5 manifests, 2 per task
    regions = []
    for task in result["plan-tasks"]:
        fetched = _ok(http.post(f"{wh['prefix']}/namespaces/plans/tables/big/tasks", json={"plan-task": task}))
        regions += [t["data-file"]["partition"][0] for t in fetched["file-scan-tasks"]]
    assert sorted(regions) == ["eu", "eu", "us", "us"]  # the filter applied by the plan id
    # any API process answers a plan id: it holds the plan, not a handle on state
    assert http.delete(path).status_code == 204
    assert http.delete(path).status_code == 204  # nothing held, so nothing to have released twice


def test_unknown_plan_ids_and_plan_tasks_are_404(http, wh, planning_server):
    _table(planning_server, wh, "one", [_batch(0, 3, "eu")])
    _table(planning_server, wh, "other", [_batch(0, 3, "eu")])
    base = f"{wh['prefix']}/namespaces/plans/tables"
    for bogus in ("nope", "p1.bm9wZQ", "p1.!!!"):
        _error(http.get(f"{base}/one/plan/{bogus}"), 404, "NoSuchPlanIdException")
        _error(http.delete(f"{base}/one/plan/{bogus}"), 404, "NoSuchPlanIdException")
    _error(http.post(f"{base}/one/tasks", json={"plan-task": "nope"}), 404, "NoSuchPlanTaskException")
    # a plan of one table is unknown to another
    plan_id = _ok(_plan(http, wh, "one", {}))["plan-id"]
    assert _ok(http.get(f"{base}/one/plan/{plan_id}"))["status"] == "completed"
    _error(http.get(f"{base}/other/plan/{plan_id}"), 404, "NoSuchPlanIdException")
    # and a plan of a table that is not there is a missing table
    _error(http.get(f"{base}/missing/plan/{plan_id}"), 404, "NoSuchTableException")
    _error(_plan(http, wh, "missing", {}), 404, "NoSuchTableException")


def test_bad_requests_are_400(http, wh, planning_server):
    table = _table(planning_server, wh, "bad", [_batch(0, 3, "eu")])
    snapshot_id = table.metadata.snapshots[0].snapshot_id
    for body in ({"filter": {"type": "bogus"}},
                 {"filter": {"type": "eq", "term": "no_such_column", "value": 1}},
                 {"filter": {"type": "eq", "term": "id", "value": "not a number"}},
                 {"filter": "id > 3"},
                 {"snapshot-id": 12345},
                 {"snapshot-id": snapshot_id, "start-snapshot-id": snapshot_id, "end-snapshot-id": snapshot_id},
                 {"start-snapshot-id": snapshot_id},
                 {"end-snapshot-id": snapshot_id},
                 {"select": ["nope"]},
                 {"stats-fields": ["nope"]},
                 {"case-sensitive": "perhaps"}):
        response = _plan(http, wh, "bad", body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["code"] == 400
    # case-insensitive matching, when asked for
    answer = _ok(_plan(http, wh, "bad", {"filter": {"type": "eq", "term": "REGION", "value": "eu"},
                                         "case-sensitive": False}))
    assert len(answer["file-scan-tasks"]) == 1
    _error(http.post(f"{wh['prefix']}/namespaces/plans/tables/bad/plan", content=b"{not json",
                     headers={"content-type": "application/json"}), 400, "BadRequestException")


def test_an_empty_table_plans_to_nothing(http, wh, planning_server):
    _table(planning_server, wh, "empty", [])
    answer = _ok(_plan(http, wh, "empty", {}))
    assert answer["status"] == "completed" and answer["file-scan-tasks"] == []
    assert _catalog(planning_server, wh, "server").load_table("plans.empty").scan().to_arrow().num_rows == 0


def test_a_table_is_planned_as_the_catalog_had_it_at_a_past_instant(server, client, warehouse, db):
    """Under a time-travel prefix (<warehouse>@seq:<n>, from /config) the plan is of the table as it was then:
    the snapshot current at that point of the log, whatever was committed after. The session's own server plans
    in its default (client) mode too: the mode only tells clients what to do."""
    catalog = RestCatalog("past", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    catalog.create_namespace("plans")
    table = catalog.create_table("plans.then", schema=SCHEMA, partition_spec=SPEC)
    table.append(_batch(0, 4, "eu"))
    position = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    table.append(_batch(4, 6, "us"))
    past = _ok(client.get("/catalog/v1/config", params={"warehouse": f"{warehouse['name']}@seq:{position}"}))
    assert "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan" in past["endpoints"]
    prefix = f"/catalog/v1/{past['overrides']['prefix']}"
    then = _ok(client.post(f"{prefix}/namespaces/plans/tables/then/plan", json={}))
    assert [t["data-file"]["record-count"] for t in then["file-scan-tasks"]] == [4]
    assert _ok(client.get(f"{prefix}/namespaces/plans/tables/then/plan/{then['plan-id']}"))["file-scan-tasks"] == \
        then["file-scan-tasks"]
    now = _ok(client.post(f"{warehouse['prefix']}/namespaces/plans/tables/then/plan", json={}))
    assert sorted(t["data-file"]["record-count"] for t in now["file-scan-tasks"]) == [4, 6]


def test_an_s3_plan_is_read_from_minio_and_carries_credentials_when_asked(server, client, s3_warehouse, minio):
    """The server reads an S3 table's manifests with the warehouse's credential; the plan carries vended
    credentials for the table's location when the client asks for delegated access, and none otherwise."""
    catalog = RestCatalog("s3plan", uri=f"{server.url}/catalog", warehouse=s3_warehouse["name"])
    catalog.create_namespace("plans")
    table = catalog.create_table("plans.remote", schema=SCHEMA, partition_spec=SPEC)
    table.append(_batch(0, 6, "eu"))
    table.append(_batch(6, 4, "us"))
    server_side = RestCatalog("s3server", uri=f"{server.url}/catalog", warehouse=s3_warehouse["name"],
                              **{"scan-planning-mode": "server"}).load_table("plans.remote")
    assert server_side.scan()._should_use_server_side_planning()
    for row_filter in (None, EqualTo("region", "us"), GreaterThan("id", 4)):
        assert _rows(server_side, row_filter) == _rows(table, row_filter)

    path = f"{s3_warehouse['prefix']}/namespaces/plans/tables/remote/plan"
    plain = _ok(client.post(path, json={"filter": {"type": "eq", "term": "region", "value": "eu"}}))
    assert "storage-credentials" not in plain
    assert [t["data-file"]["file-path"].startswith(f"s3://{s3_warehouse['bucket']}/")
            for t in plain["file-scan-tasks"]] == [True]
    vended = _ok(client.post(path, json={}, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}))
    [credential] = vended["storage-credentials"]
    assert credential["prefix"] == table.metadata.location
    assert credential["config"]["s3.session-token"] and credential["config"]["s3.access-key-id"] != minio.user
    # a hint, as loadTable's: what is not a mechanism asks for none, nor does client-managed (docs/storage.md)
    for value in ("carrier-pigeon", "client-managed"):
        assert "storage-credentials" not in _ok(client.post(path, json={},
                                                            headers={"X-Iceberg-Access-Delegation": value}))
