"""Soft deletion at scale: a namespace of many tables dropped recursively and undropped (each one atomic change),
against the baseline of dropping the same tables one request at a time; then the expiry and purge lag of the whole
tree once its soft drop is due, read from the events' own times in the history."""

import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx

from . import catalog

EXPIRATION_SECONDS = 2


@dataclass
class SoftDeletionResult:
    tables: int
    one_by_one_s: float
    recursive_drop_s: float
    undrop_s: float
    expiry_lag_max_s: float
    purge_done_s: float  # from the expiration date to the last table.purged
    files_purged: int


def _tree(http: httpx.Client, warehouse_id: str, namespace: str, tables: int) -> None:
    catalog.create_namespace(http, warehouse_id, namespace)
    for i in range(tables):
        catalog.commit_snapshot(http, catalog.create_table(http, warehouse_id, namespace, f"t{i:04d}"))


def _ok(response: httpx.Response, *codes: int) -> httpx.Response:
    if response.status_code not in codes:
        raise RuntimeError(f"{response.request.method} {response.request.url} -> {response.status_code}: "
                           f"{response.text[:300]}")
    return response


def _events(http: httpx.Client, wh_id: str, type_: str) -> list[dict]:
    found, token = [], ""
    while token is not None:
        body = _ok(http.get(f"/management/v1/warehouse/{wh_id}/history",
                            params={"type": type_, "pageSize": 1000, "pageToken": token}), 200).json()
        found += body["events"]
        token = body["next-page-token"]
    return found


def run(http: httpx.Client, work: Path, tables: int) -> SoftDeletionResult:
    location = work / f"soft-{uuid.uuid4().hex[:6]}"
    location.mkdir()
    wh_id = catalog.create_warehouse(http, location.name, f"file://{location}")
    prefix, management = f"/catalog/v1/{wh_id}", f"/management/v1/warehouse/{wh_id}"
    _ok(
        http.post(
            f"{management}/delete-profile", json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}}
        ),
        200,
    )

    _tree(http, wh_id, "single", tables)
    started = time.perf_counter()
    for i in range(tables):
        _ok(http.delete(f"{prefix}/namespaces/single/tables/t{i:04d}"), 204)
    one_by_one = time.perf_counter() - started

    _tree(http, wh_id, "tree", tables)
    started = time.perf_counter()
    _ok(http.delete(f"{prefix}/namespaces/tree", params={"recursive": "true"}), 204)
    recursive = time.perf_counter() - started
    namespace_id = next(t["dropped-with"] for t in _ok(http.get(f"{management}/deleted-tabulars",
                                                                 params={"pageSize": 1000}), 200).json()["tabulars"]
                        if t["dropped-with"])
    started = time.perf_counter()
    _ok(
        http.post(
            f"{management}/deleted-tabulars/undrop", json={"targets": [{"type": "namespace", "id": namespace_id}]}
        ),
        204,
    )
    undrop = time.perf_counter() - started

    tree_files = location / namespace_id
    files = sum(1 for f in tree_files.rglob("*") if f.is_file())
    _ok(http.post(f"{management}/delete-profile",
                  json={"delete-profile": {"type": "soft", "expiration-seconds": EXPIRATION_SECONDS}}), 200)
    _ok(http.delete(f"{prefix}/namespaces/tree", params={"recursive": "true"}), 204)
    due = {t["id"]: datetime.fromisoformat(t["expiration-date"])
           for t in _ok(http.get(f"{management}/deleted-tabulars", params={"pageSize": 1000}), 200).json()["tabulars"]
           if t["dropped-with"]}
    deadline = time.monotonic() + 120
    while True:
        purged = [datetime.fromisoformat(e["time"]) for e in _events(http, wh_id, "table.purged")
                  if e["entity"]["id"] in due]
        if len(purged) == len(due):
            break
        if time.monotonic() > deadline:
            raise RuntimeError("the expiries and purges did not finish within 120 s")
        time.sleep(0.5)
    expired = {e["entity"]["id"]: datetime.fromisoformat(e["time"]) for e in _events(http, wh_id, "table.expired")}
    lag = max((expired[i] - due[i]).total_seconds() for i in due)
    purge_done = (max(purged) - min(due.values())).total_seconds()
    remaining = sum(1 for f in tree_files.rglob("*") if f.is_file())
    return SoftDeletionResult(len(due), one_by_one, recursive, undrop, lag, purge_done, files - remaining)
