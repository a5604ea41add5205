"""Expiry timers and purges run by real `lakeledger workers` processes, on the real clock, against real
files: several workers, workers killed -9 (mid-expiry, mid-purge), timers that fell due while nothing ran.
Each test has a database of its own, an API process without workers, and the worker processes it starts;
"exactly once" is counted in the event log itself."""

import json
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.rest import RestCatalog
from support import SCHEMA, Server, WorkersProcess, wait_until


class Stack:
    """One database, one API process (workers off) and the worker processes a test starts."""

    def __init__(self, pg_url: str, data_dir: Path):
        self.pg_url, self.data_dir = pg_url, data_dir
        self.api = Server(pg_url, data_dir, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="3")
        self.client = httpx.Client(base_url=self.api.url, timeout=60)
        self.workers: list[WorkersProcess] = []

    def start_workers(self, **env: str) -> WorkersProcess:
        self.workers.append(WorkersProcess(self.pg_url, self.data_dir, **env))
        return self.workers[-1]

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        self.client.close()
        self.api.stop()

    def warehouse(self, profile: dict) -> dict:
        path = self.data_dir / f"wh-{uuid.uuid4().hex[:8]}"
        r = self.client.post("/management/v1/warehouse", json={
            "warehouse-name": path.name, "storage-profile": {"type": "file", "location": f"file://{path}"},
            "delete-profile": profile})
        assert r.status_code == 201, r.text
        wid = r.json()["warehouse-id"]
        return {"id": wid, "name": path.name, "path": path, "prefix": f"/catalog/v1/{wid}",
                "management": f"/management/v1/warehouse/{wid}"}

    def table(self, wh: dict, name: str, namespace: str = "ns", files: int = 0) -> tuple[str, Path]:
        """Creates a table (and its namespace); ``files`` small files are written under its location."""
        self.client.post(f"{wh['prefix']}/namespaces", json={"namespace": [namespace]})
        r = self.client.post(f"{wh['prefix']}/namespaces/{namespace}/tables", json={"name": name, "schema": SCHEMA})
        assert r.status_code == 200, r.text
        location = _path(r.json()["metadata"]["location"])
        for i in range(files):
            _write(location / "data" / f"part-{i:05}.bin")
        return r.json()["metadata"]["table-uuid"], location

    def drop(self, wh: dict, name: str, purge: bool, namespace: str = "ns") -> None:
        r = self.client.delete(f"{wh['prefix']}/namespaces/{namespace}/tables/{name}",
                               params={"purgeRequested": str(purge).lower()})
        assert r.status_code == 204, r.text

    def deleted(self, wh: dict) -> list[dict]:
        r = self.client.get(f"{wh['management']}/deleted-tabulars")
        assert r.status_code == 200, r.text
        return r.json()["tabulars"]

    def events(self, kind: str) -> Counter:
        """How many events of ``kind`` (Expired, Purged, Dropped) each table has in the log."""
        with psycopg.connect(self.pg_url) as conn:
            rows = conn.execute("SELECT originator_id FROM lakeledger_events WHERE topic LIKE %s",
                                (f"%:Tab%.{kind}",)).fetchall()
        return Counter(str(r[0]) for r in rows)

    def workers_caught_up(self) -> bool:
        """The expiry schedule and the purger have read the whole log: nothing is left for them to fire."""
        with psycopg.connect(self.pg_url) as conn:
            head = conn.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]
            rows = dict(conn.execute("SELECT name, position FROM ll_projection_positions"
                                     " WHERE name IN ('expiry-schedule', 'purger')").fetchall())
        return rows.get("expiry-schedule") == head and rows.get("purger") == head


def _path(location: str) -> Path:
    return Path(location.removeprefix("file://"))


def _write(path: Path, content: bytes = b"x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


def _files(path: Path) -> int:
    return sum(1 for p in path.rglob("*") if p.is_file()) if path.exists() else 0


@pytest.fixture
def stack(pg_url, tmp_path):
    name = f"exp_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    s = Stack(urlsplit(pg_url)._replace(path=f"/{name}").geturl(), tmp_path)
    yield s
    s.close()


def _drop_many(stack: Stack, wh: dict, count: int, start: int = 0) -> dict[str, tuple[Path, bool]]:
    """Creates then drops ``count`` tables, every other one with its purge requested: id -> (location, purge)."""
    made = {}
    for i in range(start, start + count):
        table_id, location = stack.table(wh, f"t{i}", files=3)
        made[table_id] = (location, i % 2 == 0)
    for i, (_, purge) in enumerate(made.values(), start):
        stack.drop(wh, f"t{i}", purge)
    return made


def _assert_exactly_once(stack: Stack, wh: dict, tables: dict[str, tuple[Path, bool]]) -> None:
    """Every table expired once; each purge-requested one purged once with its directory gone, the others'
    files untouched; nothing left in the recycle bin."""
    purged = {t for t, (_, purge) in tables.items() if purge}
    wait_until(lambda: set(stack.events("Expired")) >= set(tables) and set(stack.events("Purged")) >= purged,
               60, "the expiry and purge of every table")
    wait_until(stack.workers_caught_up, 30, "the workers catching up with the log")
    expired, purges = stack.events("Expired"), stack.events("Purged")
    assert {t: expired[t] for t in tables} == {t: 1 for t in tables}
    assert dict(purges) == {t: 1 for t in purged}
    for table_id, (location, purge) in tables.items():
        assert location.exists() is not purge, table_id
        if not purge:
            assert _files(location / "data") == 3
    assert stack.deleted(wh) == []


def test_several_workers_fire_each_timer_exactly_once(stack):
    wh = stack.warehouse({"type": "soft", "expiration-seconds": 2})
    for _ in range(3):
        stack.start_workers()
    tables = _drop_many(stack, wh, 20)
    # not the recycle bin's length: under load the first drops expire before the last is made (2 s)
    assert {t: n for t, n in stack.events("Dropped").items() if t in tables} == {t: 1 for t in tables}
    _assert_exactly_once(stack, wh, tables)


def test_worker_killed_mid_expiries_skips_and_repeats_nothing(stack):
    wh = stack.warehouse({"type": "soft", "expiration-seconds": 1})
    first = stack.start_workers(LAKELEDGER__PURGE_MAX_FILES_PER_SECOND="20")
    tables = _drop_many(stack, wh, 10)
    # a second wave, due later: the kill falls between the two, and within the first wave's slow purges
    r = stack.client.post(f"{wh['management']}/delete-profile",
                          json={"delete-profile": {"type": "soft", "expiration-seconds": 3}})
    assert r.status_code in (200, 204), r.text
    tables |= _drop_many(stack, wh, 10, start=10)
    wait_until(lambda: stack.events("Expired"), 30, "a first expiry")
    first.kill()
    assert len(stack.events("Expired")) < 20 or len(stack.events("Purged")) < 10, "the kill came too late"
    stack.start_workers()
    stack.start_workers()
    _assert_exactly_once(stack, wh, tables)


def test_timer_due_while_nothing_ran_fires_on_start(stack):
    wh = stack.warehouse({"type": "soft", "expiration-seconds": 1})
    tables = _drop_many(stack, wh, 4)
    due = max(datetime.fromisoformat(t["expiration-date"]) for t in stack.deleted(wh))
    wait_until(lambda: datetime.now(UTC) > due + timedelta(seconds=1), 30, "the expiry time passing")
    assert len(stack.deleted(wh)) == 4
    assert not stack.events("Expired") and not stack.events("Purged")
    assert all(_files(location / "data") == 3 for location, _ in tables.values())
    stack.start_workers()
    wait_until(lambda: not stack.deleted(wh), 15, "the overdue expiries firing once the workers started")
    _assert_exactly_once(stack, wh, tables)


def test_worker_killed_mid_purge_finishes_it_on_restart_and_nothing_else(stack):
    wh = stack.warehouse({"type": "hard"})
    table_id, location = stack.table(wh, "big", files=1500)
    before = _files(location)
    other_id, other = stack.table(wh, "other", files=5)
    outside = [wh["path"] / "sibling" / "keep.bin", Path(f"{location}-suffix") / "keep.bin",
               location.parent / "keep.bin"]  # a sibling directory, a name extending it, its parent
    for path in outside:
        _write(path)
    first = stack.start_workers(LAKELEDGER__PURGE_MAX_FILES_PER_SECOND="300")
    stack.drop(wh, "big", purge=True)
    wait_until(lambda: 0 < _files(location) < before - 100, 30, "the purge getting under way", interval=0.02)
    first.kill()
    remaining = _files(location)
    assert remaining > 0, "the purge ended before the kill"
    assert not stack.events("Purged")
    stack.start_workers()
    wait_until(lambda: stack.events("Purged"), 30, "the purge finishing after the restart")
    wait_until(stack.workers_caught_up, 30, "the workers catching up with the log")
    assert not location.exists()
    assert stack.events("Purged") == Counter({table_id: 1})
    assert all(path.read_bytes() == b"x" for path in outside)
    assert _files(other / "data") == 5 and _files(other / "metadata") >= 1
    r = stack.client.get(f"{wh['prefix']}/namespaces/ns/tables/other")
    assert r.status_code == 200 and r.json()["metadata"]["table-uuid"] == other_id


def test_purge_never_deletes_what_the_metadata_points_to_outside_the_location(stack):
    """A table registered from a metadata file outside its location, whose snapshot is another table's and
    whose data file lives elsewhere in the warehouse: its purge removes its own directory only."""
    wh = stack.warehouse({"type": "hard"})
    stack.start_workers()
    catalog = RestCatalog("ll", uri=f"{stack.api.url}/catalog", warehouse=wh["name"])
    catalog.create_namespace("ns")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    source = catalog.create_table("ns.source", schema=rows.schema)
    external = wh["path"] / "external"
    external.mkdir(parents=True)
    pq.write_table(rows, external / "rows.parquet")
    source.add_files([f"file://{external / 'rows.parquet'}"])
    source = catalog.load_table("ns.source")
    source_dir = _path(source.metadata.location)
    source_files = sorted(p for p in source_dir.rglob("*") if p.is_file())

    # The registered table's metadata: the source's, with an id and location of its own, kept outside both.
    metadata = json.loads(_path(source.metadata_location).read_text())
    own = wh["path"] / "registered"
    metadata.update({"table-uuid": str(uuid.uuid4()), "location": f"file://{own}"})
    meta_file = external / "registered.metadata.json"
    meta_file.write_text(json.dumps(metadata))
    r = stack.client.post(f"{wh['prefix']}/namespaces/ns/register",
                          json={"name": "registered", "metadata-location": f"file://{meta_file}"})
    assert r.status_code == 200, r.text
    registered_id = r.json()["metadata"]["table-uuid"]
    assert _path(r.json()["metadata"]["location"]) == own
    assert r.json()["metadata"]["snapshots"][0]["manifest-list"].startswith(f"file://{source_dir}")
    _write(own / "data" / "own.parquet")
    stack.drop(wh, "registered", purge=True)

    wait_until(lambda: stack.events("Purged"), 30, "the purge of the registered table")
    assert stack.events("Purged") == Counter({registered_id: 1})
    assert not own.exists()
    assert meta_file.exists() and (external / "rows.parquet").exists()
    assert sorted(p for p in source_dir.rglob("*") if p.is_file()) == source_files
    assert catalog.load_table("ns.source").scan().to_arrow().num_rows == 3


def test_hard_drop_is_final_at_once_purged_by_the_worker_and_in_history(stack):
    wh = stack.warehouse({"type": "hard"})
    table_id, location = stack.table(wh, "t", files=4)
    stack.start_workers()
    stack.drop(wh, "t", purge=True)
    assert stack.client.get(f"{wh['prefix']}/namespaces/ns/tables/t").status_code == 404
    assert stack.deleted(wh) == []
    r = stack.client.post(f"{wh['management']}/deleted-tabulars/undrop",
                          json={"targets": [{"type": "table", "id": table_id}]})
    assert r.status_code == 404, r.text
    assert r.json()["error"]["code"] == 404
    wait_until(lambda: not location.exists(), 30, "the purge of the hard-dropped table")

    def history() -> list[str]:
        r = stack.client.get(f"{wh['management']}/history", params={"tabular-id": table_id})
        assert r.status_code == 200, r.text
        return [e["type"] for e in r.json()["events"]]

    types = wait_until(lambda: (t := history()) and "table.purged" in t and t, 30, "table.purged in the history")
    assert types.count("table.dropped") == 1 and types.count("table.purged") == 1
    assert stack.events("Purged") == Counter({table_id: 1})
    assert not stack.events("Expired")
