"""Test fixtures: a real Postgres (the embedded pgserver wheel, or LAKELEDGER_TEST_PG_URL), real
`lakeledger serve` processes driven over HTTP, and a fresh warehouse per test. At its end the session fails
if any process it started is still running (tests/leftovers.py)."""

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import httpx
import leftovers
import psycopg
import pytest
from support import (
    SCHEMA,
    AzuriteServer,
    FakeGcsServer,
    MinioServer,
    OidcProvider,
    OpenFgaServer,
    Server,
    create_database,
)

# The session's servers keep storage credentials encrypted with this key (LAKELEDGER__PG_ENCRYPTION_KEY).
ENCRYPTION_KEY = "lakeledger-tests-encryption-key"


_SESSION_MARK = pytest.StashKey[str]()
_OWN_TEMP_DIRS = pytest.StashKey[list]()


def pytest_configure(config):
    config.stash[_SESSION_MARK] = leftovers.mark_session()
    config.stash[_OWN_TEMP_DIRS] = []


@pytest.hookimpl(trylast=True)  # after the runner's own sessionfinish, which tears down the last fixtures
def pytest_sessionfinish(session):
    config = session.config
    temp_dirs = list(config.stash[_OWN_TEMP_DIRS])
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None and getattr(factory, "_basetemp", None) is not None:
        temp_dirs.append(factory.getbasetemp())
    left = leftovers.left_after(leftovers.started_by_session(config.stash[_SESSION_MARK], temp_dirs), 10)
    if not left:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    lines = ["processes started by this test session are still running (a fixture does not stop what it "
             "starts; they are stopped now):", *(f"  {leftovers.describe(p)}" for p in left)]
    if reporter:
        reporter.write_line("")
        reporter.write_sep("=", "leftover processes", red=True)
        for line in lines:
            reporter.write_line(line, red=True)
    else:
        print("\n".join(lines))
    leftovers.end(left)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def postgres_home(request) -> Path:
    """Where the session's embedded Postgres data directories go. Not under pytest's temporary directory: run
    as root, pgserver runs Postgres as the user `pgserver`, and every pytest session that starts on the machine
    makes /tmp/pytest-of-root private again (0700), cutting a running Postgres off its own files (PANIC)."""
    path = Path(tempfile.mkdtemp(prefix="lakeledger-tests-"))
    request.config.stash[_OWN_TEMP_DIRS].append(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url(postgres_home) -> str:
    url = os.environ.get("LAKELEDGER_TEST_PG_URL")
    if url:
        yield url
        return
    try:
        import pgserver  # noqa: F401
    except ImportError:  # pragma: no cover - the message is the point
        pytest.fail("The embedded Postgres (pgserver wheel) is missing: run `make setup`")
    from lakeledger.postgres import embedded

    # The same embedded Postgres `lakeledger serve` uses, joined by this process: stopped here, at the end
    # of the session, not at interpreter exit after the leftover check.
    postgres = embedded(postgres_home / "session" / "postgres")
    yield postgres.url
    postgres.release()


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("lakeledger")


@pytest.fixture(scope="session")
def server(pg_url, data_dir):
    s = Server(pg_url, data_dir, LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def second_server(pg_url, data_dir, server):
    """Another API process on the same database, without workers and with a default warehouse: proves
    read-your-writes across processes and zero-config clients."""
    s = Server(pg_url, data_dir, LAKELEDGER__WORKERS="off", LAKELEDGER__DEFAULT_WAREHOUSE="default-wh",
               LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY)
    yield s
    s.stop()


@pytest.fixture(scope="session")
def openfga(tmp_path_factory):
    """One OpenFGA (memory datastore) for the whole session; tests keep apart by using stores of their own."""
    server = OpenFgaServer(tmp_path_factory.mktemp("openfga"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oidc(tmp_path_factory):
    """One real OpenID provider for the whole session (oidc-provider): tokens by client credentials."""
    provider = OidcProvider(tmp_path_factory.mktemp("oidc"))
    yield provider
    provider.stop()


@pytest.fixture(scope="session")
def minio(tmp_path_factory):
    """One MinIO for the whole session (S3 with STS)."""
    m = MinioServer(tmp_path_factory.mktemp("minio"))
    yield m
    m.stop()


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """One Azurite for the whole session (Azure Blob Storage, shared key and SAS)."""
    a = AzuriteServer(tmp_path_factory.mktemp("azurite"))
    yield a
    a.stop()


@pytest.fixture(scope="session")
def fake_gcs(tmp_path_factory):
    """One fake-gcs-server for the whole session (the GCS emulator); tests keep apart by buckets or prefixes."""
    server = FakeGcsServer(tmp_path_factory.mktemp("fake-gcs"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def bucket(minio) -> str:
    """The bucket the tests' S3 warehouses share, each under a key prefix of its own."""
    return minio.make_bucket("lakeledger-tests")


@pytest.fixture
def database(pg_url) -> str:
    """A database of its own on the session's Postgres, for a test that starts servers or workers of its own."""
    return create_database(pg_url, f"own_{uuid.uuid4().hex[:12]}")


@pytest.fixture
def s3_warehouse(client, minio, bucket):
    """A fresh S3 warehouse on the session's MinIO, under its own key prefix, vending credentials:
    {"name", "id", "bucket", "key-prefix", "prefix"}."""
    name = f"s3-{uuid.uuid4().hex[:12]}"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name, **{"sts-enabled": True}),
        "storage-credential": minio.credential()})
    assert response.status_code == 201, response.text
    body = response.json()
    return {"name": name, "id": body["warehouse-id"], "bucket": bucket, "key-prefix": name,
            "prefix": f"/catalog/v1/{body['warehouse-id']}"}


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
    """Events made by requests. Expiries and purges (and a purge's attempts) are recorded by the workers on their
    own time (an earlier test's drop may be purged in the middle of a later test), so they are not counted."""
    def count() -> int:
        return db.execute("SELECT count(*) FROM lakeledger_events WHERE topic NOT LIKE '%%.Expired'"
                          " AND topic NOT LIKE '%%.Purged' AND topic NOT LIKE '%%.PurgeStarted'"
                          " AND topic NOT LIKE '%%.PurgeFailed'").fetchone()[0]
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
