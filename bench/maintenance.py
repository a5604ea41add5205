"""``python -m bench.maintenance``: what table maintenance buys a table of many small appends, and how fast its
data compaction runs on Spark in the worker's machine (``local[2]``) and on a Spark standalone cluster.

It starts an embedded Postgres and a server whose workers run maintenance (docs/table-maintenance.md), makes two
tables of ``--appends`` small appends each (pyiceberg, fifty appends to a commit, each its own snapshot, data file and
manifest), and times scanning one of them (pyiceberg reading every row; planning by pyiceberg; planning by the
catalog, ``POST …/plan``) before and after its data and metadata compaction ran on ``local[2]``. The second table is
compacted by a server whose jobs go to a Spark standalone cluster of one worker with two cores (tests/spark_cluster.py,
from the venv's PySpark). Throughput is the data files a compaction rewrote per second of its job, the job's JVM start
included, as the run's figures report it. Medians of ``--rounds``; it prints figures and checks nothing."""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog

from bench.procs import ROOT, EmbeddedPostgres, start_lakeledger
from bench.stats import median_ms

JARS = ROOT / ".cache/jars/iceberg-spark-runtime-3.5_2.12-1.10.0.jar"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
ROWS_PER_APPEND = 4
APPENDS_PER_COMMIT = 50
COMPACTION = {"enabled": True, "trigger-small-files": 10, "min-input-files": 2}
MANIFESTS = {"enabled": True, "trigger-manifests": 5}




def _build(catalog: RestCatalog, name: str, appends: int) -> None:
    table = catalog.create_table(f"b.{name}", schema=SCHEMA, properties={"commit.manifest-merge.enabled": "false"})
    for first in range(0, appends, APPENDS_PER_COMMIT):
        with table.transaction() as tx:
            for n in range(first, min(first + APPENDS_PER_COMMIT, appends)):
                ids = range(n * ROWS_PER_APPEND, (n + 1) * ROWS_PER_APPEND)
                tx.append(pa.table({"id": pa.array(ids, pa.int64()), "v": [f"row {i}" for i in ids]}, schema=SCHEMA))


class Catalog:
    """The bench's warehouse on one server: pyiceberg, plans, policies and the runs' tasks."""

    def __init__(self, url: str, warehouse: str):
        self.http = httpx.Client(base_url=url, timeout=300)
        self.catalog = RestCatalog("bench", uri=f"{url}/catalog", warehouse=warehouse)
        self.warehouse_id = self.http.get("/catalog/v1/config", params={"warehouse": warehouse}).json()[
            "overrides"]["prefix"]

    def scan_figures(self, name: str, rounds: int) -> dict[str, float]:
        table = self.catalog.load_table(f"b.{name}")
        path = f"/catalog/v1/{self.warehouse_id}/namespaces/b/tables/{name}/plan"

        def server_plan() -> None:
            answer = self.http.post(path, json={})
            answer.raise_for_status()
            for task in answer.json().get("plan-tasks", []):
                self.http.post(path.removesuffix("/plan") + "/tasks", json={"plan-task": task}).raise_for_status()

        return {"files": len(table.inspect.files()),
                "read": median_ms(lambda: table.scan().to_arrow(), rounds),
                "plan": median_ms(lambda: list(table.scan().plan_files()), rounds),
                "server plan": median_ms(server_plan, rounds)}

    def maintain(self, name: str, policies: dict[str, dict], timeout: float = 1800) -> dict[str, dict]:
        """Sets ``policies`` on the table and waits for a run of each to end; each run's details by queue."""
        table_id = self.catalog.load_table(f"b.{name}").metadata.table_uuid
        management = f"/management/v1/warehouse/{self.warehouse_id}"
        for policy_type, settings in policies.items():
            self.http.put(f"{management}/table/{table_id}/maintenance-policies/{policy_type}",
                          json=settings).raise_for_status()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            tasks = self.http.post(f"{management}/task/list", json={"page-size": 100}).json()["tasks"]
            done = [t for t in tasks if t["entity"].get("table-id") == str(table_id)
                    and t["status"] in ("SUCCESS", "FAILED")]
            if len(done) == len(policies):
                return {t["queue-name"]: self.http.get(f"{management}/task/by-id/{t['task-id']}").json()
                        for t in done}
            time.sleep(1)
        raise SystemExit(f"the maintenance runs of {name} did not end within {timeout:.0f} s")

    def close(self) -> None:
        self.http.close()


def _server(pg_url: str, root: Path, name: str, master: str, conf: dict[str, str]):
    return start_lakeledger(pg_url, root / "data", root, name, MAINTENANCE="on", MAINTENANCE_CHECK_SECONDS="1",
                            WORKER_POLL_SECONDS="1", SPARK_MASTER=master, SPARK_PYTHON=sys.executable,
                            SPARK_CONF=json.dumps({"spark.jars": str(JARS), "spark.driver.memory": "512m",
                                                   "spark.sql.shuffle.partitions": "2", **conf}))


def _throughput(details: dict) -> tuple[int, float, float]:
    figures, seconds = details["task-data"]["figures"], details["task-data"]["seconds"]
    return figures["rewritten_data_files_count"], seconds, figures["rewritten_data_files_count"] / seconds


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.maintenance", description=__doc__)
    p.add_argument("--appends", type=int, default=500, help="small appends of each table (default 500)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args(argv)
    if not JARS.is_file():
        raise SystemExit(f"{JARS} is missing: run `make spark-deps`")
    sys.path.insert(0, str(ROOT / "tests"))
    from spark_cluster import SparkStandalone

    with tempfile.TemporaryDirectory(prefix="bench-maintenance-") as tmp:
        root = Path(tmp)
        pg = EmbeddedPostgres(root / "pg")
        cluster = None
        server = _server(pg.url, root, "local", "local[2]", {"spark.default.parallelism": "2"})
        try:
            with httpx.Client(base_url=server.url, timeout=60) as http:
                http.post("/management/v1/warehouse", json={"warehouse-name": "bench", "storage-profile": {
                    "type": "file", "location": f"file://{root / 'wh'}"}}).raise_for_status()
            lake = Catalog(server.url, "bench")
            lake.catalog.create_namespace("b")
            started = time.perf_counter()
            for name in ("local", "cluster"):
                _build(lake.catalog, name, args.appends)
            built = (time.perf_counter() - started) / 2
            before = lake.scan_figures("local", args.rounds)
            on_local = lake.maintain("local", {"system.data-compaction": COMPACTION,
                                               "system.metadata-compaction": MANIFESTS})
            after = lake.scan_figures("local", args.rounds)
            lake.close()
            server.stop()

            cluster = SparkStandalone(root / "cluster")
            server = _server(pg.url, root, "cluster", cluster.master_url, cluster.job_settings(cores=2))
            lake = Catalog(server.url, "bench")
            on_cluster = lake.maintain("cluster", {"system.data-compaction": COMPACTION})
            lake.close()
        finally:
            server.stop()
            if cluster is not None:
                cluster.stop()
            pg.stop()

    print(f"a table of {args.appends} small appends, built in {built:.0f} s (pyiceberg, {APPENDS_PER_COMMIT} "
          "appends to a commit)")
    print(f"{'scan, median ms':<30}{'before':>10}{'after':>10}{'ratio':>8}")
    for key in ("read", "plan", "server plan"):
        print(f"{key:<30}{before[key]:>10.1f}{after[key]:>10.1f}{before[key] / after[key]:>8.1f}")
    print(f"{'data files':<30}{before['files']:>10}{after['files']:>10}")
    print(f"{'data compaction':<30}{'files':>10}{'job s':>10}{'files/s':>10}")
    for label, details in (("local[2]", on_local["data_compaction"]),
                           ("standalone cluster (2 cores)", on_cluster["data_compaction"])):
        files, seconds, rate = _throughput(details)
        print(f"{label:<30}{files:>10}{seconds:>10.1f}{rate:>10.1f}")
    manifests = on_local["metadata_compaction"]["task-data"]
    print(f"metadata compaction on local[2]: {manifests['seconds']:.1f} s, figures {manifests['figures']}")


if __name__ == "__main__":
    main(sys.argv[1:])
