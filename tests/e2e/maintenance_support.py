"""What the tests of table maintenance share (tests/e2e/test_table_maintenance.py and the safety tests): a server whose
workers run maintenance on Spark, a client for the warehouse, policies, tasks and history, and a table whose history is
days old."""

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pyarrow as pa
from prometheus_client.parser import text_string_to_metric_families
from pyiceberg.catalog.rest import RestCatalog
from support import Server, create_database

DAY_MS = 86_400_000
AGE_DAYS = 3
APPENDS = 12


def path_of(uri: str) -> Path:
    return Path(uri.removeprefix("file://").removeprefix("file:"))


def maintenance_database(pg_url: str) -> str:
    return create_database(pg_url, f"upkeep_{uuid.uuid4().hex[:12]}")


def maintenance_server(database: str, home: Path, jars: str, **env: str) -> Server:
    conf = {"spark.jars": jars, "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2"}
    settings = {"LAKELEDGER__MAINTENANCE": "on", "LAKELEDGER__MAINTENANCE_CHECK_SECONDS": "1",
                "LAKELEDGER__WORKER_POLL_SECONDS": "1", "LAKELEDGER__SPARK_MASTER": "local[2]",
                "LAKELEDGER__SPARK_CONF": json.dumps(conf), "LAKELEDGER__PG_POOL_SIZE": "3", **env}
    return Server(database, home, **settings)


class Stack:
    def __init__(self, server: Server, home: Path, token: str | None = None):
        """``token``: a bearer token for a server with OpenID Connect on."""
        self.server = server
        self.home = home
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=server.url, timeout=60, headers=headers)

    def warehouse(self, name: str, path: Path | None = None) -> dict:
        """A file warehouse at ``path`` (under the stack's home by default)."""
        path = path or self.home / name
        r = self.client.post("/management/v1/warehouse", json={
            "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{path}"}})
        assert r.status_code == 201, r.text
        warehouse_id = r.json()["warehouse-id"]
        return {"name": name, "id": warehouse_id, "prefix": f"/catalog/v1/{warehouse_id}", "path": path,
                "management": f"/management/v1/warehouse/{warehouse_id}"}

    def catalog(self, warehouse: dict) -> RestCatalog:
        extra = {"token": self.token} if self.token else {}
        return RestCatalog("ll", uri=f"{self.server.url}/catalog", warehouse=warehouse["name"], **extra)

    def small_files_table(self, warehouse: dict, appends: int, rows: int = 5) -> None:
        """Table ``ns.t`` of ``appends`` appends of ``rows`` rows each: one small data file per append."""
        catalog = self.catalog(warehouse)
        catalog.create_namespace("ns")
        schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
        table = catalog.create_table("ns.t", schema=schema)
        for i in range(appends):
            table.append(pa.table({"id": pa.array(range(i * rows, (i + 1) * rows), pa.int64())}, schema=schema))

    def policy(self, warehouse: dict, policy_type: str, settings: dict) -> None:
        r = self.client.put(f"{warehouse['management']}/maintenance-policies/{policy_type}", json=settings)
        assert r.status_code == 200, r.text

    def tasks(self, warehouse: dict, **body) -> list[dict]:
        r = self.client.post(f"{warehouse['management']}/task/list", json={"page-size": 100, **body})
        assert r.status_code == 200, r.text
        return r.json()["tasks"]

    def details(self, warehouse: dict, task_id: str) -> dict:
        r = self.client.get(f"{warehouse['management']}/task/by-id/{task_id}")
        assert r.status_code == 200, r.text
        return r.json()

    def history(self, warehouse: dict) -> list[dict]:
        """The warehouse's history, oldest first, every page."""
        events: list[dict] = []
        params: dict = {}
        while True:
            r = self.client.get(f"{warehouse['management']}/history", params=params)
            assert r.status_code == 200, r.text
            events += r.json()["events"]
            if not r.json().get("next-page-token"):
                return events
            params = {"pageToken": r.json()["next-page-token"]}

    def ready(self) -> int:
        return self.client.get("/health/ready").status_code


def aged_table(stack: Stack, warehouse: dict, name: str) -> dict:
    """A table of ``APPENDS`` small appends whose history is ``AGE_DAYS`` days old (see ``move_back``)."""
    catalog = stack.catalog(warehouse)
    catalog.create_namespace("ns")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    table = catalog.create_table(f"ns.{name}", schema=schema)
    for i in range(APPENDS):
        table.append(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                               "v": pa.array([f"row {n}" for n in range(i * 10, i * 10 + 10)])}, schema=schema))
    return move_back(stack, warehouse, name)


def move_back(stack: Stack, warehouse: dict, name: str, days: int = AGE_DAYS) -> dict:
    """Makes table ``ns.name``'s history ``days`` days old: unregistered and registered again from a copy of its
    current metadata with every time moved back (a catalog cannot be asked to write the past; this is the metadata a
    table left alone for days has). Its metadata, as registered."""
    table = stack.catalog(warehouse).load_table(f"ns.{name}")
    metadata = json.loads(path_of(table.metadata_location).read_text())
    shift = days * DAY_MS
    metadata["last-updated-ms"] -= shift
    for snapshot in metadata["snapshots"]:
        snapshot["timestamp-ms"] -= shift
    for entry in metadata.get("snapshot-log", []) + metadata.get("metadata-log", []):
        entry["timestamp-ms"] -= shift
    aged = path_of(table.metadata_location).parent / "aged.metadata.json"
    aged.write_text(json.dumps(metadata))
    r = stack.client.post(f"{warehouse['prefix']}/namespaces/ns/tables/{name}/unregister")
    assert r.status_code == 200, r.text
    r = stack.client.post(f"{warehouse['prefix']}/namespaces/ns/register",
                          json={"name": name, "metadata-location": f"file://{aged}"})
    assert r.status_code == 200, r.text
    return r.json()["metadata"]


def requests_by_status(stack: Stack) -> dict[tuple[str, str], float]:
    """The server's answered requests from /metrics, by (route template, status)."""
    found: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(stack.client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == "lakeledger_http_requests_total":
                key = (sample.labels["route"], sample.labels["status"])
                found[key] = found.get(key, 0) + sample.value
    return found


def table_rows(stack: Stack, warehouse: dict, name: str) -> list[tuple]:
    table = stack.catalog(warehouse).load_table(f"ns.{name}")
    return sorted(table.scan().to_arrow().to_pylist(), key=lambda r: r["id"])


def data_file_count(stack: Stack, warehouse: dict, name: str) -> int:
    table = stack.catalog(warehouse).load_table(f"ns.{name}")
    return len(table.inspect.files())


def stored(location: Path) -> tuple[int, int]:
    """How many files lie under the table's location (Hadoop's .crc checksums left out), and the data files' bytes."""
    files = [p for p in location.rglob("*") if p.is_file() and not p.name.endswith(".crc")]
    return len(files), sum(p.stat().st_size for p in files if p.suffix == ".parquet")


def ended(tasks: list[dict], queues: set[str]) -> bool:
    return {t["queue-name"] for t in tasks if t["status"] in ("SUCCESS", "FAILED")} >= queues


@contextlib.contextmanager
def maintenance_stack(pg_url: str, home: Path, jars: str) -> Iterator[Stack]:
    """A maintenance server on a database of its own (``.database`` of the stack), stopped afterwards."""
    database = maintenance_database(pg_url)
    server = maintenance_server(database, home, jars)
    try:
        stack = Stack(server, home)
        stack.database = database  # type: ignore[attr-defined]
        yield stack
    finally:
        server.stop()
