"""Server-side scan planning judged by Iceberg's own Java client: PySpark 4.0 with Iceberg's Spark 4.0 runtime 1.11
(`make spark4-deps`, the ``spark4_planning`` fixture), whose RESTCatalog plans on the server when its catalog
property ``scan-planning-mode`` is ``server``. One session, two catalogs over the same warehouse: ``lakeledger``
plans on the client, ``lakeledger_server`` on the server; both must read the same rows.

The table is format v2 and partitioned by region, with position deletes (Spark's merge-on-read DELETE) and equality
delete files, which Spark does not write: Java's GenericAppenderFactory does, over py4j
(tests/e2e/spark4_planning.py). One is in partition ``eu``, for ids 3, 9, 15 (in ``eu``) and 4 (a ``us`` row, which it
must not delete); then the partitioning is dropped and a global one (of the now unpartitioned spec) deletes ids 10
and 11 in every partition; then ids 9 and 10 are written again — after both, so neither applies to them.

Java 1.11 plans an incremental scan (Spark's ``start-snapshot-id``/``end-snapshot-id``) on the client whatever the
mode — its REST table has no incremental scan of its own — so the server's incremental plan is judged here by its
JSON against the files the appends added. pyiceberg 0.12 applies no equality deletes: given the server's plan it
refuses to read, as it refuses to plan such a table itself."""

from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.catalog.rest import RestCatalog

pytestmark = pytest.mark.spark

CLIENT, SERVER = "lakeledger", "lakeledger_server"  # conftest.py's SPARK_CATALOG, SPARK_SERVER_PLANNING_CATALOG
NS, TABLE = "planning_judge", "orders"
PLAN_ROUTE = "/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"
EQUALITY_DELETED = (3, 9, 15, 4)  # in partition eu
GLOBAL_DELETED = (10, 11)  # in every partition
LATE_ROWS = [[9, "eu", 99.0], [10, "us", 5.0], [61, "us", 1.0]]


def _region(i: int) -> str:
    return ["eu", "us", "ap"][i % 3]


def _expected_rows() -> list[list]:
    kept = [[i, _region(i), i * 1.5] for i in range(60)
            if i % 7 != 0 and not (_region(i) == "eu" and i in EQUALITY_DELETED) and i not in GLOBAL_DELETED]
    return sorted(kept + LATE_ROWS)


def _plan_calls(client) -> float:
    """Plans the server answered (its Prometheus counter of POST .../plan), of any table."""
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    return sum(s.value for family in text_string_to_metric_families(r.text) for s in family.samples
               if s.name == "lakeledger_http_requests_total" and s.labels.get("method") == "POST"
               and s.labels.get("route") == PLAN_ROUTE)


@pytest.fixture(scope="module")
def table(spark4_planning, client, spark_warehouse):
    spark = spark4_planning
    name = f"{NS}.{TABLE}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CLIENT}.{NS}")
    spark.sql(f"CREATE TABLE {CLIENT}.{name} (id INT, region STRING, amount DOUBLE) USING iceberg "
              "PARTITIONED BY (region) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
              "'write.update.mode'='merge-on-read')")
    rows = ", ".join(f"({i}, '{_region(i)}', {i * 1.5})" for i in range(60))
    spark.sql(f"INSERT INTO {CLIENT}.{name} VALUES {rows}")
    spark.sql(f"DELETE FROM {CLIENT}.{name} WHERE id % 7 = 0")
    [[equality_snapshot, equality_path]] = spark.run("equality-delete", {
        "catalog": CLIENT, "table": name, "partition": {"region": "eu"}, "column": "id",
        "values": list(EQUALITY_DELETED)})
    spark.sql(f"ALTER TABLE {CLIENT}.{name} DROP PARTITION FIELD region")
    [[global_snapshot, global_path]] = spark.run("equality-delete", {
        "catalog": CLIENT, "table": name, "partition": {}, "column": "id", "values": list(GLOBAL_DELETED)})
    spark.sql(f"INSERT INTO {CLIENT}.{name} VALUES " + ", ".join(f"({i}, '{r}', {a})" for i, r, a in LATE_ROWS))
    snapshots = spark.sql(f"SELECT snapshot_id, operation FROM {CLIENT}.{name}.snapshots ORDER BY committed_at")
    assert [op for _, op in snapshots] == ["append", "delete", "delete", "delete", "append"], snapshots
    assert [snapshots[2][0], snapshots[3][0]] == [equality_snapshot, global_snapshot]
    late_files = {path for [path] in spark.sql(
        f"SELECT data_file.file_path FROM {CLIENT}.{name}.entries WHERE snapshot_id = {snapshots[4][0]} "
        "AND status = 1 AND data_file.content = 0")}
    assert late_files  # of the unpartitioned spec (one or two: Spark writes per task)
    return SimpleNamespace(name=name, first=snapshots[0][0], equality=equality_snapshot, last=snapshots[4][0],
                           equality_path=equality_path, global_path=global_path, late_files=late_files,
                           plan=f"{spark_warehouse['prefix']}/namespaces/{NS}/tables/{TABLE}/plan")


def _read(spark, client, catalog: str, query: str) -> tuple[list[list], float]:
    """The rows of ``query`` (``{t}``: the table in ``catalog``), and how many plans the server answered for it."""
    before = _plan_calls(client)
    rows = spark.sql(query.format(t=f"{catalog}.{NS}.{TABLE}"))
    return rows, _plan_calls(client) - before


@pytest.mark.parametrize("query", [
    "SELECT id, region, amount FROM {t} ORDER BY id, region",
    "SELECT id, region, amount FROM {t} WHERE region = 'eu' ORDER BY id",
    "SELECT id, region, amount FROM {t} WHERE amount > 30 ORDER BY id, region",
    "SELECT id, region, amount FROM {t} WHERE id IN (3, 4, 9, 10, 11, 14, 15) ORDER BY id, region",
])
def test_java_reads_the_same_rows_through_the_servers_plan_as_through_its_own(spark4_planning, client, table, query):
    server_rows, server_plans = _read(spark4_planning, client, SERVER, query)
    client_rows, client_plans = _read(spark4_planning, client, CLIENT, query)
    assert server_plans >= 1 and client_plans == 0
    assert server_rows == client_rows
    if "WHERE" not in query:
        assert sorted(server_rows) == _expected_rows()
    if "IN (" in query:  # eu's delete took 3 and 15, not 4 (us); the global one 10 and 11; 9 and 10 came back after
        assert server_rows == [[4, "us", 6.0], [9, "eu", 99.0], [10, "us", 5.0]]


@pytest.mark.parametrize("snapshot", ["first", "equality"])
def test_java_time_travels_through_the_servers_plan(spark4_planning, client, table, snapshot):
    query = f"SELECT id, region, amount FROM {{t}} VERSION AS OF {getattr(table, snapshot)} ORDER BY id, region"
    server_rows, server_plans = _read(spark4_planning, client, SERVER, query)
    client_rows, client_plans = _read(spark4_planning, client, CLIENT, query)
    assert server_plans >= 1 and client_plans == 0
    assert server_rows == client_rows
    assert len(server_rows) == (60 if snapshot == "first" else 60 - 9 - 3)  # 9 ids % 7, 3 of eu's delete


def test_java_reads_appends_incrementally_the_same_in_both_modes(spark4_planning, client, table):
    argument = {"table": f"{NS}.{TABLE}", "start": table.first, "end": table.last,
                "columns": ["id", "region", "amount"]}
    before = _plan_calls(client)
    server_rows = sorted(spark4_planning.run("incremental", {**argument, "catalog": SERVER}))
    assert _plan_calls(client) == before  # Java 1.11 plans incremental scans on the client (see above)
    assert server_rows == sorted(spark4_planning.run("incremental", {**argument, "catalog": CLIENT})) == LATE_ROWS


def test_the_plan_pairs_equality_deletes_with_the_older_data_files_of_their_partition(client, table):
    r = client.post(table.plan, json={})
    assert r.status_code == 200, r.text
    plan = r.json()
    deletes = plan["delete-files"]
    equality = {d["file-path"]: i for i, d in enumerate(deletes) if d["content"] == "equality-deletes"}
    assert equality.keys() == {table.equality_path, table.global_path}
    local, global_ = equality[table.equality_path], equality[table.global_path]
    assert deletes[local]["equality-ids"] == deletes[global_]["equality-ids"] == [1]
    assert (deletes[local]["spec-id"], deletes[local]["partition"]) == (0, ["eu"])
    assert (deletes[global_]["spec-id"], deletes[global_]["partition"]) == (1, [])
    assert deletes[local]["record-count"] == len(EQUALITY_DELETED)
    assert {d["content"] for i, d in enumerate(deletes) if i not in (local, global_)} == {"position-deletes"}
    referencing: dict[int, int] = {local: 0, global_: 0}
    for task in plan["file-scan-tasks"]:
        data = task["data-file"]
        references = task.get("delete-file-references", [])
        assert all(deletes[i]["partition"] == data["partition"] for i in references if i != global_)
        older = data["file-path"] not in table.late_files
        # the spec's rules: a partition's delete applies in that partition (spec and values), a global one in every
        # partition, and neither to data written after it (the late insert)
        assert (local in references) == (older and (data["spec-id"], data["partition"]) == (0, ["eu"]))
        assert (global_ in references) == older
        for i in (local, global_):
            referencing[i] += i in references
    assert referencing[local] >= 1 and referencing[global_] >= 3  # the first insert's files, one per region

    # eu's equality delete is planned only for the partition it is in; the global one for every partition
    r = client.post(table.plan, json={"filter": {"type": "eq", "term": "region", "value": "us"}})
    assert r.status_code == 200, r.text
    us = r.json()["delete-files"]
    assert {d["file-path"] for d in us if d["content"] == "equality-deletes"} == {table.global_path}

    # an incremental plan: the data files the appends added, no deletes (as Java's IncrementalAppendScan)
    r = client.post(table.plan, json={"start-snapshot-id": table.first, "end-snapshot-id": table.last})
    assert r.status_code == 200, r.text
    incremental = r.json()
    assert {t["data-file"]["file-path"] for t in incremental["file-scan-tasks"]} == table.late_files
    assert "delete-files" not in incremental


def test_pyiceberg_refuses_the_servers_plan_with_equality_deletes_rather_than_read_deleted_rows(server, table,
                                                                                                 spark_warehouse):
    catalog = RestCatalog("judge", uri=f"{server.url}/catalog", warehouse=spark_warehouse["name"],
                          **{"scan-planning-mode": "server"})
    scan = catalog.load_table(f"{NS}.{TABLE}").scan()
    assert scan._should_use_server_side_planning()
    with pytest.raises(NotImplementedError, match="equality deletes"):
        scan.to_arrow()
