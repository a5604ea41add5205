"""PySpark 3.5 with Iceberg's runtime and aws-bundle jars on an STS-enabled S3 warehouse (the session's MinIO),
holding no S3 keys of its own: CREATE, INSERT, MERGE, SELECT and DROP through vended credentials and again
through the catalog's remote signer; undrop after a drop, and DROP ... PURGE removing the table's objects and
nothing else. The two catalogs join the session's one SparkSession at run time (Spark loads a catalog plugin the
first time a statement names it)."""

import uuid

import pytest

pytestmark = pytest.mark.spark

MODES = {"vended": "vended-credentials", "signing": "remote-signing"}
KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")
AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
           "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_SHARED_CREDENTIALS_FILE")


@pytest.fixture(scope="module")
def s3_lake(spark, server, client, minio, bucket):
    """An S3 warehouse with a soft delete profile, and one Spark catalog per access-delegation mode on it."""
    jvm_env = {name: spark._jvm.java.lang.System.getenv(name) for name in AWS_ENV}
    assert not any(jvm_env.values()), f"Spark's JVM must hold no AWS keys of its own: {jvm_env}"
    name = f"spark-s3-{uuid.uuid4().hex[:12]}"
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name, **{"sts-enabled": True}),
        "storage-credential": minio.credential(),
        "delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    assert r.status_code == 201, r.text
    for catalog, delegation in MODES.items():
        prefix = f"spark.sql.catalog.s3_{catalog}"
        spark.conf.set(prefix, "org.apache.iceberg.spark.SparkCatalog")
        spark.conf.set(f"{prefix}.type", "rest")
        spark.conf.set(f"{prefix}.uri", f"{server.url}/catalog")
        spark.conf.set(f"{prefix}.warehouse", name)
        spark.conf.set(f"{prefix}.cache-enabled", "false")
        spark.conf.set(f"{prefix}.header.X-Iceberg-Access-Delegation", delegation)
    return {"name": name, "id": r.json()["warehouse-id"], "bucket": bucket, "key-prefix": name,
            "prefix": f"/catalog/v1/{r.json()['warehouse-id']}"}


def rows(spark, query: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(query).collect())


def location_of(client, lake: dict, namespace: str, table: str) -> str:
    r = client.get(f"{lake['prefix']}/namespaces/{namespace}/tables/{table}")
    assert r.status_code == 200, r.text
    return r.json()["metadata"]["location"]


def objects(minio, lake: dict, location: str) -> list[str]:
    assert location.startswith(f"s3://{lake['bucket']}/{lake['key-prefix']}/"), location
    return minio.keys(lake["bucket"], location.split("/", 3)[3] + "/")


def table_io_properties(spark, catalog: str, namespace: str, table: str) -> dict:
    """The properties of the FileIO that Spark's Iceberg catalog built for the table: what the catalog handed it."""
    iceberg = spark._jsparkSession.sessionState().catalogManager().catalog(f"s3_{catalog}").icebergCatalog()
    identifier = spark._jvm.org.apache.iceberg.catalog.TableIdentifier.parse(f"{namespace}.{table}")
    return dict(iceberg.loadTable(identifier).io().properties())


@pytest.mark.parametrize("mode", list(MODES))
def test_create_insert_merge_select_drop(spark, server, client, minio, s3_lake, mode):
    ns = f"spark_{mode}"
    name = f"s3_{mode}.{ns}.accounts"
    spark.sql(f"CREATE NAMESPACE s3_{mode}.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, balance BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, 100), (2, 200), (3, 300)")
    spark.sql(f"""
        MERGE INTO {name} t
        USING (SELECT * FROM VALUES (2, 250), (4, 400) AS s(id, balance)) s
        ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET t.balance = s.balance
        WHEN NOT MATCHED THEN INSERT *
    """)
    spark.sql(f"INSERT INTO {name} VALUES (5, 500)")
    assert rows(spark, f"SELECT * FROM {name}") == [(1, 100), (2, 250), (3, 300), (4, 400), (5, 500)]

    io = table_io_properties(spark, mode, ns, "accounts")
    if mode == "vended":  # STS session keys, never the warehouse's own
        assert io["s3.session-token"] and io["s3.access-key-id"] != minio.user
    else:
        assert io["s3.remote-signing-enabled"] == "true"
        assert not [k for k in KEYS if k in io], "the signing case must carry no S3 keys"
        assert io["s3.signer.uri"] == f"{server.url}/catalog" and io["s3.signer.endpoint"].startswith("signer/")

    location = location_of(client, s3_lake, ns, "accounts")
    files = objects(minio, s3_lake, location)
    assert sum(k.endswith(".parquet") for k in files) >= 3
    assert sum(k.endswith(".metadata.json") for k in files) == 4  # create + insert + merge + insert

    spark.sql(f"DROP TABLE {name}")
    assert rows(spark, f"SHOW TABLES IN s3_{mode}.{ns}") == []
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.sql(f"SELECT * FROM {name}").collect()
    assert objects(minio, s3_lake, location) == files  # a plain drop leaves the files to the catalog


def test_undrop_then_write_on(spark, client, s3_lake):
    ns, table = "spark_undrop", "events"
    name = f"s3_vended.{ns}.{table}"
    spark.sql(f"CREATE NAMESPACE s3_vended.{ns}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, data STRING) USING iceberg")
    spark.sql(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    spark.sql(f"DROP TABLE {name}")

    r = client.get(f"/management/v1/warehouse/{s3_lake['id']}/deleted-tabulars", params={"pageSize": 1000})
    (entry,) = [t for t in r.json()["tabulars"] if t["namespace"] == [ns] and t["name"] == table]
    r = client.post(f"/management/v1/warehouse/{s3_lake['id']}/deleted-tabulars/undrop",
                    json={"targets": [{"type": "table", "id": entry["id"]}]})
    assert r.status_code == 204, r.text

    assert rows(spark, f"SELECT * FROM {name}") == [(1, "a"), (2, "b")]
    spark.sql(f"INSERT INTO {name} VALUES (3, 'c')")  # through the signer too: it serves undropped tables
    assert rows(spark, f"SELECT * FROM s3_signing.{ns}.{table}") == [(1, "a"), (2, "b"), (3, "c")]


def test_drop_purge_on_a_soft_deleting_warehouse_leaves_every_object_for_undrop(spark, client, minio, s3_lake):
    ns = "spark_purge"
    spark.sql(f"CREATE NAMESPACE s3_signing.{ns}")
    for table in ("doomed", "kept"):
        spark.sql(f"CREATE TABLE s3_signing.{ns}.{table} (id BIGINT) USING iceberg")
        spark.sql(f"INSERT INTO s3_signing.{ns}.{table} VALUES (1), (2)")
    doomed, kept = (location_of(client, s3_lake, ns, t) for t in ("doomed", "kept"))
    kept_files, doomed_files = objects(minio, s3_lake, kept), objects(minio, s3_lake, doomed)
    assert any(k.endswith(".parquet") for k in doomed_files)

    # Iceberg 1.10's Spark deletes a purged table's files itself; the warehouse soft-deletes, so its /config told
    # Spark's S3FileIO s3.delete-enabled=false (Lakekeeper's push-s3-delete-disabled, on by default): the files stay
    # for an undrop, and the catalog's purge removes them when the drop expires
    spark.sql(f"DROP TABLE s3_signing.{ns}.doomed PURGE")
    assert objects(minio, s3_lake, doomed) == doomed_files
    assert objects(minio, s3_lake, kept) == kept_files
    assert rows(spark, f"SELECT * FROM s3_vended.{ns}.kept") == [(1,), (2,)]
