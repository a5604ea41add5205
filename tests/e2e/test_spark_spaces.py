"""Spark (Iceberg's Java REST client) sends a space in a path as `+`: names with spaces are reachable from it, as
from every other client (tests/api/test_plus_names.py covers the HTTP forms)."""

import pytest

pytestmark = pytest.mark.spark

CATALOG = "lakeledger"  # SPARK_CATALOG of conftest.py


def test_spark_reaches_namespaces_tables_and_views_with_spaces(spark, client, spark_warehouse):
    ns = f"{CATALOG}.`sp ace`"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {ns}")
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.`sp ace`.`in ner`")
    spark.sql(f"CREATE TABLE {ns}.`my table` (id BIGINT, data STRING) USING iceberg")
    spark.sql(f"INSERT INTO {ns}.`my table` VALUES (1, 'a'), (2, 'b')")
    assert [tuple(r) for r in spark.sql(f"SELECT id, data FROM {ns}.`my table` ORDER BY id").collect()] == \
        [(1, "a"), (2, "b")]
    spark.sql(f"ALTER TABLE {ns}.`my table` ADD COLUMN note STRING")
    spark.sql(f"CREATE VIEW {ns}.`my view` AS SELECT id FROM {ns}.`my table`")
    assert [r[0] for r in spark.sql(f"SELECT id FROM {ns}.`my view` ORDER BY id").collect()] == [1, 2]
    assert {r["namespace"] for r in spark.sql(f"SHOW NAMESPACES IN {ns}").collect()} == {"`sp ace`.`in ner`"}
    # what Spark made is what a %20 client reads
    loaded = client.get(f"{spark_warehouse['prefix']}/namespaces/sp%20ace/tables/my%20table")
    assert loaded.status_code == 200, loaded.text
    assert [f["name"] for f in loaded.json()["metadata"]["schemas"][-1]["fields"]] == ["id", "data", "note"]
    spark.sql(f"DROP VIEW {ns}.`my view`")
    spark.sql(f"DROP TABLE {ns}.`my table`")
    spark.sql(f"DROP NAMESPACE {CATALOG}.`sp ace`.`in ner`")
    spark.sql(f"DROP NAMESPACE {ns}")
    assert client.get(f"{spark_warehouse['prefix']}/namespaces/sp%20ace").status_code == 404
