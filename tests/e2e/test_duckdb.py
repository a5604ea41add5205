"""DuckDB 1.4.4 as a real client: its iceberg extension attaches the catalog over REST and reads and writes
tables in a file warehouse, beside Spark. The extensions come from the PyPI wheels duckdb-ext-iceberg,
-httpfs and -avro (`make setup`), loaded from the folder they install into: nothing is downloaded at run time."""

import uuid

import pytest
from support import duckdb_connection


@pytest.fixture(scope="module")
def lake(server, spark_warehouse):
    """A DuckDB connection with the Spark tests' warehouse attached as `lake`."""
    con = duckdb_connection()
    con.execute(f"ATTACH '{spark_warehouse['name']}' AS lake "
                f"(TYPE iceberg, ENDPOINT '{server.url}/catalog', AUTHORIZATION_TYPE 'none')")
    yield con
    con.close()


@pytest.fixture
def schema(lake):
    name = f"duck_{uuid.uuid4().hex[:8]}"
    lake.execute(f"CREATE SCHEMA lake.{name}")
    return name


def _rows(lake, sql):
    return lake.execute(sql).fetchall()


def test_create_insert_update_delete_time_travel_and_drop(lake, schema, client, spark_warehouse):
    t = f"lake.{schema}.orders"
    lake.execute(f"CREATE TABLE {t} (id BIGINT, name VARCHAR)")
    lake.execute(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    first = _rows(lake, f"SELECT snapshot_id FROM iceberg_snapshots({t}) ORDER BY sequence_number")[-1][0]
    lake.execute(f"DELETE FROM {t} WHERE id = 2")
    lake.execute(f"UPDATE {t} SET name = 'z' WHERE id = 3")
    assert _rows(lake, f"SELECT * FROM {t} ORDER BY id") == [(1, "a"), (3, "z")]
    # time travel by snapshot id, to before the delete and the update
    assert _rows(lake, f"SELECT * FROM {t} AT (VERSION => {first}) ORDER BY id") == [(1, "a"), (2, "b"), (3, "c")]
    # the catalog recorded each write as a commit, and serves the same metadata to others
    loaded = client.get(f"{spark_warehouse['prefix']}/namespaces/{schema}/tables/orders").json()["metadata"]
    assert len(loaded["snapshots"]) == len(_rows(lake, f"SELECT * FROM iceberg_snapshots({t})")) >= 3
    history = client.get(f"/management/v1/warehouse/{spark_warehouse['id']}/history",
                         params={"namespace": schema, "pageSize": 100}).json()["events"]
    assert [e["type"] for e in history].count("table.committed") >= 3
    lake.execute(f"DROP TABLE {t}")
    r = client.get(f"{spark_warehouse['prefix']}/namespaces/{schema}/tables/orders")
    assert r.status_code == 404, r.text


def test_create_table_as_select_and_create_then_insert_in_one_transaction(lake, schema):
    lake.execute(f"CREATE TABLE lake.{schema}.squares AS SELECT x, x * x AS sq FROM range(10) r(x)")
    assert _rows(lake, f"SELECT count(*), sum(sq) FROM lake.{schema}.squares") == [(10, 285)]
    lake.execute("BEGIN")
    lake.execute(f"CREATE TABLE lake.{schema}.fresh (a INTEGER)")
    lake.execute(f"INSERT INTO lake.{schema}.fresh VALUES (1), (2)")
    lake.execute("COMMIT")
    assert _rows(lake, f"SELECT sum(a) FROM lake.{schema}.fresh") == [(3,)]


@pytest.mark.spark
def test_duckdb_and_spark_read_each_others_tables(lake, schema, spark):
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS lakeledger.{schema}")
    spark.sql(f"CREATE TABLE lakeledger.{schema}.from_spark (id BIGINT, v STRING) USING iceberg "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO lakeledger.{schema}.from_spark VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    spark.sql(f"DELETE FROM lakeledger.{schema}.from_spark WHERE id = 2")
    deletes = spark.sql(f"SELECT count(*) FROM lakeledger.{schema}.from_spark.delete_files").collect()[0][0]
    assert deletes >= 1  # a position delete file, not a rewrite
    assert _rows(lake, f"SELECT * FROM lake.{schema}.from_spark ORDER BY id") == [(1, "one"), (3, "three")]

    lake.execute(f"CREATE TABLE lake.{schema}.from_duck (id BIGINT, v VARCHAR)")
    lake.execute(f"INSERT INTO lake.{schema}.from_duck VALUES (10, 'ten'), (20, 'twenty')")
    lake.execute(f"DELETE FROM lake.{schema}.from_duck WHERE id = 10")
    rows = spark.sql(f"SELECT id, v FROM lakeledger.{schema}.from_duck ORDER BY id").collect()
    assert [(r.id, r.v) for r in rows] == [(20, "twenty")]
