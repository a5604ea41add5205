"""DuckDB 1.4.4 on an S3 warehouse (the session's MinIO) with no S3 keys of its own: the iceberg extension asks the
catalog for vended credentials (ACCESS_DELEGATION_MODE 'vended_credentials', its default, spelt out here) and turns
each table's storage-credentials into an S3 secret scoped to that table's location."""

import pytest
from support import duckdb_connection


@pytest.fixture(autouse=True)
def no_ambient_aws_credentials(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))


def _attach(server, s3_warehouse):
    con = duckdb_connection()
    assert con.execute("SELECT count(*) FROM duckdb_secrets() WHERE type = 's3'").fetchone() == (0,)
    con.execute(f"ATTACH '{s3_warehouse['name']}' AS lake (TYPE iceberg, ENDPOINT '{server.url}/catalog', "
                "AUTHORIZATION_TYPE 'none', ACCESS_DELEGATION_MODE 'vended_credentials')")
    return con


def test_create_write_read_on_s3_with_vended_credentials(server, client, minio, s3_warehouse):
    con = _attach(server, s3_warehouse)
    con.execute("CREATE SCHEMA lake.sales")
    con.execute("CREATE TABLE lake.sales.orders (id BIGINT, name VARCHAR)")
    con.execute("INSERT INTO lake.sales.orders VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    con.execute("INSERT INTO lake.sales.orders VALUES (4, 'd')")
    assert con.execute("SELECT * FROM lake.sales.orders ORDER BY id").fetchall() == \
        [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    con.execute("DELETE FROM lake.sales.orders WHERE id = 2")
    assert con.execute("SELECT id FROM lake.sales.orders ORDER BY id").fetchall() == [(1,), (3,), (4,)]

    loaded = client.get(f"{s3_warehouse['prefix']}/namespaces/sales/tables/orders").json()
    location = loaded["metadata"]["location"]
    assert location.startswith(f"s3://{s3_warehouse['bucket']}/{s3_warehouse['key-prefix']}/"), location
    assert len(loaded["metadata"]["snapshots"]) == 3
    # every S3 secret DuckDB holds is one the catalog vended: scoped to the table, an STS key, not MinIO's own
    secrets = con.execute("SELECT provider, scope, secret_string FROM duckdb_secrets() WHERE type = 's3'").fetchall()
    assert secrets
    for provider, scope, text in secrets:
        assert provider == "config" and scope == [location], (provider, scope)
        assert "session_token=redacted" in text and f"key_id={minio.user};" not in text
    keys = minio.keys(s3_warehouse["bucket"], location.split("/", 3)[3] + "/")
    assert len([k for k in keys if k.endswith(".parquet")]) >= 3, keys  # two inserts and a delete file
    con.close()

    # a new connection, holding nothing but what the catalog vends at attach, reads the table back
    fresh = _attach(server, s3_warehouse)
    assert fresh.execute("SELECT id, name FROM lake.sales.orders ORDER BY id").fetchall() == \
        [(1, "a"), (3, "c"), (4, "d")]
    fresh.execute("CREATE TABLE lake.sales.squares AS SELECT x, x * x AS sq FROM range(10) r(x)")
    assert fresh.execute("SELECT count(*), sum(sq) FROM lake.sales.squares").fetchall() == [(10, 285)]
    fresh.close()


def test_without_delegation_duckdb_has_no_way_into_the_bucket(server, minio, s3_warehouse):
    """The counter-proof: the same table attached with ACCESS_DELEGATION_MODE 'none', and an S3 secret that points
    at the same MinIO without keys, is refused by MinIO; so the reads above went through the vended credentials."""
    con = _attach(server, s3_warehouse)
    con.execute("CREATE SCHEMA lake.p")
    con.execute("CREATE TABLE lake.p.t (id BIGINT)")
    con.execute("INSERT INTO lake.p.t VALUES (1)")
    assert con.execute("SELECT id FROM lake.p.t").fetchall() == [(1,)]
    con.close()
    bare = duckdb_connection()
    # the endpoint is MinIO's, so nothing is sent anywhere else; no key, so requests go out anonymous
    bare.execute(f"CREATE SECRET anonymous (TYPE s3, ENDPOINT '127.0.0.1:{minio.port}', URL_STYLE 'path', "
                 "USE_SSL false, REGION 'us-east-1')")
    bare.execute(f"ATTACH '{s3_warehouse['name']}' AS lake (TYPE iceberg, ENDPOINT '{server.url}/catalog', "
                 "AUTHORIZATION_TYPE 'none', ACCESS_DELEGATION_MODE 'none')")
    with pytest.raises(Exception) as refused:
        bare.execute("SELECT * FROM lake.p.t").fetchall()
    assert "403" in str(refused.value), str(refused.value)
    bare.close()
