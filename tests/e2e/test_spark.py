"""End to end: PySpark 3.5 with Iceberg's Spark runtime against a live Lakeledger over the REST
protocol. Every test asserts on what Spark reads back, and on the events the change left in the
Postgres event log (the catalog's source of truth)."""

import json
import time
import uuid

import pytest

pytestmark = pytest.mark.spark

CATALOG = "lakeledger"  # SPARK_CATALOG of conftest.py
NAMESPACE = "e2e"
TABLE_TOPIC = "lakeledger.domain.table:Table"
TABULAR_TOPIC = "lakeledger.domain.tabular:Tabular"  # rename and drop are shared with views
NAMESPACE_TOPIC = "lakeledger.domain.namespace:Namespace"


# -- fixtures (spark and spark_warehouse come from conftest.py) ---------------------------------

@pytest.fixture(scope="module")
def ns(spark) -> str:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    return f"{CATALOG}.{NAMESPACE}"


# -- helpers ----------------------------------------------------------------------------------------

def rows(spark, query: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(query).collect()]


def table_names(spark, namespace: str) -> set[str]:
    return {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {namespace}").collect()}


def table_uuid(client, warehouse: dict, name: str) -> uuid.UUID:
    r = client.get(f"{warehouse['prefix']}/namespaces/{NAMESPACE}/tables/{name}")
    assert r.status_code == 200, r.text
    return uuid.UUID(r.json()["metadata"]["table-uuid"])


def events(db, originator_id: uuid.UUID) -> list[tuple[str, dict]]:
    """(topic, decoded state) of every event of one aggregate, in order."""
    records = db.execute("SELECT topic, state FROM lakeledger_events WHERE originator_id = %s"
                         " ORDER BY originator_version", (originator_id,)).fetchall()
    return [(topic, json.loads(bytes(state))) for topic, state in records]


def topics(db, originator_id: uuid.UUID) -> list[str]:
    return [topic for topic, _ in events(db, originator_id)]


def update_actions(state: dict) -> set[str]:
    return {u["action"] for u in state["updates"]}


# -- tests ------------------------------------------------------------------------------------------

def test_create_namespace(spark, db, spark_warehouse):
    spark.sql(f"CREATE NAMESPACE {CATALOG}.created_ns")

    listed = {r["namespace"] for r in spark.sql(f"SHOW NAMESPACES IN {CATALOG}").collect()}
    assert "created_ns" in listed

    row = db.execute("SELECT id FROM ll_namespaces WHERE warehouse_id = %s AND path = %s",
                     (uuid.UUID(spark_warehouse["id"]), ["created_ns"])).fetchone()
    assert row is not None
    history = events(db, row[0])
    assert [t for t, _ in history] == [f"{NAMESPACE_TOPIC}.Created"]
    assert history[0][1]["path"] == ["created_ns"]


def test_create_insert_select(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.people (id BIGINT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.people VALUES (1, 'ada'), (2, 'grace'), (3, 'edsger')")

    assert rows(spark, f"SELECT id, name FROM {ns}.people ORDER BY id") == [
        (1, "ada"), (2, "grace"), (3, "edsger")]

    history = events(db, table_uuid(client, spark_warehouse, "people"))
    assert [t for t, _ in history] == [f"{TABLE_TOPIC}.Created", f"{TABLE_TOPIC}.Committed"]
    assert history[0][1]["origin"] == "create"
    assert "add-snapshot" in update_actions(history[1][1])


def test_ctas(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.src (id BIGINT, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.src VALUES (1, 10.0), (2, 20.0), (3, 30.0), (4, 40.0)")

    spark.sql(f"CREATE TABLE {ns}.big USING iceberg AS SELECT id, amount * 2 AS doubled FROM {ns}.src "
              "WHERE amount > 15")

    assert rows(spark, f"SELECT id, doubled FROM {ns}.big ORDER BY id") == [(2, 40.0), (3, 60.0), (4, 80.0)]
    assert "big" in table_names(spark, ns)

    # A staged create: the table is born in one commit that asserts it does not exist yet.
    history = events(db, table_uuid(client, spark_warehouse, "big"))
    assert [t for t, _ in history] == [f"{TABLE_TOPIC}.Created"]
    created = history[0][1]
    assert created["origin"] == "commit"
    assert {"type": "assert-create"} in created["request"]["requirements"]
    assert {"assign-uuid", "add-schema", "add-snapshot"} <= {u["action"] for u in created["request"]["updates"]}


def test_add_column(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.evolving (id BIGINT, data STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.evolving VALUES (1, 'a')")
    table_id = table_uuid(client, spark_warehouse, "evolving")
    before = len(events(db, table_id))

    spark.sql(f"ALTER TABLE {ns}.evolving ADD COLUMN score INT")
    spark.sql(f"INSERT INTO {ns}.evolving VALUES (2, 'b', 42)")

    assert [f.name for f in spark.table(f"{ns}.evolving").schema.fields] == ["id", "data", "score"]
    assert rows(spark, f"SELECT id, data, score FROM {ns}.evolving ORDER BY id") == [(1, "a", None), (2, "b", 42)]

    history = events(db, table_id)[before:]
    assert [t for t, _ in history] == [f"{TABLE_TOPIC}.Committed"] * 2
    alter, insert = (state for _, state in history)
    assert {"add-schema", "set-current-schema"} <= update_actions(alter)
    added = next(u for u in alter["updates"] if u["action"] == "add-schema")
    assert "score" in [f["name"] for f in added["schema"]["fields"]]
    assert "add-snapshot" in update_actions(insert)


def test_merge_into(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.accounts (id BIGINT, balance BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.accounts VALUES (1, 100), (2, 200), (3, 300)")
    table_id = table_uuid(client, spark_warehouse, "accounts")
    before = len(events(db, table_id))

    spark.sql(f"""
        MERGE INTO {ns}.accounts t
        USING (SELECT * FROM VALUES (2, 250), (4, 400) AS s(id, balance)) s
        ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET t.balance = s.balance
        WHEN NOT MATCHED THEN INSERT *
    """)

    assert rows(spark, f"SELECT id, balance FROM {ns}.accounts ORDER BY id") == [
        (1, 100), (2, 250), (3, 300), (4, 400)]

    history = events(db, table_id)[before:]
    assert [t for t, _ in history] == [f"{TABLE_TOPIC}.Committed"]
    assert "add-snapshot" in update_actions(history[0][1])


def test_delete_where(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.logs (id BIGINT, level STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.logs VALUES (1, 'info'), (2, 'debug'), (3, 'error'), (4, 'debug')")
    table_id = table_uuid(client, spark_warehouse, "logs")
    before = len(events(db, table_id))

    spark.sql(f"DELETE FROM {ns}.logs WHERE level = 'debug'")

    assert rows(spark, f"SELECT id, level FROM {ns}.logs ORDER BY id") == [(1, "info"), (3, "error")]

    history = events(db, table_id)[before:]
    assert [t for t, _ in history] == [f"{TABLE_TOPIC}.Committed"]
    assert "add-snapshot" in update_actions(history[0][1])


def test_rename_table(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.old_name (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.old_name VALUES (7), (8)")
    table_id = table_uuid(client, spark_warehouse, "old_name")

    # Spark resolves the new name inside the table's catalog: it carries no catalog part.
    spark.sql(f"ALTER TABLE {ns}.old_name RENAME TO {NAMESPACE}.new_name")

    assert rows(spark, f"SELECT id FROM {ns}.new_name ORDER BY id") == [(7,), (8,)]
    names = table_names(spark, ns)
    assert "new_name" in names and "old_name" not in names
    assert table_uuid(client, spark_warehouse, "new_name") == table_id
    assert client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/tables/old_name").status_code == 404

    topic, state = events(db, table_id)[-1]
    assert topic == f"{TABULAR_TOPIC}.Renamed"
    assert (state["from_name"], state["to_name"]) == ("old_name", "new_name")
    assert state["to_namespace"] == [NAMESPACE]


def test_drop_table(spark, ns, client, db, spark_warehouse):
    from pyspark.sql.utils import AnalysisException

    spark.sql(f"CREATE TABLE {ns}.doomed (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.doomed VALUES (1)")
    assert rows(spark, f"SELECT count(*) FROM {ns}.doomed") == [(1,)]
    table_id = table_uuid(client, spark_warehouse, "doomed")

    spark.sql(f"DROP TABLE {ns}.doomed")

    assert "doomed" not in table_names(spark, ns)
    with pytest.raises(AnalysisException, match="(?i)cannot be found|not found"):
        spark.table(f"{ns}.doomed").collect()
    assert client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/tables/doomed").status_code == 404

    # Spark sends no purgeRequested: a managed table's files are purged, by the worker, after the drop
    deadline = time.monotonic() + 30
    while events(db, table_id)[-1][0] != f"{TABULAR_TOPIC}.Purged":
        assert time.monotonic() < deadline, "the purge was not recorded"
        time.sleep(0.1)
    history = events(db, table_id)
    # the worker records its attempt before it deletes (docs/tasks.md)
    assert [t for t, _ in history] == [f"{TABLE_TOPIC}.Created", f"{TABLE_TOPIC}.Committed",
                                       f"{TABULAR_TOPIC}.Dropped", f"{TABULAR_TOPIC}.PurgeStarted",
                                       f"{TABULAR_TOPIC}.Purged"]
    assert history[2][1]["name"] == "doomed" and history[2][1]["purge_requested"] is True


def test_spark_s_scan_and_commit_reports_are_kept(spark, ns, client, spark_warehouse):
    """Iceberg's Java RESTCatalog sends a CommitReport after Spark's INSERT and a ScanReport after planning a SELECT
    (POST .../metrics); the catalog keeps both, and the table's reports list them with the figures Spark measured."""
    spark.sql(f"CREATE TABLE {ns}.reported (id BIGINT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.reported VALUES (1, 'ada'), (2, 'grace'), (3, 'edsger')")
    assert rows(spark, f"SELECT name FROM {ns}.reported WHERE id > 1 ORDER BY id") == [("grace",), ("edsger",)]
    table_id = table_uuid(client, spark_warehouse, "reported")
    snapshot_id = client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/tables/reported").json()[
        "metadata"]["current-snapshot-id"]
    path = f"/management/v1/warehouse/{spark_warehouse['id']}/table/{table_id}/metrics-reports"

    def both() -> dict | None:
        kinds = {r["report-type"]: r for r in reversed(client.get(path).json()["reports"])}  # the newest of each
        return kinds if {"scan-report", "commit-report"} <= kinds.keys() else None

    deadline = time.monotonic() + 30
    while (found := both()) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert found is not None, client.get(path).text
    commit, scan = found["commit-report"], found["scan-report"]
    assert commit["operation"] == "append" and commit["snapshot-id"] == snapshot_id
    assert commit["table-name"].endswith("e2e.reported")
    assert commit["figures"]["records"] == 3 and commit["figures"]["files"] >= 1 and commit["figures"]["bytes"] > 0
    assert commit["metrics"]["added-records"] == {"unit": "count", "value": 3}
    assert scan["snapshot-id"] == snapshot_id and scan["table-name"].endswith("e2e.reported")
    assert scan["figures"]["files"] >= 1 and scan["figures"]["bytes"] > 0
    assert scan["figures"]["duration-ms"] is not None and scan["metrics"]["total-planning-duration"]["count"] == 1
    assert "id" in scan["projected-field-names"] and "name" in scan["projected-field-names"]
    assert "id" in json.dumps(scan["filter"])  # the pushed-down WHERE id > 1
    assert scan["actor"] == commit["actor"]
