"""The Spark Connect side of `make conformance` (scripts/conformance.py): the server that pyiceberg's integration
suite reaches through its ``spark`` fixture (``SparkSession.builder.remote("sc://localhost:15002")``), and the
provisioning of the tables its read tests expect (upstream's dev/provision.py, run over that server).

The server is the one pyiceberg 0.12.0's harness builds (dev/spark: Spark 4.0.1, Iceberg's Spark 4.0 runtime and AWS
bundle), run from the conformance venv's own PySpark 4.0.1 (its jars are a Spark distribution's) with the
catalogs of upstream's dev/spark/spark-defaults.conf mapped onto this run:

* ``rest`` (the default catalog) is our `lakeledger serve` at localhost:8181, with no ``warehouse``, so it gets the
  server's default warehouse as pyiceberg's own ``session_catalog`` does; its FileIO is ResolvingFileIO, so Spark
  reads and writes both the file warehouse of the first pass and the S3 warehouse (MinIO at localhost:9000) of the
  second, and the ``s3://warehouse/...`` files some tests write themselves;
* ``hive`` and Spark's session catalog are upstream's Hive Metastore, which this run does not have: not configured.
  The tests that use them fail, and are listed as the test environment's in scripts/conformance.known-failures.txt.

Stdlib only: it runs in the project venv next to scripts/conformance.py, which imports it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PORT = 15002  # Spark Connect's default, hardcoded in pyiceberg's `spark` fixture and dev/provision.py
JARS = Path(os.environ.get("LAKELEDGER_CONFORMANCE_JARS", ROOT / ".cache" / "jars"))
# pyiceberg 0.12.0's harness (dev/spark/Dockerfile) runs Iceberg 1.11.0; this is the project's Iceberg (the Makefile's
# ICEBERG_VERSION) because 1.11.0's S3 remote signer sends a sign request that Lakeledger's signer refuses (400,
# "provider: Extra inputs are not permitted"), which would stop the S3 pass at provisioning. Spark 4.0 is built for
# Scala 2.13.
ICEBERG_VERSION = "1.10.0"
RUNTIME_JAR = f"iceberg-spark-runtime-4.0_2.13-{ICEBERG_VERSION}.jar"
AWS_BUNDLE_JAR = f"iceberg-aws-bundle-{ICEBERG_VERSION}.jar"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DRIVER_MEMORY = "2g"


def jars() -> list[Path]:
    """The Iceberg jars the server loads (`make conformance-spark-deps`); missing ones are named."""
    wanted = [JARS / RUNTIME_JAR, JARS / AWS_BUNDLE_JAR]
    missing = [str(jar) for jar in wanted if not jar.exists()]
    if missing:
        raise FileNotFoundError(f"{', '.join(missing)} missing: run `make conformance-spark-deps`")
    return wanted


def spark_home(python: Path) -> Path:
    """The pyspark package of the conformance venv: a Spark distribution (bin/, jars/) of the client's version."""
    found = subprocess.run([str(python), "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    home = Path(found)
    if not (home / "bin" / "spark-submit").exists():
        raise FileNotFoundError(f"{home} has no bin/spark-submit: the conformance venv needs pyspark, not "
                                f"pyspark-client")
    if not any((home / "jars").glob("spark-connect_*.jar")):
        raise FileNotFoundError(f"{home / 'jars'} has no spark-connect jar")
    return home


def catalog_conf(lakeledger_uri: str, s3_endpoint: str, access_key: str, secret_key: str) -> dict[str, str]:
    """Upstream's spark-defaults.conf, its `rest` catalog pointed at this run's server and MinIO."""
    rest = "spark.sql.catalog.rest"
    return {
        "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
        rest: "org.apache.iceberg.spark.SparkCatalog",
        f"{rest}.type": "rest",
        f"{rest}.uri": lakeledger_uri,
        f"{rest}.io-impl": "org.apache.iceberg.io.ResolvingFileIO",
        f"{rest}.s3.endpoint": s3_endpoint,
        f"{rest}.s3.path-style-access": "true",
        f"{rest}.s3.access-key-id": access_key,
        f"{rest}.s3.secret-access-key": secret_key,
        f"{rest}.client.region": "us-east-1",
        f"{rest}.cache-enabled": "false",
        "spark.sql.defaultCatalog": "rest",
        "spark.sql.ansi.enabled": "false",
        # upstream's container runs in UTC; several tests compare timestamps Spark renders
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
    }


def _processes():
    """harness/processes.py, the process helpers shared with the tests and the bench (standard library only)."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    from harness import processes

    return processes


def start(python: Path, work: Path, conf: dict[str, str]):
    """A Spark Connect server (local[2], driver memory DRIVER_MEMORY) listening on PORT, in a process group of its
    own (spark-submit execs the JVM), its scratch space, configuration and log under ``work``; a harness
    ``Child``, stopped (and RuntimeError raised) if it does not listen within five minutes."""
    processes = _processes()
    home = spark_home(python)
    work.mkdir(parents=True, exist_ok=True)
    settings = {**conf, "spark.local.dir": str(work / "local"),
                "spark.sql.warehouse.dir": str(work / "spark-warehouse"),
                "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC -Djava.io.tmpdir={work}"}
    command = [str(home / "bin" / "spark-submit"), "--master", "local[2]", "--driver-memory", DRIVER_MEMORY,
               "--class", SERVER_CLASS, "--name", "lakeledger-conformance-spark-connect",
               "--jars", ",".join(str(jar) for jar in jars()),
               *(arg for key, value in settings.items() for arg in ("--conf", f"{key}={value}"))]
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME", "PYSPARK_PYTHON", "SPARK_CONF_DIR")}
    # upstream's container has these; the AWS SDK's default chain reads them
    env.update({"SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1", "AWS_REGION": "us-east-1",
                "AWS_ACCESS_KEY_ID": conf["spark.sql.catalog.rest.s3.access-key-id"],
                "AWS_SECRET_ACCESS_KEY": conf["spark.sql.catalog.rest.s3.secret-access-key"],
                "SPARK_CONF_DIR": str(work / "conf")})
    # Spark logs every task at INFO; warnings are what the log is read for
    (work / "conf").mkdir(exist_ok=True)
    (work / "conf" / "log4j2.properties").write_text(
        "rootLogger.level = warn\nrootLogger.appenderRef.stderr.ref = console\n"
        "appender.console.type = Console\nappender.console.name = console\nappender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\n"
        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n"
        "logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer\n"
        "logger.connect.level = info\n")
    server = processes.Child(command, work / "spark-connect.log", env, new_session=True,
                             name="the Spark Connect server")
    server.wait_ready(processes.port_accepts(PORT), 300, 1)
    return server


# dev/provision.py provisions every table in the `rest` catalog and again in the `hive` one, in one loop over
# this mapping; the run has no Hive metastore, so the loop is narrowed to `rest`.
PROVISION_LOOP = "for catalog_name, catalog in catalogs.items():"
PROVISION_REST_ONLY = "for catalog_name, catalog in [(n, c) for n, c in catalogs.items() if n == 'rest']:"


def provision_source(provision_py: Path) -> str:
    source = provision_py.read_text()
    if source.count(PROVISION_LOOP) != 1:
        raise ValueError(f"{provision_py} no longer has one `{PROVISION_LOOP}`: update conformance_spark.py")
    return source.replace(PROVISION_LOOP, PROVISION_REST_ONLY)
