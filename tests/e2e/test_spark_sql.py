"""A Spark SQL conformance matrix: Iceberg's stored procedures, branches and tags, time travel,
partition and schema evolution, replace-table, format v3 and views, driven by PySpark 3.5 with the
Iceberg 1.10 runtime against a live Lakeledger. Each test asserts on what Spark reads back and, where
the catalog has a say, on the metadata the server serves over HTTP or on the events in Postgres."""

import json
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

CATALOG = "lakeledger"  # SPARK_CATALOG of conftest.py
NAMESPACE = "sqlm"
TABLE_TOPIC = "lakeledger.domain.table:Table"
VIEW_TOPIC = "lakeledger.domain.view:View"
TABULAR_TOPIC = "lakeledger.domain.tabular:Tabular"


@pytest.fixture(scope="module")
def ns(spark) -> str:
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    return f"{CATALOG}.{NAMESPACE}"


# -- helpers ----------------------------------------------------------------------------------------

def rows(spark, query: str) -> list[tuple]:
    return [tuple(r) for r in spark.sql(query).collect()]


def load(client, warehouse: dict, name: str, kind: str = "tables") -> dict:
    """The LoadTableResult (or LoadViewResult) the catalog serves for a name in our namespace."""
    r = client.get(f"{warehouse['prefix']}/namespaces/{NAMESPACE}/{kind}/{name}")
    assert r.status_code == 200, r.text
    return r.json()


def metadata(client, warehouse: dict, name: str) -> dict:
    return load(client, warehouse, name)["metadata"]


def snapshot_ids(meta: dict) -> list[int]:
    return [s["snapshot-id"] for s in sorted(meta.get("snapshots", []), key=lambda s: s["sequence-number"])]


def events(db, originator_id: uuid.UUID | str) -> list[tuple[str, dict]]:
    """(topic, decoded state) of every event of one aggregate, in order."""
    records = db.execute("SELECT topic, state FROM lakeledger_events WHERE originator_id = %s"
                         " ORDER BY originator_version", (uuid.UUID(str(originator_id)),)).fetchall()
    return [(topic, json.loads(bytes(state))) for topic, state in records]


def actions(state: dict) -> list[str]:
    return [u["action"] for u in state["updates"]]


def local_path(uri: str) -> Path:
    assert uri.startswith("file:"), uri
    return Path("/" + uri.removeprefix("file:").lstrip("/"))


def at_millis(ms: int) -> str:
    """A Spark timestamp literal (session time zone UTC) for epoch milliseconds."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


# -- stored procedures ------------------------------------------------------------------------------

def test_expire_snapshots(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.expiring (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.expiring VALUES (1)")
    spark.sql(f"INSERT INTO {ns}.expiring VALUES (2)")
    spark.sql(f"INSERT OVERWRITE {ns}.expiring SELECT 3")
    before = metadata(client, spark_warehouse, "expiring")
    first, second, current = snapshot_ids(before)
    old_lists = [local_path(s["manifest-list"]) for s in before["snapshots"] if s["snapshot-id"] != current]
    old_files = [local_path(path) for (path,) in rows(
        spark, f"SELECT file_path FROM {ns}.expiring.all_data_files "
               f"EXCEPT SELECT file_path FROM {ns}.expiring.files")]
    assert len(old_files) == 2 and all(p.exists() for p in old_lists + old_files)

    [result] = spark.sql(f"CALL {CATALOG}.system.expire_snapshots(table => '{NAMESPACE}.expiring', "
                         f"snapshot_ids => ARRAY({first}L, {second}L))").collect()

    assert result["deleted_manifest_lists_count"] == 2
    assert result["deleted_data_files_count"] == 2  # the overwrite left both old files unreferenced
    assert rows(spark, f"SELECT id FROM {ns}.expiring") == [(3,)]
    after = metadata(client, spark_warehouse, "expiring")
    assert snapshot_ids(after) == [current]
    assert after["current-snapshot-id"] == current
    assert not any(p.exists() for p in old_lists + old_files)
    with pytest.raises(Exception, match=str(first)):
        spark.sql(f"SELECT * FROM {ns}.expiring VERSION AS OF {first}").collect()

    topic, state = events(db, after["table-uuid"])[-1]
    assert topic == f"{TABLE_TOPIC}.Committed"
    removed = [i for u in state["updates"] if u["action"] == "remove-snapshots" for i in u["snapshot-ids"]]
    assert sorted(removed) == sorted([first, second])


def test_rollback_to_snapshot(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.rolling (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.rolling VALUES (1)")
    spark.sql(f"INSERT INTO {ns}.rolling VALUES (2)")
    first, second = snapshot_ids(metadata(client, spark_warehouse, "rolling"))

    [result] = spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{NAMESPACE}.rolling', {first})").collect()

    assert (result["previous_snapshot_id"], result["current_snapshot_id"]) == (second, first)
    assert rows(spark, f"SELECT id FROM {ns}.rolling") == [(1,)]
    after = metadata(client, spark_warehouse, "rolling")
    assert after["current-snapshot-id"] == first
    assert after["refs"]["main"]["snapshot-id"] == first
    assert snapshot_ids(after) == [first, second]  # a rollback moves the ref, it removes nothing

    topic, state = events(db, after["table-uuid"])[-1]
    assert topic == f"{TABLE_TOPIC}.Committed"
    assert "set-snapshot-ref" in actions(state)
    assert {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": second} in state["requirements"]


def test_set_current_snapshot(spark, ns, client, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.pointing (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.pointing VALUES (1)")
    spark.sql(f"INSERT INTO {ns}.pointing VALUES (2)")
    first, second = snapshot_ids(metadata(client, spark_warehouse, "pointing"))

    spark.sql(f"CALL {CATALOG}.system.set_current_snapshot('{NAMESPACE}.pointing', {first})")
    assert rows(spark, f"SELECT id FROM {ns}.pointing") == [(1,)]
    # ...and forward again: unlike a rollback, any snapshot of the table may become current
    [result] = spark.sql(f"CALL {CATALOG}.system.set_current_snapshot(table => '{NAMESPACE}.pointing', "
                         f"snapshot_id => {second})").collect()

    assert (result["previous_snapshot_id"], result["current_snapshot_id"]) == (first, second)
    assert rows(spark, f"SELECT id FROM {ns}.pointing ORDER BY id") == [(1,), (2,)]
    after = metadata(client, spark_warehouse, "pointing")
    assert after["current-snapshot-id"] == second
    assert [e["snapshot-id"] for e in after["snapshot-log"]] == [first, second, first, second]


def test_register_table(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.original (id BIGINT, data STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.original VALUES (1, 'a'), (2, 'b')")
    loaded = load(client, spark_warehouse, "original")
    # A copy of the metadata file as another table: its own uuid and location (the catalog keeps
    # tables apart by both), still pointing at the original's manifests and data files.
    copy_uuid = uuid.uuid4()
    copy_location = spark_warehouse["path"] / f"registered-{copy_uuid.hex}"
    copied = {**json.loads(local_path(loaded["metadata-location"]).read_text()),
              "table-uuid": str(copy_uuid), "location": f"file://{copy_location}"}
    copy_file = copy_location / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
    copy_file.parent.mkdir(parents=True)
    copy_file.write_text(json.dumps(copied))

    [result] = spark.sql(f"CALL {CATALOG}.system.register_table(table => '{NAMESPACE}.registered', "
                         f"metadata_file => 'file://{copy_file}')").collect()

    assert result["current_snapshot_id"] == loaded["metadata"]["current-snapshot-id"]
    assert result["total_records_count"] == 2
    assert rows(spark, f"SELECT id, data FROM {ns}.registered ORDER BY id") == [(1, "a"), (2, "b")]
    registered = load(client, spark_warehouse, "registered")
    assert registered["metadata-location"] == f"file://{copy_file}"
    assert registered["metadata"]["table-uuid"] == str(copy_uuid)
    [(topic, state)] = events(db, copy_uuid)
    assert topic == f"{TABLE_TOPIC}.Created"
    assert state["origin"] == "register" and state["name"] == "registered"

    # the two tables now live apart
    spark.sql(f"INSERT INTO {ns}.registered VALUES (3, 'c')")
    assert rows(spark, f"SELECT count(*) FROM {ns}.registered") == [(3,)]
    assert rows(spark, f"SELECT count(*) FROM {ns}.original") == [(2,)]


def test_register_table_refuses_a_live_tables_metadata(spark, ns, client, log_length, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.claimed (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.claimed VALUES (1)")
    location = load(client, spark_warehouse, "claimed")["metadata-location"]
    length = log_length()

    with pytest.raises(Exception, match="(?i)already"):
        spark.sql(f"CALL {CATALOG}.system.register_table(table => '{NAMESPACE}.claimed_twice', "
                  f"metadata_file => '{location}')").collect()

    r = client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/tables/claimed_twice")
    assert r.status_code == 404
    assert log_length() == length
    assert rows(spark, f"SELECT id FROM {ns}.claimed") == [(1,)]


def test_rewrite_data_files(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.fragmented (id BIGINT, data STRING) USING iceberg")
    for i in range(4):
        spark.sql(f"INSERT INTO {ns}.fragmented VALUES ({i}, 'row-{i}')")
    files_before = rows(spark, f"SELECT count(*) FROM {ns}.fragmented.files")[0][0]
    assert files_before >= 4

    [result] = spark.sql(f"CALL {CATALOG}.system.rewrite_data_files(table => '{NAMESPACE}.fragmented', "
                         "options => map('min-input-files', '2'))").collect()

    assert result["rewritten_data_files_count"] == files_before
    assert result["added_data_files_count"] == 1
    assert rows(spark, f"SELECT count(*) FROM {ns}.fragmented.files") == [(1,)]
    assert rows(spark, f"SELECT id, data FROM {ns}.fragmented ORDER BY id") == [
        (i, f"row-{i}") for i in range(4)]
    after = metadata(client, spark_warehouse, "fragmented")
    current = next(s for s in after["snapshots"] if s["snapshot-id"] == after["current-snapshot-id"])
    assert current["summary"]["operation"] == "replace"
    assert len(after["snapshots"]) == 5

    topic, state = events(db, after["table-uuid"])[-1]
    assert topic == f"{TABLE_TOPIC}.Committed"
    [added] = [u for u in state["updates"] if u["action"] == "add-snapshot"]
    assert added["snapshot"]["summary"]["operation"] == "replace"


# -- branches and tags -------------------------------------------------------------------------------

def test_branch_and_tag(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.branched (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.branched VALUES (1)")
    base = metadata(client, spark_warehouse, "branched")["current-snapshot-id"]

    spark.sql(f"ALTER TABLE {ns}.branched CREATE TAG v1 RETAIN 30 DAYS")
    spark.sql(f"ALTER TABLE {ns}.branched CREATE BRANCH dev")
    spark.sql(f"INSERT INTO {ns}.branched.branch_dev VALUES (2)")
    spark.sql(f"INSERT INTO {ns}.branched VALUES (10)")

    assert rows(spark, f"SELECT id FROM {ns}.branched ORDER BY id") == [(1,), (10,)]
    assert rows(spark, f"SELECT id FROM {ns}.branched.branch_dev ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {ns}.branched VERSION AS OF 'dev' ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {ns}.branched VERSION AS OF 'v1'") == [(1,)]
    assert rows(spark, f"SELECT id FROM {ns}.branched.tag_v1") == [(1,)]

    refs = metadata(client, spark_warehouse, "branched")["refs"]
    assert set(refs) == {"main", "dev", "v1"}
    assert refs["v1"] == {"snapshot-id": base, "type": "tag", "max-ref-age-ms": 30 * 24 * 3600 * 1000}
    assert refs["dev"]["type"] == "branch" and refs["dev"]["snapshot-id"] not in (base, refs["main"]["snapshot-id"])
    with pytest.raises(Exception, match="(?i)cannot write to table at a specific snapshot"):  # tags are read-only
        spark.sql(f"INSERT INTO {ns}.branched.tag_v1 VALUES (3)")

    spark.sql(f"ALTER TABLE {ns}.branched DROP BRANCH dev")
    spark.sql(f"ALTER TABLE {ns}.branched DROP TAG v1")

    after = metadata(client, spark_warehouse, "branched")
    assert set(after["refs"]) == {"main"}
    assert rows(spark, f"SELECT id FROM {ns}.branched ORDER BY id") == [(1,), (10,)]
    with pytest.raises(Exception, match="dev"):
        spark.sql(f"SELECT id FROM {ns}.branched VERSION AS OF 'dev'").collect()
    drop_branch, drop_tag = (state for _, state in events(db, after["table-uuid"])[-2:])
    assert {"action": "remove-snapshot-ref", "ref-name": "dev"} in drop_branch["updates"]
    assert {"action": "remove-snapshot-ref", "ref-name": "v1"} in drop_tag["updates"]


def test_write_audit_publish(spark, ns, client, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.audited (id BIGINT) USING iceberg "
              "TBLPROPERTIES ('write.wap.enabled'='true')")
    spark.sql(f"INSERT INTO {ns}.audited VALUES (1)")
    spark.sql(f"ALTER TABLE {ns}.audited CREATE BRANCH audit")

    spark.conf.set("spark.wap.branch", "audit")
    try:
        spark.sql(f"INSERT INTO {ns}.audited VALUES (2)")
        # with the WAP branch set, reads see the staged write too
        assert rows(spark, f"SELECT id FROM {ns}.audited ORDER BY id") == [(1,), (2,)]
    finally:
        spark.conf.unset("spark.wap.branch")
    assert rows(spark, f"SELECT id FROM {ns}.audited") == [(1,)]

    [result] = spark.sql(f"CALL {CATALOG}.system.fast_forward('{NAMESPACE}.audited', 'main', 'audit')").collect()

    assert rows(spark, f"SELECT id FROM {ns}.audited ORDER BY id") == [(1,), (2,)]
    refs = metadata(client, spark_warehouse, "audited")["refs"]
    assert result["branch_updated"] == "main" and result["previous_ref"] != result["updated_ref"]
    assert refs["main"]["snapshot-id"] == refs["audit"]["snapshot-id"] == result["updated_ref"]


# -- time travel --------------------------------------------------------------------------------------

def test_time_travel(spark, ns, client, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.travelled (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.travelled VALUES (1)")
    time.sleep(0.05)  # distinct snapshot timestamps, so a timestamp picks exactly one
    spark.sql(f"INSERT INTO {ns}.travelled VALUES (2)")
    spark.sql(f"DELETE FROM {ns}.travelled WHERE id = 1")
    meta = metadata(client, spark_warehouse, "travelled")
    first, second, third = sorted(meta["snapshots"], key=lambda s: s["sequence-number"])

    assert rows(spark, f"SELECT id FROM {ns}.travelled") == [(2,)]
    assert rows(spark, f"SELECT id FROM {ns}.travelled VERSION AS OF {first['snapshot-id']}") == [(1,)]
    assert rows(spark, f"SELECT id FROM {ns}.travelled FOR SYSTEM_VERSION AS OF {second['snapshot-id']} "
                       "ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {ns}.travelled TIMESTAMP AS OF '{at_millis(first['timestamp-ms'])}'") \
        == [(1,)]
    assert rows(spark, f"SELECT id FROM {ns}.travelled FOR SYSTEM_TIME AS OF "
                       f"'{at_millis(second['timestamp-ms'])}' ORDER BY id") == [(1,), (2,)]
    assert rows(spark, f"SELECT id FROM {ns}.travelled TIMESTAMP AS OF '{at_millis(third['timestamp-ms'])}'") \
        == [(2,)]
    with pytest.raises(Exception, match="(?i)cannot find a snapshot older than"):
        spark.sql(f"SELECT id FROM {ns}.travelled TIMESTAMP AS OF "
                  f"'{at_millis(first['timestamp-ms'] - 60_000)}'").collect()


# -- evolution ----------------------------------------------------------------------------------------

def test_partition_evolution(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.evolving_parts (id BIGINT, ts TIMESTAMP, category STRING) USING iceberg")
    insert = f"INSERT INTO {ns}.evolving_parts VALUES ({{}}, TIMESTAMP '2024-0{{}}-15 10:00:00', 'c{{}}')"
    spark.sql(insert.format(1, 1, 1))
    spark.sql(f"ALTER TABLE {ns}.evolving_parts ADD PARTITION FIELD category")
    spark.sql(insert.format(2, 2, 2))
    spark.sql(f"ALTER TABLE {ns}.evolving_parts ADD PARTITION FIELD days(ts)")
    spark.sql(f"ALTER TABLE {ns}.evolving_parts REPLACE PARTITION FIELD ts_day WITH months(ts) AS ts_month")
    spark.sql(insert.format(3, 3, 3))
    spark.sql(f"ALTER TABLE {ns}.evolving_parts DROP PARTITION FIELD category")
    spark.sql(insert.format(4, 4, 4))

    assert rows(spark, f"SELECT id, category FROM {ns}.evolving_parts ORDER BY id") == [
        (1, "c1"), (2, "c2"), (3, "c3"), (4, "c4")]
    assert rows(spark, f"SELECT id FROM {ns}.evolving_parts WHERE ts >= TIMESTAMP '2024-03-01 00:00:00' "
                       "ORDER BY id") == [(3,), (4,)]
    # each file keeps the spec it was written with
    assert rows(spark, f"SELECT DISTINCT spec_id FROM {ns}.evolving_parts.files ORDER BY spec_id") == [
        (0,), (1,), (3,), (4,)]

    meta = metadata(client, spark_warehouse, "evolving_parts")
    specs = {s["spec-id"]: [(f["name"], f["transform"]) for f in s["fields"]] for s in meta["partition-specs"]}
    assert specs == {
        0: [],
        1: [("category", "identity")],
        2: [("category", "identity"), ("ts_day", "day")],
        3: [("category", "identity"), ("ts_month", "month")],
        4: [("ts_month", "month")],
    }
    assert meta["default-spec-id"] == 4
    commits = [state for topic, state in events(db, meta["table-uuid"]) if topic.endswith(".Committed")]
    assert sum("add-spec" in actions(s) for s in commits) == 4
    assert [u["spec-id"] for s in commits for u in s["updates"] if u["action"] == "set-default-spec"] == [-1] * 4


def test_schema_evolution(spark, ns, client, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.reshaped (id INT, name STRING, extra STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.reshaped VALUES (1, 'a', 'x')")

    spark.sql(f"ALTER TABLE {ns}.reshaped RENAME COLUMN name TO full_name")
    spark.sql(f"ALTER TABLE {ns}.reshaped ALTER COLUMN id TYPE BIGINT")
    spark.sql(f"ALTER TABLE {ns}.reshaped DROP COLUMN extra")
    spark.sql(f"ALTER TABLE {ns}.reshaped ADD COLUMN score DOUBLE AFTER id")
    spark.sql(f"INSERT INTO {ns}.reshaped VALUES ({2**40}, 1.5, 'b')")

    schema = spark.table(f"{ns}.reshaped").schema
    assert [(f.name, f.dataType.simpleString()) for f in schema.fields] == [
        ("id", "bigint"), ("score", "double"), ("full_name", "string")]
    assert rows(spark, f"SELECT id, score, full_name FROM {ns}.reshaped ORDER BY id") == [
        (1, None, "a"), (2**40, 1.5, "b")]

    meta = metadata(client, spark_warehouse, "reshaped")
    current = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    # field ids survive the rename and the widening; the new column gets a fresh one
    assert [(f["id"], f["name"], f["type"]) for f in current["fields"]] == [
        (1, "id", "long"), (4, "score", "double"), (2, "full_name", "string")]
    assert meta["last-column-id"] == 4
    assert len(meta["schemas"]) == 5


def test_replace_table_as_select(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.replaced (id BIGINT, v STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.replaced VALUES (1, 'old')")
    before = metadata(client, spark_warehouse, "replaced")

    spark.sql(f"REPLACE TABLE {ns}.replaced USING iceberg AS "
              "SELECT id * 10 AS id, 'new' AS label FROM VALUES (1), (2) AS s(id)")

    assert rows(spark, f"SELECT id, label FROM {ns}.replaced ORDER BY id") == [(10, "new"), (20, "new")]
    after = metadata(client, spark_warehouse, "replaced")
    assert after["table-uuid"] == before["table-uuid"]  # the same table with a new definition
    old_snapshot = before["current-snapshot-id"]
    assert old_snapshot in snapshot_ids(after) and after["current-snapshot-id"] != old_snapshot
    assert rows(spark, f"SELECT * FROM {ns}.replaced VERSION AS OF {old_snapshot}") == [(1, "old")]

    topic, state = events(db, after["table-uuid"])[-1]
    assert topic == f"{TABLE_TOPIC}.Committed"
    assert {"add-schema", "set-current-schema", "add-snapshot", "set-snapshot-ref"} <= set(actions(state))
    assert {"type": "assert-table-uuid", "uuid": before["table-uuid"]} in state["requirements"]


def test_create_or_replace_table_as_select(spark, ns, client, db, spark_warehouse):
    statement = (f"CREATE OR REPLACE TABLE {ns}.recreated USING iceberg AS "
                 "SELECT * FROM VALUES {} AS s(id, kind)")

    spark.sql(statement.format("(1, 'first')"))
    assert rows(spark, f"SELECT id, kind FROM {ns}.recreated") == [(1, "first")]
    created = metadata(client, spark_warehouse, "recreated")

    spark.sql(statement.format("(2, 'second'), (3, 'second')"))

    assert rows(spark, f"SELECT id, kind FROM {ns}.recreated ORDER BY id") == [(2, "second"), (3, "second")]
    replaced = metadata(client, spark_warehouse, "recreated")
    assert replaced["table-uuid"] == created["table-uuid"]
    assert snapshot_ids(replaced)[:1] == [created["current-snapshot-id"]] and len(replaced["snapshots"]) == 2
    history = events(db, replaced["table-uuid"])
    assert [t for t, _ in history] == [f"{TABLE_TOPIC}.Created", f"{TABLE_TOPIC}.Committed"]
    assert history[0][1]["origin"] == "commit"


def test_format_version_3(spark, ns, client, db, spark_warehouse):
    spark.sql(f"CREATE TABLE {ns}.lineage (id BIGINT, data STRING) USING iceberg TBLPROPERTIES "
              "('format-version'='3', 'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {ns}.lineage VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    # row lineage: each row gets an id from its snapshot's first-row-id (which file holds which row
    # depends on Spark's task order, so only the set of ids is fixed)
    row_ids = dict(rows(spark, f"SELECT id, _row_id FROM {ns}.lineage"))
    assert sorted(row_ids.values()) == [0, 1, 2]

    spark.sql(f"DELETE FROM {ns}.lineage WHERE id = 2")  # a deletion vector, new in v3

    assert rows(spark, f"SELECT id, data FROM {ns}.lineage ORDER BY id") == [(1, "a"), (3, "c")]
    # ...and a row keeps its id when others are deleted
    assert dict(rows(spark, f"SELECT id, _row_id FROM {ns}.lineage")) == {1: row_ids[1], 3: row_ids[3]}
    assert rows(spark, f"SELECT content, file_format FROM {ns}.lineage.delete_files") == [(1, "PUFFIN")]

    meta = metadata(client, spark_warehouse, "lineage")
    assert meta["format-version"] == 3
    assert meta["next-row-id"] >= 3
    first = min(meta["snapshots"], key=lambda s: s["sequence-number"])
    assert first["first-row-id"] == 0 and first["added-rows"] == 3
    assert events(db, meta["table-uuid"])[0][0] == f"{TABLE_TOPIC}.Created"


# -- views --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def view_base(spark, ns) -> str:
    spark.sql(f"CREATE TABLE {ns}.view_base (id BIGINT, name STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.view_base VALUES (1, 'ada'), (2, 'grace'), (3, 'edsger')")
    return f"{ns}.view_base"


def view_names(spark, ns: str) -> set[str]:
    return {r["viewName"] for r in spark.sql(f"SHOW VIEWS IN {ns}").collect()}


def test_create_and_select_view(spark, ns, view_base, client, db, spark_warehouse):
    spark.sql(f"CREATE VIEW {ns}.later AS SELECT id, upper(name) AS name FROM {view_base} WHERE id > 1")

    assert rows(spark, f"SELECT id, name FROM {ns}.later ORDER BY id") == [(2, "GRACE"), (3, "EDSGER")]
    assert "later" in view_names(spark, ns)
    assert "later" not in {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {ns}").collect()}

    served = load(client, spark_warehouse, "later", "views")["metadata"]
    [version] = served["versions"]
    [representation] = version["representations"]
    assert representation["dialect"] == "spark" and "upper(name)" in representation["sql"]
    [(topic, state)] = events(db, served["view-uuid"])
    assert topic == f"{VIEW_TOPIC}.Created" and state["name"] == "later"


def test_alter_view_properties(spark, ns, view_base, client, db, spark_warehouse):
    spark.sql(f"CREATE VIEW {ns}.owned AS SELECT id FROM {view_base}")

    spark.sql(f"ALTER VIEW {ns}.owned SET TBLPROPERTIES ('owner-team' = 'data', 'tier' = 'gold')")
    spark.sql(f"ALTER VIEW {ns}.owned UNSET TBLPROPERTIES ('tier')")

    shown = dict(rows(spark, f"SHOW TBLPROPERTIES {ns}.owned"))
    assert shown.get("owner-team") == "data" and "tier" not in shown
    served = load(client, spark_warehouse, "owned", "views")["metadata"]
    assert served["properties"].get("owner-team") == "data" and "tier" not in served["properties"]
    assert rows(spark, f"SELECT count(*) FROM {ns}.owned") == [(3,)]
    history = events(db, served["view-uuid"])
    assert [t for t, _ in history] == [f"{VIEW_TOPIC}.Created"] + [f"{VIEW_TOPIC}.Replaced"] * 2
    assert "set-properties" in actions(history[1][1]) and "remove-properties" in actions(history[2][1])


def test_create_or_replace_view(spark, ns, view_base, client, spark_warehouse):
    spark.sql(f"CREATE VIEW {ns}.moving AS SELECT id FROM {view_base} WHERE id = 1")
    assert rows(spark, f"SELECT id FROM {ns}.moving") == [(1,)]

    spark.sql(f"CREATE OR REPLACE VIEW {ns}.moving AS SELECT id, name FROM {view_base} WHERE id >= 2")

    assert rows(spark, f"SELECT id, name FROM {ns}.moving ORDER BY id") == [(2, "grace"), (3, "edsger")]
    served = load(client, spark_warehouse, "moving", "views")["metadata"]
    assert len(served["versions"]) == 2
    assert served["current-version-id"] == max(v["version-id"] for v in served["versions"])
    current = next(s for s in served["schemas"]
                   if s["schema-id"] == next(v for v in served["versions"]
                                             if v["version-id"] == served["current-version-id"])["schema-id"])
    assert [f["name"] for f in current["fields"]] == ["id", "name"]


def test_drop_view(spark, ns, view_base, client, db, spark_warehouse):
    from pyspark.sql.utils import AnalysisException

    spark.sql(f"CREATE VIEW {ns}.fleeting AS SELECT id FROM {view_base}")
    view_id = load(client, spark_warehouse, "fleeting", "views")["metadata"]["view-uuid"]

    spark.sql(f"DROP VIEW {ns}.fleeting")

    assert "fleeting" not in view_names(spark, ns)
    with pytest.raises(AnalysisException, match="(?i)cannot be found|not found"):
        spark.sql(f"SELECT * FROM {ns}.fleeting").collect()
    r = client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/views/fleeting")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchViewException"
    assert events(db, view_id)[-1][0] == f"{TABULAR_TOPIC}.Dropped"
    assert rows(spark, f"SELECT count(*) FROM {view_base}") == [(3,)]  # the view's table is untouched


def test_rename_view(spark, ns, view_base, client, db, spark_warehouse):
    spark.sql(f"CREATE VIEW {ns}.draft AS SELECT id FROM {view_base} WHERE id < 3")
    view_id = load(client, spark_warehouse, "draft", "views")["metadata"]["view-uuid"]

    spark.sql(f"ALTER VIEW {ns}.draft RENAME TO {ns}.final")

    assert rows(spark, f"SELECT id FROM {ns}.final ORDER BY id") == [(1,), (2,)]
    names = view_names(spark, ns)
    assert "final" in names and "draft" not in names
    assert load(client, spark_warehouse, "final", "views")["metadata"]["view-uuid"] == view_id
    topic, state = events(db, view_id)[-1]
    assert topic == f"{TABULAR_TOPIC}.Renamed" and (state["from_name"], state["to_name"]) == ("draft", "final")


def test_view_and_table_names_clash(spark, ns, view_base, client, log_length, spark_warehouse):
    spark.sql(f"CREATE VIEW {ns}.taken_by_view AS SELECT id FROM {view_base}")
    length = log_length()

    with pytest.raises(Exception, match="(?i)already exists"):
        spark.sql(f"CREATE VIEW {ns}.view_base AS SELECT 1 AS one")
    with pytest.raises(Exception, match="(?i)already exists"):
        spark.sql(f"CREATE TABLE {ns}.taken_by_view (id BIGINT) USING iceberg")

    assert log_length() == length
    assert rows(spark, f"SELECT count(*) FROM {view_base}") == [(3,)]
    assert rows(spark, f"SELECT count(*) FROM {ns}.taken_by_view") == [(3,)]
    r = client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/tables/taken_by_view")
    assert r.status_code == 404
