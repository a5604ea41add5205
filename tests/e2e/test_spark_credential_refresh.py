"""A Spark session (Iceberg 1.10's runtime and aws-bundle) that holds one table longer than the credentials it
was vended with allow it to use them without renewal: loadTable's config names the table's credentials endpoint
(``client.refresh-credentials-endpoint``), and Iceberg's VendedCredentialsProvider renews there before expiry.

How long this takes, and why: MinIO, like AWS, refuses STS sessions shorter than 900 seconds (AssumeRole answers
"invalid token expiry" below it), so the warehouse vends 900-second credentials, its minimum. Iceberg 1.10's
provider renews five minutes before the expiry the catalog reports (``s3.session-token-expires-at-ms``). The
server here reports it 570 s early (``LAKELEDGER__VENDED_CREDENTIALS_RENEWAL_MARGIN_SECONDS``, the setting that
makes engines renew sooner), so the first renewal comes between 30 s and 330 s after the table was loaded, where it
would come after 600 s. The test keeps writing and reading through the one table object Spark holds (its catalog
cache never expires), watches the credentials endpoint being called (endpoint statistics), and then writes and
reads once more with what it was given there."""

import time
import uuid

import pytest
from support import Server

pytestmark = pytest.mark.spark

VALIDITY_SECONDS = 900  # the least S3 STS grants (and the profile allows)
MARGIN_SECONDS = 570
ENCRYPTION_KEY = "lakeledger-tests-encryption-key"  # the shared server's (tests/conftest.py): one database
CREDENTIALS_ROUTE = "GET /catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials"


def _refresh_calls(client, warehouse_id: str) -> int:
    r = client.post("/management/v1/endpoint-statistics",
                    json={"warehouse": {"type": "warehouse-id", "id": warehouse_id}})
    assert r.status_code == 200, r.text
    return sum(e["count"] for bucket in r.json()["called-endpoints"] for e in bucket
               if e["http-route"] == CREDENTIALS_ROUTE and e["status-code"] == 200)


@pytest.fixture
def early_renewal(pg_url, tmp_path):
    """An API process of the shared database that tells engines its credentials expire MARGIN_SECONDS early."""
    s = Server(pg_url, tmp_path, LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY, LAKELEDGER__WORKERS="off",
               LAKELEDGER__ENDPOINT_STATISTICS_FLUSH_SECONDS="1",
               LAKELEDGER__VENDED_CREDENTIALS_RENEWAL_MARGIN_SECONDS=str(MARGIN_SECONDS))
    yield s
    s.stop()


def test_a_session_holding_a_table_past_its_credentials_renewal_renews_them_and_writes_on(
        spark, early_renewal, client, minio, bucket):
    server = early_renewal
    name = f"spark-refresh-{uuid.uuid4().hex[:12]}"
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-credential": minio.credential(),
        "storage-profile": minio.profile(bucket, name, **{"sts-enabled": True,
                                                          "sts-token-validity-seconds": VALIDITY_SECONDS})})
    assert r.status_code == 201, r.text
    warehouse_id = r.json()["warehouse-id"]
    catalog = f"spark.sql.catalog.s3_refresh_{uuid.uuid4().hex[:6]}"
    short = catalog.rsplit(".", 1)[1]
    spark.conf.set(catalog, "org.apache.iceberg.spark.SparkCatalog")
    spark.conf.set(f"{catalog}.type", "rest")
    spark.conf.set(f"{catalog}.uri", f"{server.url}/catalog")
    spark.conf.set(f"{catalog}.warehouse", name)
    spark.conf.set(f"{catalog}.header.X-Iceberg-Access-Delegation", "vended-credentials")
    # one table object (and FileIO) for the whole session: what a long-running job holds
    spark.conf.set(f"{catalog}.cache-enabled", "true")
    spark.conf.set(f"{catalog}.cache.expiration-interval-ms", "-1")

    table = f"{short}.refresh.events"
    spark.sql(f"CREATE NAMESPACE {short}.refresh")
    spark.sql(f"CREATE TABLE {table} (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (0)")
    iceberg = spark._jsparkSession.sessionState().catalogManager().catalog(short).icebergCatalog()
    io = dict(iceberg.loadTable(spark._jvm.org.apache.iceberg.catalog.TableIdentifier.parse("refresh.events"))
              .io().properties())
    assert io["client.refresh-credentials-endpoint"] == \
        f"v1/{warehouse_id}/namespaces/refresh/tables/events/credentials"
    assert io["client.refresh-credentials-enabled"] == "true"
    expires_at = int(io["s3.session-token-expires-at-ms"]) / 1000
    assert expires_at - time.time() <= VALIDITY_SECONDS - MARGIN_SECONDS
    assert _refresh_calls(client, warehouse_id) == 0

    written = 1
    # Iceberg's VendedCredentialsProvider prefetches from five minutes before the expiry on (the AWS SDK's cache
    # jitters the moment), and must renew by the expiry itself
    renewal_due = expires_at - 300
    deadline = expires_at + 60
    while _refresh_calls(client, warehouse_id) == 0:
        assert time.time() < deadline, "the credentials endpoint was never called"
        spark.sql(f"INSERT INTO {table} VALUES ({written})")
        written += 1
        assert spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0] == written
        time.sleep(min(30.0, max(1.0, renewal_due - time.time())))
    # with the renewed credentials (the ones from the properties are now inside their last five minutes)
    spark.sql(f"INSERT INTO {table} VALUES ({written})")
    written += 1
    assert sorted(r[0] for r in spark.sql(f"SELECT id FROM {table}").collect()) == list(range(written))
    assert _refresh_calls(client, warehouse_id) >= 1
