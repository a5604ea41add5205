"""Spark and Trino as two principals under OpenFGA (issue 13, point 9): on the session's server that wants tokens and
asks OpenFGA (`oidc_catalog`), an owner creates a namespace with three tables and fills them, a second principal
sees only what it was granted (one table), cannot find the second until the owner grants it select through the
permission endpoint, then reads it, and its INSERT is refused by the catalog at commit (403: the file warehouse does
not refuse the data files) with the log unchanged. Each engine authenticates with OAuth2 client credentials against
the test provider: Spark with catalogs added at run time, Trino with the catalogs it was started with."""

import uuid

import psycopg
import pytest


def log_length(database: str) -> int:
    """The catalog's changes: the scan reports a reader's engine sends are kept too (docs/metrics-reports.md), as
    events of their own that change nothing."""
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events WHERE topic NOT LIKE '%%MetricsReport.%%'"
                            ).fetchone()[0]


def grant(oidc_catalog, granter: str, path: str, relation: str, grantee: str) -> None:
    with oidc_catalog.client(granter) as c:
        r = c.post(f"/management/v1/permissions/{path}/assignments",
                   json={"writes": [{"type": relation, "user": f"oidc~{grantee}"}]})
    assert r.status_code == 204, r.text


def table_id(oidc_catalog, owner: str, warehouse: dict, namespace: str, table: str) -> str:
    with oidc_catalog.client(owner) as c:
        r = c.get(f"{warehouse['prefix']}/namespaces/{namespace}/tables/{table}")
    assert r.status_code == 200, r.text
    return r.json()["metadata"]["table-uuid"]


def snapshots(oidc_catalog, owner: str, warehouse: dict, namespace: str, table: str) -> int:
    with oidc_catalog.client(owner) as c:
        return len(c.get(f"{warehouse['prefix']}/namespaces/{namespace}/tables/{table}").json()["metadata"]
                   ["snapshots"])


def provision(oidc_catalog, who: str) -> None:
    """A principal's first request records its user (an event): made before the log is counted."""
    with oidc_catalog.client(who) as c:
        assert c.get("/management/v1/whoami").status_code == 200


@pytest.fixture(scope="module")
def spark_warehouse_of_its_own(oidc_catalog, tmp_path_factory) -> dict:
    """A file warehouse the operator (`trino`) creates and hands to `spark`: Spark's client owns it."""
    name = f"spark-{uuid.uuid4().hex[:8]}"
    path = tmp_path_factory.mktemp("spark-two-principals")
    with oidc_catalog.client("trino") as c:
        r = c.post("/management/v1/warehouse", json={
            "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{path}"}})
    assert r.status_code == 201, r.text
    wid = r.json()["warehouse-id"]
    grant(oidc_catalog, "trino", f"warehouse/{wid}", "ownership", "spark")
    return {"name": name, "id": wid, "prefix": f"/catalog/v1/{wid}"}


def _spark_catalog(spark, name: str, uri: str, warehouse: str, credential: str, token_endpoint: str) -> None:
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": uri,
                       ".warehouse": warehouse, ".cache-enabled": "false", ".credential": credential,
                       ".oauth2-server-uri": token_endpoint, ".scope": "catalog"}.items():
        spark.conf.set(f"spark.sql.catalog.{name}{key}", value)


def test_spark_as_owner_and_as_reader(spark, oidc, oidc_catalog, spark_warehouse_of_its_own):
    from pyspark.errors import AnalysisException

    warehouse = spark_warehouse_of_its_own
    uri = f"{oidc_catalog.server.url}/catalog"
    _spark_catalog(spark, "fga_owner", uri, warehouse["name"], "spark:spark-secret", oidc.token_endpoint)
    _spark_catalog(spark, "fga_bob", uri, warehouse["name"], "bob:bob-secret", oidc.token_endpoint)

    spark.sql("CREATE NAMESPACE fga_owner.sales")
    for table in ("orders", "costs", "shared"):
        spark.sql(f"CREATE TABLE fga_owner.sales.{table} (id BIGINT, item STRING) USING iceberg")
    spark.sql("INSERT INTO fga_owner.sales.orders VALUES (1, 'apples'), (2, 'pears')")
    spark.sql("INSERT INTO fga_owner.sales.shared VALUES (7, 'public')")
    ids = {t: table_id(oidc_catalog, "spark", warehouse, "sales", t) for t in ("orders", "shared")}
    grant(oidc_catalog, "spark", f"warehouse/{warehouse['id']}/table/{ids['shared']}", "select", "bob")
    provision(oidc_catalog, "bob")

    def tables(catalog: str) -> list[str]:
        return sorted(row.tableName for row in spark.sql(f"SHOW TABLES IN {catalog}.sales").collect())

    before = log_length(oidc_catalog.database)
    assert tables("fga_bob") == ["shared"]
    assert spark.sql("SELECT item FROM fga_bob.sales.shared").collect()[0].item == "public"
    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql("SELECT * FROM fga_bob.sales.orders").collect()
    assert log_length(oidc_catalog.database) == before

    # granted through the permission endpoint by the table's owner; effective when the call returns
    grant(oidc_catalog, "spark", f"warehouse/{warehouse['id']}/table/{ids['orders']}", "select", "bob")
    rows = spark.sql("SELECT id, item FROM fga_bob.sales.orders ORDER BY id").collect()
    assert [(r.id, r.item) for r in rows] == [(1, "apples"), (2, "pears")]

    before = log_length(oidc_catalog.database)
    with pytest.raises(Exception) as refused:
        spark.sql("INSERT INTO fga_bob.sales.orders VALUES (3, 'stolen')")
    # the catalog refuses the commit (the file warehouse let the data file be written)
    message = f"ForbiddenException: Forbidden: oidc~bob may not can_commit on table {ids['orders']}"
    assert message in str(refused.value), str(refused.value)[:2000]
    assert log_length(oidc_catalog.database) == before
    assert snapshots(oidc_catalog, "spark", warehouse, "sales", "orders") == 1
    assert spark.sql("SELECT count(*) FROM fga_owner.sales.orders").collect()[0][0] == 2

    assert tables("fga_owner") == ["costs", "orders", "shared"]
    assert tables("fga_bob") == ["orders", "shared"]


@pytest.fixture
def trino_sql(trino):
    connections = {}

    def run(catalog: str, statement: str) -> list:
        if catalog not in connections:
            connections[catalog] = trino.connect(catalog)
        cursor = connections[catalog].cursor()
        cursor.execute(statement)
        return cursor.fetchall()

    yield run
    for conn in connections.values():
        conn.close()


def test_trino_as_owner_and_as_reader(trino_sql, oidc_catalog):
    """`lake_oidc` authenticates as `trino` (the operator, owner of what it creates), `lake_oidc_reader` as
    `trino-reader`; both on warehouse `oidc`."""
    import trino.exceptions

    owner, reader = "lake_oidc", "lake_oidc_reader"
    warehouse = oidc_catalog.warehouse
    schema = f"fga_{uuid.uuid4().hex[:8]}"
    trino_sql(owner, f"CREATE SCHEMA {owner}.{schema}")
    for table in ("orders", "costs", "shared"):
        trino_sql(owner, f"CREATE TABLE {owner}.{schema}.{table} (id BIGINT, item VARCHAR)")
    assert trino_sql(owner, f"INSERT INTO {owner}.{schema}.orders VALUES (1, 'apples'), (2, 'pears')") == [[2]]
    assert trino_sql(owner, f"INSERT INTO {owner}.{schema}.shared VALUES (7, 'public')") == [[1]]
    ids = {t: table_id(oidc_catalog, "trino", warehouse, schema, t) for t in ("orders", "shared")}
    grant(oidc_catalog, "trino", f"warehouse/{warehouse['id']}/table/{ids['shared']}", "select", "trino-reader")
    provision(oidc_catalog, "trino-reader")

    def tables(catalog: str) -> list[str]:
        return sorted(row[0] for row in trino_sql(catalog, f"SHOW TABLES FROM {catalog}.{schema}"))

    before = log_length(oidc_catalog.database)
    assert tables(reader) == ["shared"]
    assert trino_sql(reader, f"SELECT item FROM {reader}.{schema}.shared") == [["public"]]
    with pytest.raises(trino.exceptions.TrinoUserError) as missing:
        trino_sql(reader, f"SELECT * FROM {reader}.{schema}.orders")
    assert missing.value.error_name == "TABLE_NOT_FOUND", missing.value
    assert log_length(oidc_catalog.database) == before

    grant(oidc_catalog, "trino", f"warehouse/{warehouse['id']}/table/{ids['orders']}", "select", "trino-reader")
    assert trino_sql(reader, f"SELECT id, item FROM {reader}.{schema}.orders ORDER BY id") == \
        [[1, "apples"], [2, "pears"]]

    before = log_length(oidc_catalog.database)
    with pytest.raises(trino.exceptions.TrinoQueryError) as refused:
        trino_sql(reader, f"INSERT INTO {reader}.{schema}.orders VALUES (3, 'stolen')")
    assert f"oidc~trino-reader may not can_commit on table {ids['orders']}" in str(refused.value), refused.value
    assert log_length(oidc_catalog.database) == before
    assert snapshots(oidc_catalog, "trino", warehouse, schema, "orders") == 2  # the empty first one, the insert
    assert trino_sql(owner, f"SELECT count(*) FROM {owner}.{schema}.orders") == [[2]]

    assert tables(owner) == ["costs", "orders", "shared"]
    assert tables(reader) == ["orders", "shared"]
