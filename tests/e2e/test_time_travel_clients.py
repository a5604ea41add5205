"""Catalog time travel with real engines: a client configured with ``warehouse = "<name>@<instant>"`` reads
the catalog as it was then, data included, and cannot change it."""

import time
from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([1.5, 2.5, 3.5], pa.float64())})


def _instant() -> str:
    now = datetime.now(UTC)
    time.sleep(0.02)  # later events are timestamped strictly after it
    return now.isoformat().replace("+00:00", "Z")


def test_pyiceberg_reads_the_catalog_as_it_was(server, warehouse):
    url = f"{server.url}/catalog"
    live = RestCatalog("live", uri=url, warehouse=warehouse["name"])
    live.create_namespace("sales")
    table = live.create_table("sales.big", schema=ROWS.schema)
    table.append(ROWS)
    after_first_append = _instant()
    table.append(ROWS.slice(0, 1))
    live.rename_table("sales.big", "sales.large")
    live.create_table("sales.new", schema=ROWS.schema)
    after_rename = _instant()
    live.drop_table("sales.large")  # not purged: its files stay

    then = RestCatalog("then", uri=url, warehouse=f"{warehouse['name']}@{after_first_append}")
    assert then.list_namespaces() == [("sales",)]
    assert then.list_tables("sales") == [("sales", "big")]
    old = then.load_table("sales.big")
    assert len(old.metadata.snapshots) == 1
    assert old.scan().to_arrow().sort_by("id").column("id").to_pylist() == [1, 2, 3]
    with pytest.raises(NoSuchTableError):
        then.load_table("sales.new")

    later = RestCatalog("later", uri=url, warehouse=f"{warehouse['name']}@{after_rename}")
    assert sorted(later.list_tables("sales")) == [("sales", "large"), ("sales", "new")]
    assert later.load_table("sales.large").scan().to_arrow().num_rows == 4
    with pytest.raises(NoSuchTableError):
        later.load_table("sales.big")

    # and now: the dropped table is gone from the live catalog
    assert live.list_tables("sales") == [("sales", "new")]

    # the past cannot be written: /config lists no write endpoint for it, so pyiceberg does not even try
    # (the server refuses them too: tests/api/test_time_travel.py)
    with pytest.raises(NotImplementedError):
        then.create_namespace("other")
    with pytest.raises(NotImplementedError):
        then.drop_table("sales.big")
    with pytest.raises(NotImplementedError):
        old.append(ROWS)
    assert then.load_table("sales.big").metadata_location == old.metadata_location
    assert live.list_namespaces() == [("sales",)]


def test_spark_reads_the_catalog_as_it_was(spark, server, spark_warehouse):
    """Spark with ``spark.sql.catalog.x.warehouse = "<name>@<instant>"``: SQL over the catalog of then."""
    live = "lakeledger"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {live}.tt")
    spark.sql(f"CREATE TABLE {live}.tt.orders (id BIGINT, note STRING) USING iceberg")
    spark.sql(f"INSERT INTO {live}.tt.orders VALUES (1, 'a'), (2, 'b')")
    then = _instant()
    spark.sql(f"INSERT INTO {live}.tt.orders VALUES (3, 'c')")
    spark.sql(f"ALTER TABLE {live}.tt.orders RENAME TO tt.orders_renamed")

    past = "lakeledger_then"
    prefix = f"spark.sql.catalog.{past}"
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest",
                       ".uri": f"{server.url}/catalog", ".warehouse": f"{spark_warehouse['name']}@{then}",
                       ".cache-enabled": "false"}.items():
        spark.conf.set(prefix + key, value)
    rows = spark.sql(f"SELECT id FROM {past}.tt.orders ORDER BY id").collect()
    assert [r["id"] for r in rows] == [1, 2]
    assert {r["tableName"] for r in spark.sql(f"SHOW TABLES IN {past}.tt").collect()} == {"orders"}
    assert spark.sql(f"SELECT count(*) AS n FROM {live}.tt.orders_renamed").collect()[0]["n"] == 3
    with pytest.raises(Exception) as refused:
        spark.sql(f"INSERT INTO {past}.tt.orders VALUES (9, 'z')")
    assert "not support" in str(refused.value).lower() or "forbidden" in str(refused.value).lower(), refused.value
    assert [r["id"] for r in spark.sql(f"SELECT id FROM {past}.tt.orders ORDER BY id").collect()] == [1, 2]
