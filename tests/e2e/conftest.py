"""Spark fixtures shared by the Spark test modules: one SparkSession for the whole pytest session
(starting one costs ~20 s), configured as an Iceberg REST catalog on a live Lakeledger, with its own
warehouse. The prerequisites (Java, the Iceberg Spark runtime jar) fail loudly, never skip."""

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from spark_cluster import SparkStandalone
from support import NatsServer, Server, TrinoServer, create_database

SPARK_CATALOG = "lakeledger"
SPARK_RUNTIME = Path(__file__).resolve().parents[2] / ".cache/jars/iceberg-spark-runtime-3.5_2.12-1.10.0.jar"


def _spark_jars() -> str:
    """The Iceberg Spark runtime jar(s), from LAKELEDGER_SPARK_JARS or where `make spark-deps` puts them."""
    jars = os.environ.get("LAKELEDGER_SPARK_JARS", "").strip() or str(SPARK_RUNTIME)
    missing = [j for j in jars.split(",") if not Path(j).is_file()]
    if missing:
        pytest.fail(f"The Iceberg Spark runtime jar is missing ({', '.join(missing)}): run `make spark-deps`")
    return jars


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        pytest.fail("Java is needed for the Spark tests and was not found: run `make spark-deps` "
                    "(it says which JDK to install)")
    try:
        subprocess.run([java, "-version"], capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        pytest.fail(f"`{java} -version` failed ({e}): run `make spark-deps` to check the Java setup")


@pytest.fixture(scope="session")
def spark_runtime() -> str:
    """The Iceberg Spark runtime jar(s) for a Spark started by someone else (a maintenance job), Java checked."""
    _check_java()
    return _spark_jars()


@pytest.fixture(scope="session")
def spark_warehouse(client, tmp_path_factory) -> dict:
    name = f"spark-{uuid.uuid4().hex[:12]}"
    path = tmp_path_factory.mktemp("spark-warehouse")
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{path}"}})
    assert response.status_code == 201, response.text
    body = response.json()
    return {"name": name, "id": body["warehouse-id"], "path": path,
            "prefix": f"/catalog/v1/{body['warehouse-id']}"}


@pytest.fixture(scope="session")
def spark(server, spark_warehouse):
    jars = _spark_jars()
    _check_java()
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    catalog = f"spark.sql.catalog.{SPARK_CATALOG}"
    session = (
        SparkSession.builder.master("local[2]")
        .appName("lakeledger-e2e")
        .config("spark.jars", jars)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config(catalog, "org.apache.iceberg.spark.SparkCatalog")
        .config(f"{catalog}.type", "rest")
        .config(f"{catalog}.uri", f"{server.url}/catalog")
        .config(f"{catalog}.warehouse", spark_warehouse["name"])
        # Every statement goes to the server: no client-side table cache hiding what the catalog says.
        .config(f"{catalog}.cache-enabled", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        # stop() leaves the JVM PySpark launched running until this process exits (it waits for EOF on its
        # stdin): ended here, so the session's leftover-process check (tests/conftest.py) finds nothing.
        from pyspark import SparkContext

        if SparkContext._gateway is not None:
            SparkContext._gateway.shutdown()
            SparkContext._gateway.proc.stdin.close()
            SparkContext._gateway.proc.wait(60)
            SparkContext._gateway = SparkContext._jvm = None


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone cluster (tests/spark_cluster.py: a master and a worker with 2 cores and 1g, from the venv's
    PySpark) for the whole session. Jobs are drivers of their own, run as subprocesses (the maintenance runner's jobs,
    tests/e2e/test_maintenance_at_scale.py): this process may hold the `spark` fixture's SparkContext, and PySpark
    allows one per process."""
    _check_java()
    cluster = SparkStandalone(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


SPARK4_PYTHON = Path(__file__).resolve().parents[2] / ".cache/spark4/bin/python"
SPARK4_RUNTIME = Path(__file__).resolve().parents[2] / ".cache/jars/iceberg-spark-runtime-4.0_2.13-1.10.0.jar"


class Spark4:
    """A PySpark 4 session in an interpreter of its own (tests/e2e/spark4_sql.py), the catalog ``lakeledger``
    pointed at the server as the 3.5 ``spark`` fixture's is."""

    def __init__(self, python: str, settings: dict[str, str], script: str = "spark4_sql.py"):
        self.process = subprocess.Popen([python, str(Path(__file__).with_name(script)), json.dumps(settings)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.version = self._answer()["ready"]

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            pytest.fail(f"the PySpark 4 session ended (exit code {self.process.wait(60)}); its log is above")
        return json.loads(line)

    def answer(self, statement: str, command: str = "sql") -> dict:
        """``{"rows": [...]}`` or ``{"error": "..."}``; ``command``: one of the script's handlers, given ``statement``
        (any JSON) as its argument."""
        self.process.stdin.write(json.dumps({command: statement}) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def run(self, command: str, argument) -> list[list]:
        answer = self.answer(argument, command)
        assert "error" not in answer, f"{command} {argument}: {answer['error']}"
        return answer["rows"]

    def sql(self, statement: str) -> list[list]:
        answer = self.answer(statement)
        assert "error" not in answer, f"{statement}: {answer['error']}"
        return answer["rows"]

    def stop(self) -> None:
        self.process.stdin.close()
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(60)


def _spark4_session(server, warehouse: str, jars_variable: str, default_jars: Path, runtime: str,
                    catalogs: dict[str, dict[str, str]], **options: str) -> "Spark4":
    """PySpark 4.0 with an Iceberg Spark 4.0 runtime (`make spark4-deps`), each of ``catalogs`` (name: its extra
    settings) a REST catalog of ``warehouse`` on the server."""
    python = os.environ.get("LAKELEDGER_SPARK4_PYTHON", "").strip() or str(SPARK4_PYTHON)
    jars = os.environ.get(jars_variable, "").strip() or str(default_jars)
    missing = [p for p in (python, *jars.split(",")) if not Path(p).is_file()]
    if missing:
        pytest.fail(f"PySpark 4 or {runtime} is missing ({', '.join(missing)}): run `make spark4-deps`")
    _check_java()
    settings = {"spark.jars": jars, "spark.ui.enabled": "false", "spark.driver.memory": "1g",
                "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                "spark.sql.session.timeZone": "UTC",
                "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"}
    for name, extra in catalogs.items():
        catalog = f"spark.sql.catalog.{name}"
        settings |= {catalog: "org.apache.iceberg.spark.SparkCatalog", f"{catalog}.type": "rest",
                     f"{catalog}.uri": f"{server.url}/catalog", f"{catalog}.warehouse": warehouse,
                     f"{catalog}.cache-enabled": "false", **{f"{catalog}.{k}": v for k, v in extra.items()}}
    return Spark4(python, settings, **options)


@pytest.fixture(scope="session")
def spark4(server, spark_warehouse):
    """PySpark 4.0 with Iceberg's Spark 4.0 runtime (`make spark4-deps`) for the whole session."""
    session = _spark4_session(server, spark_warehouse["name"], "LAKELEDGER_SPARK4_JARS", SPARK4_RUNTIME,
                              "Iceberg's Spark 4.0 runtime", {SPARK_CATALOG: {}})
    try:
        yield session
    finally:
        session.stop()


SPARK4_PLANNING_RUNTIME = Path(__file__).resolve().parents[2] / ".cache/jars/iceberg-spark-runtime-4.0_2.13-1.11.0.jar"
SPARK_SERVER_PLANNING_CATALOG = "lakeledger_server"


@pytest.fixture(scope="module")
def spark4_planning(server, spark_warehouse):
    """PySpark 4.0 with Iceberg's Spark 4.0 runtime 1.11 (`make spark4-deps`: the first whose Java RESTCatalog plans
    scans on the server), for one module: catalog ``lakeledger`` plans on the client, ``lakeledger_server`` (the
    same warehouse) asks the server to (``scan-planning-mode=server``). Its script is tests/e2e/spark4_planning.py."""
    session = _spark4_session(server, spark_warehouse["name"], "LAKELEDGER_SPARK4_PLANNING_JARS",
                              SPARK4_PLANNING_RUNTIME, "Iceberg's Spark 4.0 runtime 1.11",
                              {SPARK_CATALOG: {"scan-planning-mode": "client"},
                               SPARK_SERVER_PLANNING_CATALOG: {"scan-planning-mode": "server"}},
                              script="spark4_planning.py")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def nats_server(tmp_path):
    store = tmp_path / "jetstream"
    store.mkdir()
    server = NatsServer(store)
    yield server
    if server.process.poll() is None:
        server.kill()


@pytest.fixture(scope="session")
def oidc_catalog(oidc, openfga, pg_url, tmp_path_factory):
    """A `lakeledger serve` that wants bearer tokens from the session's OpenID provider and asks the session's OpenFGA
    who may do what, on a database of its own, bootstrapped by the provider's client `trino` (the operator), with one
    file warehouse `oidc`, which `trino` created and owns: what the session's Trino reaches as catalogs `lake_oidc`
    (as `trino`) and `lake_oidc_reader` (as `trino-reader`, granted nothing here). `bob` may create in it (DuckDB's
    tests).
    `.client()` is an HTTP client of that server holding a fresh token of ``client``; `.database` its log's."""
    name = f"trino_oidc_{uuid.uuid4().hex[:12]}"
    database = create_database(pg_url, name)
    home = tmp_path_factory.mktemp("trino-oidc")
    server = Server(database, home, LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer,
                    LAKELEDGER__OPENID_AUDIENCE=oidc.audience, LAKELEDGER__AUTHZ_BACKEND="openfga",
                    LAKELEDGER__OPENFGA__ENDPOINT=openfga.endpoint, LAKELEDGER__OPENFGA__STORE_NAME=name,
                    LAKELEDGER__WORKER_POLL_SECONDS="0.2", LAKELEDGER__PG_POOL_SIZE="3")

    def client(who: str = "trino") -> httpx.Client:
        return httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {oidc.token(who)}"})

    try:
        with client() as c:
            r = c.post("/management/v1/bootstrap", json={"accept-terms-of-use": True, "is-operator": True})
            assert r.status_code == 204, r.text
            r = c.post("/management/v1/warehouse", json={
                "warehouse-name": "oidc", "storage-profile": {"type": "file", "location": f"file://{home / 'wh'}"}})
            assert r.status_code == 201, r.text
            warehouse_id = r.json()["warehouse-id"]
            granted = c.post(f"/management/v1/permissions/warehouse/{warehouse_id}/assignments",
                             json={"writes": [{"type": "create", "user": "oidc~bob"}]})
            assert granted.status_code == 204, granted.text
        yield SimpleNamespace(server=server, client=client, database=database, warehouse={
            "name": "oidc", "id": warehouse_id, "prefix": f"/catalog/v1/{warehouse_id}"})
    finally:
        server.stop()


@pytest.fixture(scope="session")
def trino(server, client, minio, bucket, spark_warehouse, oidc, oidc_catalog, tmp_path_factory):
    """One Trino for the whole session, on the Spark tests' warehouse (catalog `lake`), so the two engines share
    tables, on an STS-enabled S3 warehouse on the session's MinIO (catalog `lake_s3`, vended credentials only), and
    on a server that wants bearer tokens and asks OpenFGA (`oidc_catalog`: catalog `lake_oidc` with OAuth2 client
    credentials of the provider's client `trino`, `lake_oidc_reader` with those of `trino-reader`), all created here
    because Trino reads its catalogs once, at start. `trino.s3_warehouse` describes the S3 warehouse."""
    name = f"trino-s3-{uuid.uuid4().hex[:12]}"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name, **{"sts-enabled": True}),
        "storage-credential": minio.credential()})
    assert response.status_code == 201, response.text
    catalog = {"uri": f"{oidc_catalog.server.url}/catalog", "warehouse": oidc_catalog.warehouse["name"],
               "server-uri": oidc.token_endpoint, "scope": "catalog"}
    t = TrinoServer(tmp_path_factory.mktemp("trino"), f"{server.url}/catalog", spark_warehouse["name"],
                    s3_warehouse=name, s3_endpoint=minio.endpoint,
                    oauth2={"lake_oidc": {**catalog, "credential": "trino:trino-secret"},
                            "lake_oidc_reader": {**catalog, "credential": "trino-reader:trino-reader-secret"}})
    t.s3_warehouse = {"name": name, "id": response.json()["warehouse-id"], "bucket": bucket, "key-prefix": name,
                      "prefix": f"/catalog/v1/{response.json()['warehouse-id']}"}
    try:
        yield t
    finally:
        t.stop()
