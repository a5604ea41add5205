"""Undrop seen by real clients: pyiceberg and Spark drop a table (with and without purge) in a soft warehouse,
the table is gone for them while its files stay, an undrop through the Management API brings it back, the
clients read the same rows and write more, and the table's history runs on from before the drop. A recursive
namespace drop comes back whole with a namespace target."""

import uuid
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError

CATALOG = "lakeledger"  # SPARK_CATALOG of conftest.py
SOFT = {"delete-profile": {"type": "soft", "expiration-seconds": 3600}}
HARD = {"delete-profile": {"type": "hard"}}
ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "data": pa.array(["a", "b", "c"], pa.string())})


def set_profile(client, warehouse_id: str, profile: dict) -> None:
    r = client.post(f"/management/v1/warehouse/{warehouse_id}/delete-profile", json=profile)
    assert r.status_code in (200, 204), r.text


def deleted(client, warehouse_id: str) -> list[dict]:
    r = client.get(f"/management/v1/warehouse/{warehouse_id}/deleted-tabulars", params={"pageSize": 1000})
    assert r.status_code == 200, r.text
    return r.json()["tabulars"]


def deleted_id(client, warehouse_id: str, namespace: list[str], name: str) -> str:
    (entry,) = [t for t in deleted(client, warehouse_id) if t["namespace"] == namespace and t["name"] == name]
    assert entry["typ"] == "table" and entry["expiration-date"] is not None
    return entry["id"]


def undrop(client, warehouse_id: str, kind: str, id_: str) -> None:
    r = client.post(f"/management/v1/warehouse/{warehouse_id}/deleted-tabulars/undrop",
                    json={"targets": [{"type": kind, "id": id_}]})
    assert r.status_code == 204, r.text


def history_types(client, warehouse_id: str, tabular_id: str) -> list[str]:
    r = client.get(f"/management/v1/warehouse/{warehouse_id}/history",
                   params={"tabular-id": tabular_id, "pageSize": 1000})
    assert r.status_code == 200, r.text
    return [e["type"] for e in r.json()["events"]]


def files_under(location: str) -> set[Path]:
    root = Path(urlparse(location).path)
    return {p for p in root.rglob("*") if p.is_file()}


def assert_history_continues(types: list[str], commits_before: int) -> None:
    """created, its commits, dropped, undropped, then the commit made after the undrop, in that order."""
    assert types[0] == "table.created"
    assert types[1:] == ["table.committed"] * commits_before + ["table.dropped", "table.undropped",
                                                                "table.committed"], types


# -- pyiceberg ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("purge", [False, True], ids=["drop_table", "purge_table"])
def test_pyiceberg_reads_an_undropped_table_and_writes_on(server, client, warehouse, purge):
    set_profile(client, warehouse["id"], SOFT)
    catalog = RestCatalog("undrop", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", schema=ROWS.schema)
    table.append(ROWS)
    table_id, location = str(table.metadata.table_uuid), table.metadata.location
    files = files_under(location)
    assert any(f.suffix == ".parquet" for f in files)

    (catalog.purge_table if purge else catalog.drop_table)("sales.orders")
    assert not catalog.table_exists("sales.orders")
    with pytest.raises(NoSuchTableError):
        catalog.load_table("sales.orders")
    assert catalog.list_tables("sales") == []
    assert files_under(location) == files  # soft: the files wait for the expiry, purge or not

    assert deleted_id(client, warehouse["id"], ["sales"], "orders") == table_id
    undrop(client, warehouse["id"], "table", table_id)
    assert deleted(client, warehouse["id"]) == []

    back = catalog.load_table("sales.orders")
    assert str(back.metadata.table_uuid) == table_id
    assert back.scan().to_arrow().sort_by("id").to_pylist() == ROWS.to_pylist()
    back.append(ROWS.slice(0, 1))
    assert catalog.load_table("sales.orders").scan().to_arrow().num_rows == 4
    assert_history_continues(history_types(client, warehouse["id"], table_id), commits_before=1)


# -- Spark --------------------------------------------------------------------------------------------

@pytest.fixture
def soft_spark_warehouse(client, spark_warehouse):
    """The session's Spark warehouse, soft for this test only: the other Spark tests expect it hard."""
    set_profile(client, spark_warehouse["id"], SOFT)
    try:
        yield spark_warehouse
    finally:
        set_profile(client, spark_warehouse["id"], HARD)


def spark_rows(spark, query: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(query).collect())


def table_id_of(client, warehouse: dict, namespace: str, name: str) -> tuple[str, str]:
    r = client.get(f"{warehouse['prefix']}/namespaces/{namespace}/tables/{name}")
    assert r.status_code == 200, r.text
    return r.json()["metadata"]["table-uuid"], r.json()["metadata"]["location"]


def spark_table(spark, client, wh: dict, ns: str) -> tuple[str, str, set[Path]]:
    """ns.events with rows 1..3 in two commits: its id, its location and its files."""
    name = f"{CATALOG}.{ns}.events"
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, data STRING) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"INSERT INTO {name} VALUES (3, 'c')")
    table_id, location = table_id_of(client, wh, ns, "events")
    files = files_under(location)
    assert sum(f.suffix == ".parquet" for f in files) >= 2
    return table_id, location, files


@pytest.mark.spark
def test_spark_reads_an_undropped_table_and_writes_on(spark, client, soft_spark_warehouse):
    wh, ns = soft_spark_warehouse, f"undrop_{uuid.uuid4().hex[:8]}"
    name = f"{CATALOG}.{ns}.events"
    table_id, location, files = spark_table(spark, client, wh, ns)

    spark.sql(f"DROP TABLE {name}")
    assert spark_rows(spark, f"SHOW TABLES IN {CATALOG}.{ns}") == []
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {name}").collect()
    assert files_under(location) == files

    undrop(client, wh["id"], "table", deleted_id(client, wh["id"], [ns], "events"))
    assert spark_rows(spark, f"SELECT * FROM {name}") == [(1, "a"), (2, "b"), (3, "c")]
    spark.sql(f"INSERT INTO {name} VALUES (4, 'd')")
    assert spark_rows(spark, f"SELECT * FROM {name}") == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert_history_continues(history_types(client, wh["id"], table_id), commits_before=2)


@pytest.mark.spark
def test_spark_drop_purge_deletes_the_files_itself(spark, client, soft_spark_warehouse):
    """Iceberg 1.10's SparkCatalog.purgeTable asks the catalog for a plain drop (purgeRequested=false) and then
    deletes every reachable file itself: a soft delete profile keeps the table's entry and history, which an
    undrop restores, but cannot keep files that the engine removed. Set gc.enabled=false on tables that must
    survive a PURGE: Spark then refuses it before dropping anything."""
    wh, ns = soft_spark_warehouse, f"undrop_{uuid.uuid4().hex[:8]}"
    name = f"{CATALOG}.{ns}.events"
    table_id, location, _ = spark_table(spark, client, wh, ns)
    spark.sql(f"DROP TABLE {name} PURGE")
    assert not any(f.suffix == ".parquet" for f in files_under(location))  # gone, by Spark's own hand

    undrop(client, wh["id"], "table", deleted_id(client, wh["id"], [ns], "events"))
    assert table_id_of(client, wh, ns, "events")[0] == table_id  # the catalog entry came back ...
    with pytest.raises(Exception, match="NotFoundException"):  # ... the files did not
        spark.sql(f"SELECT * FROM {name}").collect()
    assert history_types(client, wh["id"], table_id)[-2:] == ["table.dropped", "table.undropped"]

    spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('gc.enabled'='false')")
    with pytest.raises(Exception, match="GC is disabled"):
        spark.sql(f"DROP TABLE {name} PURGE")
    assert table_id_of(client, wh, ns, "events")[0] == table_id


@pytest.mark.spark
def test_spark_reads_every_table_of_an_undropped_namespace(spark, client, soft_spark_warehouse):
    wh = soft_spark_warehouse
    ns = f"undrop_ns_{uuid.uuid4().hex[:8]}"
    tables = {"a": [(1, "x")], "b": [(2, "y"), (3, "z")]}
    spark.sql(f"CREATE NAMESPACE {CATALOG}.{ns}")
    for t, values in tables.items():
        spark.sql(f"CREATE TABLE {CATALOG}.{ns}.{t} (id BIGINT, data STRING) USING iceberg")
        spark.sql(f"INSERT INTO {CATALOG}.{ns}.{t} VALUES " + ", ".join(f"({i}, '{d}')" for i, d in values))
    namespace_uuid = client.get(f"{wh['prefix']}/namespaces/{ns}").json()["namespace-uuid"]

    # Iceberg 1.10's SparkCatalog drops a namespace without passing CASCADE on to the REST catalog, so
    # a non-empty namespace is refused; the recursive drop goes through the REST API itself.
    with pytest.raises(Exception, match="(?i)not empty|NamespaceNotEmpty|NON_EMPTY"):
        spark.sql(f"DROP NAMESPACE {CATALOG}.{ns} CASCADE")
    r = client.delete(f"{wh['prefix']}/namespaces/{ns}", params={"recursive": "true"})
    assert r.status_code == 204, r.text
    assert ns not in {row[0] for row in spark_rows(spark, f"SHOW NAMESPACES IN {CATALOG}")}
    entries = [t for t in deleted(client, wh["id"]) if t["namespace"] == [ns]]
    assert sorted(e["name"] for e in entries) == ["a", "b"]
    assert {e["dropped-with"] for e in entries} == {namespace_uuid}

    undrop(client, wh["id"], "namespace", namespace_uuid)
    assert ns in {row[0] for row in spark_rows(spark, f"SHOW NAMESPACES IN {CATALOG}")}
    assert {row[1] for row in spark_rows(spark, f"SHOW TABLES IN {CATALOG}.{ns}")} == set(tables)
    for t, values in tables.items():
        assert spark_rows(spark, f"SELECT * FROM {CATALOG}.{ns}.{t}") == values
    spark.sql(f"INSERT INTO {CATALOG}.{ns}.a VALUES (9, 'w')")
    assert spark_rows(spark, f"SELECT * FROM {CATALOG}.{ns}.a") == [(1, "x"), (9, "w")]
