"""Spark's DROP TABLE sends no purgeRequested: in a warehouse whose drop-purge-default is "keep" (the REST spec's
default) the files stay, and Spark registers the dropped table again from its last metadata file."""

import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

CATALOG = "lakeledger"  # SPARK_CATALOG of conftest.py
NAMESPACE = "dropkeep"


@pytest.fixture
def keep(client, spark_warehouse):
    """The session's Spark warehouse with drop-purge-default "keep" for one test, then "purge" again."""
    setting = f"/management/v1/warehouse/{spark_warehouse['id']}/drop-purge-default"
    r = client.post(setting, json={"drop-purge-default": "keep"})
    assert r.status_code == 200 and r.json()["drop-purge-default"] == "keep", r.text
    yield
    assert client.post(setting, json={"drop-purge-default": "purge"}).status_code == 200


def test_spark_drop_table_keeps_the_files_and_the_table_can_be_registered_again(spark, keep, client, db,
                                                                                spark_warehouse):
    ns = f"{CATALOG}.{NAMESPACE}"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE TABLE {ns}.kept (id BIGINT, data STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.kept VALUES (1, 'a'), (2, 'b')")
    loaded = client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/tables/kept").json()
    metadata_location, table_uuid = loaded["metadata-location"], loaded["metadata"]["table-uuid"]

    spark.sql(f"DROP TABLE {ns}.kept")

    assert "kept" not in {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {ns}").collect()}
    assert db.execute("SELECT purge_requested FROM ll_tabulars WHERE id = %s", (table_uuid,)).fetchone()[0] is False
    time.sleep(1.5)  # the purge worker would have acted by now
    assert Path(metadata_location.removeprefix("file://")).is_file()

    spark.sql(f"CALL {CATALOG}.system.register_table(table => '{NAMESPACE}.kept', "
              f"metadata_file => '{metadata_location}')").collect()
    assert [tuple(r) for r in spark.sql(f"SELECT id, data FROM {ns}.kept ORDER BY id").collect()] == \
        [(1, "a"), (2, "b")]
    again = client.get(f"{spark_warehouse['prefix']}/namespaces/{NAMESPACE}/tables/kept").json()
    assert again["metadata"]["table-uuid"] == table_uuid
    spark.sql(f"DROP TABLE {ns}.kept PURGE")
