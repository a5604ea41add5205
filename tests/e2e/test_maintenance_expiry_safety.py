"""Issue 31: snapshot expiry run by the catalog's maintenance is safe. It never removes a snapshot a tag or a branch
needs, nor one younger than the warehouse's time-travel retention (reading an old snapshot by id keeps working inside
it, and a shorter retention lets the next run expire them); and what reading an expired past answers is clear: the
live table's "snapshot not found", and catalog time travel to before the expiry serves the past as far as it still
exists (the snapshots expired since left out; a table whose then-current snapshot was expired is a 404).

One server for the module (tests/e2e/maintenance_support.py); each test waits for one Spark job."""

import psycopg
import pyarrow as pa
import pytest
from maintenance_support import APPENDS, Stack, aged_table, maintenance_stack
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchTableError
from support import wait_until

EXPIRY = {"enabled": True, "max-snapshot-age": "PT1H", "min-snapshots-to-keep": 1}


@pytest.fixture(scope="module")
def stack(pg_url, tmp_path_factory, spark_runtime):
    with maintenance_stack(pg_url, tmp_path_factory.mktemp("expiry-safety"), spark_runtime) as found:
        yield found


def _expiry_run(stack: Stack, warehouse: dict) -> dict:
    """The warehouse's one snapshot-expiry run, once it has ended; it must have succeeded."""
    def ended() -> list[dict]:
        return [t for t in stack.tasks(warehouse, **{"queue-name": ["snapshot_expiry"]})
                if t["status"] in ("SUCCESS", "FAILED")]

    [task] = wait_until(ended, 300, "the snapshot-expiry run to end")
    assert task["status"] == "SUCCESS", stack.details(warehouse, task["task-id"])
    return stack.details(warehouse, task["task-id"])["task-data"]["figures"]


def _rows(table, **scan) -> int:
    return table.scan(**scan).to_arrow().num_rows


def test_expiry_keeps_the_snapshots_a_tag_and_a_branch_need(stack):
    warehouse = stack.warehouse("refs")
    metadata = aged_table(stack, warehouse, "events")
    ids = [s["snapshot-id"] for s in metadata["snapshots"]]
    assert len(ids) == APPENDS
    r = stack.client.post(f"{warehouse['prefix']}/namespaces/ns/tables/events", json={"requirements": [], "updates": [
        {"action": "set-snapshot-ref", "ref-name": "third", "type": "tag", "snapshot-id": ids[2]},
        {"action": "set-snapshot-ref", "ref-name": "sixth", "type": "branch", "snapshot-id": ids[5]}]})
    assert r.status_code == 200, r.text

    stack.policy(warehouse, "system.snapshot-expiry", EXPIRY)
    figures = _expiry_run(stack, warehouse)

    table = stack.catalog(warehouse).load_table("ns.events")
    # every snapshot is days old and one is kept per branch: main's head, the branch's head (its older ancestors
    # are not kept for it beyond min-snapshots-to-keep), and the tagged one
    assert {s.snapshot_id for s in table.metadata.snapshots} == {ids[2], ids[5], ids[-1]}
    assert figures["deleted_manifest_lists_count"] == APPENDS - 3
    assert {name: ref.snapshot_id for name, ref in table.metadata.refs.items()} == {
        "main": ids[-1], "third": ids[2], "sixth": ids[5]}
    assert _rows(table, snapshot_id=ids[2]) == 30  # the tag reads as it was: three appends of ten rows
    assert table.scan().use_ref("sixth").to_arrow().num_rows == 60
    assert _rows(table) == APPENDS * 10
    with pytest.raises(ValueError, match=f"Snapshot not found: {ids[3]}"):
        table.scan(snapshot_id=ids[3]).to_arrow()


def _checked(stack: Stack, table_id: str) -> bool:
    with psycopg.connect(stack.database) as conn:  # type: ignore[attr-defined]
        return conn.execute("SELECT 1 FROM ll_maintenance_checks WHERE table_id = %s AND queue = 'snapshot_expiry'",
                            (table_id,)).fetchone() is not None


def _position(stack: Stack, warehouse: dict) -> int:
    """The log position of the warehouse's latest change (catalog time travel's ``@seq:<n>``)."""
    return max(e["sequence"] for e in stack.history(warehouse))


def test_the_time_travel_retention_keeps_the_past_readable_until_it_is_shortened(stack):
    warehouse = stack.warehouse("retained")
    retention = f"{warehouse['management']}/time-travel-retention"
    assert stack.client.post(retention, json={"time-travel-retention": "P7D"}).status_code == 200
    metadata = aged_table(stack, warehouse, "events")
    ids = [s["snapshot-id"] for s in metadata["snapshots"]]
    stack.policy(warehouse, "system.snapshot-expiry", EXPIRY)

    # the snapshots are three days old, the policy lets them go after an hour, the retention keeps them a week:
    # the table is looked at, and no run is even scheduled (it could expire nothing)
    wait_until(lambda: _checked(stack, metadata["table-uuid"]), 60, "the expiry check of the table")
    assert stack.tasks(warehouse, **{"queue-name": ["snapshot_expiry"]}) == []
    catalog = stack.catalog(warehouse)
    table = catalog.load_table("ns.events")
    assert len(table.metadata.snapshots) == APPENDS and _rows(table, snapshot_id=ids[0]) == 10

    before_append = _position(stack, warehouse)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    table.append(pa.table({"id": pa.array(range(1000, 1010), pa.int64()),
                           "v": pa.array([f"new {n}" for n in range(10)])}, schema=schema))
    newest = table.metadata.current_snapshot_id
    after_append = _position(stack, warehouse)

    # a day's retention: the change makes the table looked at again at once, and the run expires all but the newest
    r = stack.client.post(retention, json={"time-travel-retention": "P1D"})
    assert r.status_code == 200 and r.json() == {"time-travel-retention": "P1D"}, r.text
    figures = _expiry_run(stack, warehouse)
    assert figures["deleted_manifest_lists_count"] == APPENDS
    table = catalog.load_table("ns.events")
    assert [s.snapshot_id for s in table.metadata.snapshots] == [newest]
    with pytest.raises(ValueError, match=f"Snapshot not found: {ids[0]}"):
        table.scan(snapshot_id=ids[0]).to_arrow()

    # catalog time travel to before the expiry: the past as far as it still exists
    then = RestCatalog("then", uri=f"{stack.server.url}/catalog", warehouse=f"retained@seq:{after_append}")
    past = then.load_table("ns.events")
    assert [s.snapshot_id for s in past.metadata.snapshots] == [newest]
    assert set(past.metadata.refs) == {"main"} and _rows(past) == APPENDS * 10 + 10
    with pytest.raises(ValueError, match=f"Snapshot not found: {ids[0]}"):
        past.scan(snapshot_id=ids[0]).to_arrow()
    # ... and a position whose current snapshot has been expired since cannot be read as it was
    earlier = RestCatalog("earlier", uri=f"{stack.server.url}/catalog", warehouse=f"retained@seq:{before_append}")
    with pytest.raises(NoSuchTableError, match=f"current snapshot {ids[-1]} has been expired since"):
        earlier.load_table("ns.events")
    # server-side scan planning of the past plans what loading it shows
    plan = f"/catalog/v1/{warehouse['id']}@seq:{after_append}/namespaces/ns/tables/events/plan"
    r = stack.client.post(plan, json={"snapshot-id": ids[0]})
    assert r.status_code == 400 and f"Snapshot does not exist: {ids[0]}" in r.json()["error"]["message"], r.text
    r = stack.client.post(plan, json={})
    assert r.status_code == 200 and r.json()["status"] == "completed", r.text
    r = stack.client.post(plan.replace(f"@seq:{after_append}", f"@seq:{before_append}"), json={})
    assert r.status_code == 404 and "has been expired since" in r.json()["error"]["message"], r.text
