"""Test fixtures: a real Postgres (the embedded pgserver wheel, or LAKELEDGER_TEST_PG_URL), real
`lakeledger serve` processes driven over HTTP, and a fresh warehouse per test."""

import os
import uuid
from pathlib import Path

import httpx
import psycopg
import pytest
from support import SCHEMA, Server


@pytest.fixture(scope="session")
def pg_url(tmp_path_factory) -> str:
    url = os.environ.get("LAKELEDGER_TEST_PG_URL")
    if url:
        return url
    try:
        import pgserver
    except ImportError:  # pragma: no cover - the message is the point
        pytest.fail("The embedded Postgres (pgserver wheel) is missing: run `make setup`")
    server = pgserver.get_server(tmp_path_factory.mktemp("pg"), cleanup_mode="delete")
    return server.get_uri()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lakeledger")


@pytest.fixture(scope="session")
def server(pg_url, data_dir):
    s = Server(pg_url, data_dir)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def second_server(pg_url, data_dir, server):
    """Another API process on the same database, without workers and with a default warehouse: proves
    read-your-writes across processes and zero-config clients."""
    s = Server(pg_url, data_dir, LAKELEDGER__WORKERS="off", LAKELEDGER__DEFAULT_WAREHOUSE="default-wh")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def client(server):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture
def warehouse(client, tmp_path):
    """A fresh file warehouse for one test: {"name", "id", "location", "path", "prefix"}."""
    name = f"wh-{uuid.uuid4().hex[:12]}"
    path = tmp_path / "warehouse"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{path}"}})
    assert response.status_code == 201, response.text
    body = response.json()
    return {"name": name, "id": body["warehouse-id"], "location": f"file://{path}", "path": path,
            "prefix": f"/catalog/v1/{body['warehouse-id']}"}


@pytest.fixture(scope="session")
def db(pg_url, server):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        yield conn


@pytest.fixture
def log_length(db):
    """Events made by requests. Expiries and purges are recorded by the workers on their own time (an earlier
    test's drop may be purged in the middle of a later test), so they are not counted."""
    def count() -> int:
        return db.execute("SELECT count(*) FROM lakeledger_events WHERE topic NOT LIKE '%%.Expired'"
                          " AND topic NOT LIKE '%%.Purged'").fetchone()[0]
    return count


@pytest.fixture
def table_factory(client, warehouse):
    """Creates namespace + table through the REST API and returns the table's path prefix."""
    def make(namespace: str = "ns", name: str = "t", **extra) -> str:
        client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [namespace]})
        r = client.post(f"{warehouse['prefix']}/namespaces/{namespace}/tables",
                        json={"name": name, "schema": SCHEMA, **extra})
        assert r.status_code == 200, r.text
        return f"{warehouse['prefix']}/namespaces/{namespace}/tables/{name}"
    return make
