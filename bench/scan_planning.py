"""``python -m bench.scan_planning``: how long server-side scan planning (``POST .../plan``, lakeledger/services/
scan_planning.py) takes for tables of more and more data files, beside pyiceberg planning the same scan itself.

It starts an embedded Postgres and a server (its own file warehouse), and for each of ``--files`` makes a table
whose one append writes that many data files (one per value of an identity partition, one manifest), and for each
of ``--manifests`` a table of that many appends of one file each (as many data manifests). Each is planned
``--rounds`` times without a filter and with one that keeps a single partition; plans of more manifests than
``LAKELEDGER__SCAN_PLANNING_MANIFESTS_PER_TASK`` (100) are timed with their plan tasks fetched. It prints medians
in milliseconds and checks nothing: figures, not a test."""

import argparse
import sys
import tempfile
from pathlib import Path

import httpx
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField

from bench.procs import EmbeddedPostgres, start_lakeledger
from bench.stats import median_ms

SCHEMA = Schema(NestedField(1, "k", LongType(), required=True), NestedField(2, "v", LongType(), required=True))
SPEC = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=IdentityTransform(), name="k"))


def _rows(keys: range) -> pa.Table:
    return pa.table({"k": pa.array(list(keys), pa.int64()), "v": pa.array(list(keys), pa.int64())},
                    schema=SCHEMA.as_arrow())




def _server_plan(http: httpx.Client, path: str, body: dict) -> int:
    answer = http.post(path, json=body)
    answer.raise_for_status()
    result = answer.json()
    files = len(result.get("file-scan-tasks", []))
    for task in result.get("plan-tasks", []):
        fetched = http.post(path.removesuffix("/plan") + "/tasks", json={"plan-task": task})
        fetched.raise_for_status()
        files += len(fetched.json()["file-scan-tasks"])
    return files


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.scan_planning", description=__doc__)
    p.add_argument("--files", default="10,1000", help="data files of one append (default 10,1000)")
    p.add_argument("--manifests", default="10,200", help="appends of one file each (default 10,200)")
    p.add_argument("--rounds", type=int, default=10)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        root = Path(tmp)
        pg = EmbeddedPostgres(root / "pg")
        server = start_lakeledger(pg.url, root / "data", root, WORKERS="off")
        try:
            with httpx.Client(base_url=server.url, timeout=300) as http:
                http.post("/management/v1/warehouse", json={
                    "warehouse-name": "bench", "storage-profile": {"type": "file",
                                                                   "location": f"file://{root / 'wh'}"}}
                          ).raise_for_status()
                catalog = RestCatalog("bench", uri=f"{server.url}/catalog", warehouse="bench")
                catalog.create_namespace("b")
                prefix = http.get("/catalog/v1/config", params={"warehouse": "bench"}).json()["overrides"]["prefix"]
                tables = []
                for n in (int(x) for x in args.files.split(",") if x):
                    table = catalog.create_table(f"b.files_{n}", schema=SCHEMA, partition_spec=SPEC)
                    table.append(_rows(range(n)))
                    tables.append((f"{n} files, 1 manifest", f"files_{n}", n))
                for n in (int(x) for x in args.manifests.split(",") if x):
                    table = catalog.create_table(f"b.manifests_{n}", schema=SCHEMA, partition_spec=SPEC)
                    for i in range(n):
                        table.append(_rows(range(i, i + 1)))
                    tables.append((f"{n} files, {n} manifests", f"manifests_{n}", n))
                print(f"{'table':<26}{'server all':>12}{'server 1 part':>15}{'client all':>12}{'client 1 part':>15}")
                for label, name, n in tables:
                    path = f"/catalog/v1/{prefix}/namespaces/b/tables/{name}/plan"
                    one = {"filter": {"type": "eq", "term": "k", "value": 0}}
                    assert _server_plan(http, path, {}) == n and _server_plan(http, path, one) == 1
                    local = catalog.load_table(f"b.{name}")
                    figures = [median_ms(lambda: _server_plan(http, path, {}), args.rounds),
                               median_ms(lambda: _server_plan(http, path, one), args.rounds),
                               median_ms(lambda: list(local.scan().plan_files()), args.rounds),
                               median_ms(lambda: list(local.scan(row_filter=EqualTo("k", 0)).plan_files()),
                                          args.rounds)]
                    print(f"{label:<26}" + "".join(f"{f:>12.1f}" if i % 2 == 0 else f"{f:>15.1f}"
                                                   for i, f in enumerate(figures)))
        finally:
            server.stop()
            pg.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
