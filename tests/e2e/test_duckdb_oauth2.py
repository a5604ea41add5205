"""DuckDB 1.4.4 against a catalog that wants bearer tokens: an iceberg SECRET with CLIENT_ID, CLIENT_SECRET and
OAUTH2_SERVER_URI, as docs/security.md shows, on the session's authenticated server (`oidc_catalog`,
tests/e2e/conftest.py). DuckDB fetches its token from the provider itself; its events name `oidc~bob`."""

import uuid

from support import duckdb_connection


def test_duckdb_attaches_with_client_credentials(oidc, oidc_catalog):
    warehouse = oidc_catalog.warehouse
    con = duckdb_connection()
    con.execute(f"CREATE SECRET lakeledger_token (TYPE iceberg, CLIENT_ID 'bob', CLIENT_SECRET 'bob-secret', "
                f"OAUTH2_SERVER_URI '{oidc.token_endpoint}', OAUTH2_SCOPE 'catalog')")
    con.execute(f"ATTACH '{warehouse['name']}' AS lake (TYPE iceberg, "
                f"ENDPOINT '{oidc_catalog.server.url}/catalog', SECRET lakeledger_token)")
    schema = f"duck_{uuid.uuid4().hex[:8]}"
    con.execute(f"CREATE SCHEMA lake.{schema}")
    con.execute(f"CREATE TABLE lake.{schema}.squares AS SELECT x, x * x AS sq FROM range(10) r(x)")
    con.execute(f"INSERT INTO lake.{schema}.squares VALUES (10, 100)")
    assert con.sql(f"SELECT count(*), sum(sq) FROM lake.{schema}.squares").fetchall() == [(11, 385)]
    con.close()

    with oidc_catalog.client("trino") as client:
        r = client.get(f"/management/v1/warehouse/{warehouse['id']}/history",
                       params={"pageSize": 1000, "namespace": schema})
        assert r.status_code == 200, r.text
        events = r.json()["events"]
        assert {"namespace.created", "table.created", "table.committed"} <= {e["type"] for e in events}
        assert {e["actor"] for e in events} == {"oidc~bob"}


def test_duckdb_with_a_wrong_secret_cannot_attach(oidc, oidc_catalog):
    con = duckdb_connection()
    try:
        # DuckDB asks for the token when the secret is created
        con.execute(f"CREATE SECRET wrong_token (TYPE iceberg, CLIENT_ID 'bob', CLIENT_SECRET 'not-the-secret', "
                    f"OAUTH2_SERVER_URI '{oidc.token_endpoint}', OAUTH2_SCOPE 'catalog')")
        con.execute(f"ATTACH '{oidc_catalog.warehouse['name']}' AS lake (TYPE iceberg, "
                    f"ENDPOINT '{oidc_catalog.server.url}/catalog', SECRET wrong_token)")
        con.execute("SHOW ALL TABLES").fetchall()
    except Exception as e:  # noqa: BLE001 - DuckDB raises its own error classes; the message is the point
        assert f"Could not get token from {oidc.token_endpoint}" in str(e), str(e)
    else:
        raise AssertionError("DuckDB reached the catalog with a wrong client secret")
    finally:
        con.close()
