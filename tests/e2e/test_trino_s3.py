"""Trino 476 on an S3 warehouse (the session's MinIO) with no S3 keys of its own: catalog `lake_s3` of the
session's Trino (tests/e2e/conftest.py) asks the catalog for vended credentials and reads and writes with its
native S3 file system."""

import uuid

import pytest


@pytest.fixture
def sql(trino):
    conn = trino.connect("lake_s3")
    cursor = conn.cursor()

    def run(statement: str) -> list:
        cursor.execute(statement)
        return cursor.fetchall()

    yield run
    conn.close()


def test_trino_holds_no_s3_keys(trino):
    properties = (trino.log_path.parent / "etc" / "catalog" / "lake_s3.properties").read_text()
    assert "vended-credentials-enabled=true" in properties
    assert not [line for line in properties.splitlines() if "key" in line.split("=")[0]], properties


def test_create_insert_select_delete_and_drop_on_s3(sql, trino, client, minio):
    wh = trino.s3_warehouse
    schema = f"trino_s3_{uuid.uuid4().hex[:8]}"
    sql(f"CREATE SCHEMA lake_s3.{schema}")
    t = f"lake_s3.{schema}.orders"
    sql(f"CREATE TABLE {t} (id BIGINT, name VARCHAR) WITH (format_version = 2)")
    assert sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')") == [[3]]
    assert sql(f"INSERT INTO {t} VALUES (4, 'd')") == [[1]]
    assert sql(f"SELECT * FROM {t} ORDER BY id") == [[1, "a"], [2, "b"], [3, "c"], [4, "d"]]
    assert sql(f"DELETE FROM {t} WHERE id = 2") == [[1]]  # a position delete file, written to S3 too
    assert sql(f"SELECT id FROM {t} ORDER BY id") == [[1], [3], [4]]

    loaded = client.get(f"{wh['prefix']}/namespaces/{schema}/tables/orders",
                        headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert loaded.status_code == 200, loaded.text
    location = loaded.json()["metadata"]["location"]
    assert location.startswith(f"s3://{wh['bucket']}/{wh['key-prefix']}/"), location
    # what Trino committed is what the catalog serves (Trino's CREATE TABLE commits an empty snapshot too)
    [[snapshots]] = sql(f'SELECT count(*) FROM lake_s3.{schema}."orders$snapshots"')
    assert len(loaded.json()["metadata"]["snapshots"]) == snapshots >= 3
    # the files Trino wrote landed in MinIO under the table's location, inside the warehouse prefix
    keys = minio.keys(wh["bucket"], location.split("/", 3)[3] + "/")
    data = [k for k in keys if k.endswith(".parquet")]
    assert len(data) >= 3, keys  # two inserts and a delete file
    assert [k for k in keys if "/metadata/" in k and k.endswith(".avro")], keys  # manifests and manifest lists
    [[files_in_table]] = sql(f'SELECT count(*) FROM lake_s3.{schema}."orders$files"')
    assert files_in_table == len(data)

    sql(f"DROP TABLE {t}")
    assert client.get(f"{wh['prefix']}/namespaces/{schema}/tables/orders").status_code == 404
    sql(f"DROP SCHEMA lake_s3.{schema}")


def test_create_table_as_select_on_s3(sql, trino, minio):
    wh = trino.s3_warehouse
    schema = f"trino_s3_{uuid.uuid4().hex[:8]}"
    sql(f"CREATE SCHEMA lake_s3.{schema}")
    assert sql(f"CREATE TABLE lake_s3.{schema}.squares AS SELECT x, x * x AS sq FROM UNNEST(sequence(0, 9)) t(x)") \
        == [[10]]
    assert sql(f"SELECT count(*), sum(sq) FROM lake_s3.{schema}.squares") == [[10, 285]]
    assert [k for k in minio.keys(wh["bucket"], f"{wh['key-prefix']}/") if k.endswith(".parquet")]
