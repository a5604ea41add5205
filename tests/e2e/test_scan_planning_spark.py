"""Server-side scan planning of tables with position deletes, which pyiceberg cannot write: Spark 3.5 (Iceberg
1.10) writes a partitioned format-v2 table and deletes from it merge-on-read (position delete files), and pyiceberg
0.12 then reads the same rows through the catalog's plan as through its own."""

import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import And, EqualTo, GreaterThan, LessThan, Or

pytestmark = pytest.mark.spark

CATALOG = "lakeledger"  # SPARK_CATALOG of conftest.py


def _rows(table, row_filter=None) -> list[tuple]:
    scan = table.scan(row_filter=row_filter) if row_filter is not None else table.scan()
    return sorted(tuple(r.values()) for r in scan.to_arrow().to_pylist())


def test_position_deletes_are_planned_with_the_data_files_they_apply_to(spark, server, client, spark_warehouse):
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.planning")
    name = f"{CATALOG}.planning.mor"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, region STRING, amount DOUBLE) USING iceberg PARTITIONED BY (region) "
              "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
              "'write.update.mode'='merge-on-read')")
    spark.sql(f"INSERT INTO {name} VALUES " + ", ".join(
        f"({i}, '{['eu', 'us', 'ap'][i % 3]}', {i * 1.5})" for i in range(60)))
    spark.sql(f"INSERT INTO {name} VALUES " + ", ".join(f"({i}, 'eu', {i * 0.5})" for i in range(60, 80)))
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    spark.sql(f"DELETE FROM {name} WHERE region = 'us' AND id > 40")
    expected_total = spark.sql(f"SELECT count(*) FROM {name}").collect()[0][0]

    uri = f"{server.url}/catalog"
    client_side = RestCatalog("mor-client", uri=uri, warehouse=spark_warehouse["name"]).load_table("planning.mor")
    server_side = RestCatalog("mor-server", uri=uri, warehouse=spark_warehouse["name"],
                              **{"scan-planning-mode": "server"}).load_table("planning.mor")
    assert server_side.scan()._should_use_server_side_planning()
    for row_filter in (None, EqualTo("region", "us"), GreaterThan("id", 30),
                       Or(EqualTo("region", "ap"), And(EqualTo("region", "eu"), LessThan("id", 70)))):
        assert _rows(server_side, row_filter) == _rows(client_side, row_filter), row_filter
    assert len(_rows(server_side)) == expected_total
    assert all(i % 7 != 0 for i, _, _ in _rows(server_side))

    plan = client.post(f"{spark_warehouse['prefix']}/namespaces/planning/tables/mor/plan", json={})
    assert plan.status_code == 200, plan.text
    answer = plan.json()
    assert answer["delete-files"] and {d["content"] for d in answer["delete-files"]} == {"position-deletes"}
    referenced = {i for t in answer["file-scan-tasks"] for i in t.get("delete-file-references", [])}
    assert referenced == set(range(len(answer["delete-files"])))
    # a delete file applies only to data files of its own partition
    for task in answer["file-scan-tasks"]:
        for i in task.get("delete-file-references", []):
            assert answer["delete-files"][i]["partition"] == task["data-file"]["partition"]
