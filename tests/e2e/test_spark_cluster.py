"""Iceberg work on a Spark standalone cluster (`spark_cluster`: a master and a worker from the venv's PySpark) with
Lakeledger as the job's REST catalog: the driver is a subprocess (spark_cluster_job.py), as the maintenance runner's
jobs are, and its executors run on the worker. Small inserts, then Iceberg's rewrite_data_files procedure through
the catalog; the catalog records the rewrite as a `replace` snapshot and the master lists the job as finished."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import wait_until

pytestmark = pytest.mark.spark

CATALOG = "lakeledger"  # the catalog spark_cluster_settings configures
JOB = Path(__file__).with_name("spark_cluster_job.py")
INSERTS = 3


def _run_job(settings: dict[str, str], statements: list[str], name: str) -> tuple[list[list[dict]], str]:
    """Each statement's rows and the application's id."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    job = json.dumps({"name": name, "settings": settings, "statements": statements})
    try:
        done = subprocess.run([sys.executable, str(JOB), job], env=env, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the Spark job did not end within 600 s:\n{e.stderr}")
    assert done.returncode == 0, f"the Spark job failed ({done.returncode}):\n{done.stderr[-6000:]}"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return [line["rows"] for line in lines if "rows" in line], lines[-1]["application"]


def test_rewrite_data_files_on_the_cluster(spark_cluster, spark_cluster_settings, client, warehouse):
    settings = spark_cluster_settings(warehouse["name"])
    table = f"{CATALOG}.ns.t"
    read = f"SELECT id, data FROM {table} ORDER BY id"
    statements = [f"CREATE NAMESPACE {CATALOG}.ns",
                  f"CREATE TABLE {table} (id bigint, data string) USING iceberg",
                  # one row each: one data file each
                  *(f"INSERT INTO {table} VALUES ({i}, 'row {i}')" for i in range(INSERTS)),
                  f"SELECT count(*) AS files FROM {table}.files",
                  read,
                  f"CALL {CATALOG}.system.rewrite_data_files(table => 'ns.t', "
                  "options => map('min-input-files', '2'))",
                  read,
                  f"SELECT count(*) AS files FROM {table}.files"]
    results, application = _run_job(settings, statements, "lakeledger-rewrite-data-files")
    files_before, rows_before, (rewrite,), rows_after, files_after = results[-5:]

    assert files_before == [{"files": INSERTS}]
    assert rewrite["rewritten_data_files_count"] == INSERTS
    assert rewrite["added_data_files_count"] == 1
    assert files_after == [{"files": 1}]
    assert rows_after == rows_before == [{"id": i, "data": f"row {i}"} for i in range(INSERTS)]

    metadata = client.get(f"{warehouse['prefix']}/namespaces/ns/tables/t").json()["metadata"]
    snapshots = {s["snapshot-id"]: s for s in metadata["snapshots"]}
    current = snapshots[metadata["current-snapshot-id"]]
    assert current["summary"]["operation"] == "replace"
    assert snapshots[current["parent-snapshot-id"]]["summary"]["operation"] == "append"
    assert len(snapshots) == INSERTS + 1

    finished = wait_until(lambda: [a for a in spark_cluster.completed_applications() if a["id"] == application],
                          60, f"the master listing {application} as completed")
    assert finished[0]["state"] == "FINISHED"
    assert finished[0]["name"] == "lakeledger-rewrite-data-files"
    # the tasks ran in an executor the worker launched, not in the driver
    executors = spark_cluster.executor_dirs(application)
    assert executors, f"the worker launched no executor for {application}"
    assert any("Running task" in (e / "stderr").read_text(errors="replace") for e in executors)
    # with the Iceberg runtime fetched from the driver (spark.jars), not found on the worker's classpath
    runtime = next(Path(j).name for j in settings["spark.jars"].split(",") if "iceberg-spark-runtime" in j)
    assert all((e / runtime).is_file() for e in executors)
