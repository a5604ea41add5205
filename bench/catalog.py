"""Talking to the catalog under test: creating a warehouse, namespace and tables, and building
commits that add one snapshot each (a fake manifest list under the table location)."""

import itertools
import random
import time
from dataclasses import dataclass

import httpx
import orjson

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}

# Snapshot ids are unique across the whole run: a random start, then a counter.
_snapshot_ids = itertools.count(random.randrange(1 << 40, 1 << 50))


@dataclass
class TableHandle:
    """Where a table is and what its next commit must build on."""

    path: str  # /catalog/v1/{warehouse}/namespaces/{ns}/tables/{name}
    location: str
    current_snapshot_id: int | None
    last_sequence_number: int

    def update_from(self, metadata: dict) -> None:
        self.location = metadata["location"]
        self.current_snapshot_id = metadata.get("current-snapshot-id")
        if self.current_snapshot_id == -1:
            self.current_snapshot_id = None
        self.last_sequence_number = metadata.get("last-sequence-number", 0)

    def next_commit(self) -> tuple[bytes, int, int]:
        """The commit body adding one snapshot on top of main, and the snapshot id and sequence number it uses."""
        snapshot_id = next(_snapshot_ids)
        sequence_number = self.last_sequence_number + 1
        snapshot = {"snapshot-id": snapshot_id, "sequence-number": sequence_number,
                    "timestamp-ms": int(time.time() * 1000),
                    "manifest-list": f"{self.location}/metadata/snap-{snapshot_id}-1-bench.avro",
                    "summary": {"operation": "append", "added-data-files": "1", "added-records": "1"},
                    "schema-id": 0}
        if self.current_snapshot_id is not None:
            snapshot["parent-snapshot-id"] = self.current_snapshot_id
        body = {"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                                  "snapshot-id": self.current_snapshot_id}],
                "updates": [{"action": "add-snapshot", "snapshot": snapshot},
                            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                             "snapshot-id": snapshot_id}]}
        return orjson.dumps(body), snapshot_id, sequence_number

    def committed(self, snapshot_id: int, sequence_number: int) -> None:
        self.current_snapshot_id = snapshot_id
        self.last_sequence_number = sequence_number


def check(response: httpx.Response, *expected: int) -> httpx.Response:
    if response.status_code not in expected:
        raise RuntimeError(f"{response.request.method} {response.request.url} -> {response.status_code}: "
                           f"{response.text[:500]}")
    return response


def create_warehouse(client: httpx.Client, name: str, location: str) -> str:
    r = check(client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": location}}), 200, 201)
    return r.json()["warehouse-id"]


def create_namespace(client: httpx.Client, warehouse_id: str, namespace: str) -> None:
    check(client.post(f"/catalog/v1/{warehouse_id}/namespaces", json={"namespace": [namespace]}), 200)


def create_table(client: httpx.Client, warehouse_id: str, namespace: str, name: str) -> TableHandle:
    r = check(client.post(f"/catalog/v1/{warehouse_id}/namespaces/{namespace}/tables",
                           json={"name": name, "schema": SCHEMA}), 200)
    handle = TableHandle(f"/catalog/v1/{warehouse_id}/namespaces/{namespace}/tables/{name}", "", None, 0)
    handle.update_from(r.json()["metadata"])
    return handle


def commit_snapshot(client: httpx.Client, table: TableHandle) -> None:
    body, snapshot_id, sequence_number = table.next_commit()
    check(client.post(table.path, content=body, headers={"content-type": "application/json"}), 200)
    table.committed(snapshot_id, sequence_number)


def load(client: httpx.Client, table: TableHandle) -> bytes:
    return check(client.get(table.path), 200).content
