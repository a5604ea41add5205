"""Trino 476 against a catalog that wants bearer tokens (issue 13, point 9): catalog `lake_oidc` of the session's
Trino (tests/e2e/conftest.py) has `iceberg.rest-catalog.security=OAUTH2` and the client credentials of the OpenID
provider's client `trino`; Trino's Iceberg REST client fetches its token from the provider's token endpoint, and
every event its statements cause names `oidc~trino`."""

import uuid

import pytest


@pytest.fixture
def sql(trino):
    conn = trino.connect("lake_oidc")
    cursor = conn.cursor()

    def run(statement: str) -> list:
        cursor.execute(statement)
        return cursor.fetchall()

    yield run
    conn.close()


def _history(client, warehouse_id: str, **filters) -> list[dict]:
    r = client.get(f"/management/v1/warehouse/{warehouse_id}/history", params={"pageSize": 1000, **filters})
    assert r.status_code == 200, r.text
    return r.json()["events"]


def test_trino_catalog_authenticates_with_client_credentials(trino):
    properties = (trino.log_path.parent / "etc" / "catalog" / "lake_oidc.properties").read_text()
    assert "iceberg.rest-catalog.security=OAUTH2" in properties
    assert "iceberg.rest-catalog.oauth2.credential=trino:trino-secret" in properties
    assert "oauth2.token=" not in properties  # no token handed over: Trino asks the provider for its own


def test_create_insert_select_as_the_trino_principal(sql, oidc_catalog):
    schema = f"trino_oidc_{uuid.uuid4().hex[:8]}"
    sql(f"CREATE SCHEMA lake_oidc.{schema}")
    t = f"lake_oidc.{schema}.orders"
    sql(f"CREATE TABLE {t} (id BIGINT, name VARCHAR) WITH (format_version = 2)")
    assert sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')") == [[3]]
    assert sql(f"DELETE FROM {t} WHERE id = 2") == [[1]]
    assert sql(f"SELECT * FROM {t} ORDER BY id") == [[1, "a"], [3, "c"]]

    warehouse = oidc_catalog.warehouse
    with oidc_catalog.client("trino") as client:
        table = client.get(f"{warehouse['prefix']}/namespaces/{schema}/tables/orders")
        assert table.status_code == 200, table.text
        # what Trino committed: an empty first snapshot with the table, the insert, the delete
        assert len(table.json()["metadata"]["snapshots"]) == 3
        events = _history(client, warehouse["id"], namespace=schema)  # the schema's and its tables' events
        types = [e["type"] for e in events]
        assert types[:2] == ["namespace.created", "table.created"] and types.count("table.committed") >= 2, types
        assert {e["actor"] for e in events} == {"oidc~trino"}
        # the same server refuses a caller without a token: Trino's statements went through only with its own
        anonymous = client.get(f"{warehouse['prefix']}/namespaces/{schema}/tables/orders",
                               headers={"Authorization": ""})
        assert anonymous.status_code == 401, anonymous.text
