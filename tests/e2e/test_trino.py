"""Trino 476 as a real client: its Iceberg connector uses Lakeledger as a REST catalog over a file warehouse,
beside Spark. One Trino serves the whole session (tests/e2e/conftest.py)."""

import uuid

import pytest


@pytest.fixture
def sql(trino):
    conn = trino.connect()
    cursor = conn.cursor()

    def run(statement: str) -> list:
        cursor.execute(statement)
        return cursor.fetchall()

    yield run
    conn.close()


@pytest.fixture
def schema(sql):
    name = f"trino_{uuid.uuid4().hex[:8]}"
    sql(f"CREATE SCHEMA lake.{name}")
    return name


def test_create_insert_update_delete_time_travel_and_drop(sql, schema, client, spark_warehouse):
    t = f"lake.{schema}.orders"
    sql(f"CREATE TABLE {t} (id BIGINT, name VARCHAR) WITH (format_version = 2)")
    assert sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')") == [[3]]
    [[first]] = sql(f'SELECT snapshot_id FROM lake.{schema}."orders$snapshots" ORDER BY committed_at DESC LIMIT 1')
    assert sql(f"DELETE FROM {t} WHERE id = 2") == [[1]]
    assert sql(f"UPDATE {t} SET name = 'z' WHERE id = 3") == [[1]]
    assert sql(f"SELECT * FROM {t} ORDER BY id") == [[1, "a"], [3, "z"]]
    # merge-on-read: the delete and the update wrote delete files, not rewritten data files
    assert sql(f'SELECT count(*) FROM lake.{schema}."orders$files" WHERE content = 1')[0][0] >= 1
    assert sql(f"SELECT * FROM {t} FOR VERSION AS OF {first} ORDER BY id") == [[1, "a"], [2, "b"], [3, "c"]]
    loaded = client.get(f"{spark_warehouse['prefix']}/namespaces/{schema}/tables/orders").json()["metadata"]
    snapshots = sql(f'SELECT count(*) FROM lake.{schema}."orders$snapshots"')[0][0]
    assert len(loaded["snapshots"]) == snapshots >= 3  # the catalog serves what Trino committed
    sql(f"DROP TABLE {t}")
    assert client.get(f"{spark_warehouse['prefix']}/namespaces/{schema}/tables/orders").status_code == 404


def test_create_table_as_select(sql, schema):
    assert sql(f"CREATE TABLE lake.{schema}.squares AS SELECT x, x * x AS sq FROM UNNEST(sequence(0, 9)) t(x)") \
        == [[10]]
    assert sql(f"SELECT count(*), sum(sq) FROM lake.{schema}.squares") == [[10, 285]]
    assert [r[0] for r in sql(f"SHOW TABLES FROM lake.{schema}")] == ["squares"]


@pytest.mark.spark
def test_trino_and_spark_read_each_others_tables(sql, schema, spark):
    spark.sql(f"CREATE TABLE lakeledger.{schema}.from_spark (id BIGINT, v STRING) USING iceberg "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO lakeledger.{schema}.from_spark VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    spark.sql(f"DELETE FROM lakeledger.{schema}.from_spark WHERE id = 2")
    assert spark.sql(f"SELECT count(*) FROM lakeledger.{schema}.from_spark.delete_files").collect()[0][0] >= 1
    assert sql(f"SELECT * FROM lake.{schema}.from_spark ORDER BY id") == [[1, "one"], [3, "three"]]

    sql(f"CREATE TABLE lake.{schema}.from_trino (id BIGINT, v VARCHAR)")
    sql(f"INSERT INTO lake.{schema}.from_trino VALUES (10, 'ten'), (20, 'twenty')")
    sql(f"DELETE FROM lake.{schema}.from_trino WHERE id = 10")
    rows = spark.sql(f"SELECT id, v FROM lakeledger.{schema}.from_trino ORDER BY id").collect()
    assert [(r.id, r.v) for r in rows] == [(20, "twenty")]
