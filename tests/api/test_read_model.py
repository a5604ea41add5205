"""The read model is a pure function of the log: dropped and replayed, it comes out identical."""

import os
import subprocess
import sys
import time
from uuid import UUID

from support import SCHEMA

from lakeledger.projections.catalog import TABLES

# every table the catalog projection writes (its own list: a table left out would keep rows a replay writes again)
READ_MODEL = {**{table: "id" for table in TABLES}, "ll_expiry_schedule": "entity_id"}
POSITIONS = ("catalog", "expiry-schedule")
CATALOG = [table for table in READ_MODEL if table != "ll_expiry_schedule"]  # applied inside each append


def _snapshot(db):
    return {table: db.execute(f"SELECT * FROM {table} ORDER BY {key}").fetchall() for table, key in READ_MODEL.items()}


def _differences(expected, actual):
    """Rows that differ, keyed by table and id, so a failure says which rows and how."""
    out = {}
    for table in READ_MODEL:
        want = {r[0]: r for r in expected[table]}
        got = {r[0]: r for r in actual[table]}
        for key in want.keys() | got.keys():
            if want.get(key) != got.get(key):
                out[(table, key)] = (want.get(key), got.get(key))
    return out


def _rebuild(pg_url, data_dir):
    env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    out = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_replaying_the_log_gives_identical_rows(client, warehouse, db, pg_url, data_dir):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["rm"], "properties": {"a": "1"}})
    client.post(f"{p}/namespaces", json={"namespace": ["rm", "child"]})
    client.post(f"{p}/namespaces/rm/properties", json={"updates": {"b": "2"}, "removals": ["a"]})
    for name in ("t1", "t2", "t3"):
        client.post(f"{p}/namespaces/rm/tables", json={"name": name, "schema": SCHEMA})
    client.post(f"{p}/namespaces/rm/tables/t1", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"x": "y"}}]})
    client.post(f"{p}/tables/rename", json={"source": {"namespace": ["rm"], "name": "t2"},
                                            "destination": {"namespace": ["rm", "child"], "name": "t2b"}})
    client.delete(f"{p}/namespaces/rm/tables/t3", params={"purgeRequested": "false"})
    client.post(f"/management/v1/warehouse/{warehouse['id']}/deactivate")
    client.post(f"/management/v1/warehouse/{warehouse['id']}/activate")
    # soft deletion: a profile, protection, a soft drop, a recursive drop and an undrop
    management = f"/management/v1/warehouse/{warehouse['id']}"
    client.post(f"{management}/delete-profile", json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    client.post(f"{management}/protection", json={"protected": True})
    client.post(f"{p}/namespaces", json={"namespace": ["bin"], "properties": {"k": "v"}})
    client.post(f"{p}/namespaces", json={"namespace": ["bin", "inner"]})
    for name in ("s1", "s2"):
        client.post(f"{p}/namespaces/bin%1Finner/tables", json={"name": name, "schema": SCHEMA})
    soft = client.post(f"{p}/namespaces/rm/tables", json={"name": "soft", "schema": SCHEMA}).json()
    client.delete(f"{p}/namespaces/rm/tables/soft")
    client.delete(f"{p}/namespaces/bin", params={"recursive": "true"})
    client.post(f"{management}/deleted-tabulars/undrop",
                json={"targets": [{"type": "table", "id": soft["metadata"]["table-uuid"]}]})
    client.delete(f"{p}/namespaces/rm/tables/soft")
    # the expiry schedule follows the log in the workers: wait until it has taken in every event made above (a
    # count of timers is not enough: "soft" was dropped, undropped and dropped again, each changing its timer)
    head = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    deadline = time.monotonic() + 20
    while db.execute("SELECT min(position) FROM ll_projection_positions WHERE name = ANY(%s)",
                     (list(POSITIONS),)).fetchone()[0] < head:
        assert time.monotonic() < deadline, "the expiry schedule did not catch up"
        time.sleep(0.1)

    before = _snapshot(db)
    assert any(r for r in before["ll_tabulars"])
    assert before["ll_dropped_namespaces"] and before["ll_expiry_schedule"]

    # rebuild while the server runs
    assert "rebuilt" in _rebuild(pg_url, data_dir)
    assert _differences(before, _snapshot(db)) == {}

    # drop every row, forget the position, replay
    with db.transaction():
        for table in READ_MODEL:
            db.execute(f"DELETE FROM {table}")
        db.execute("UPDATE ll_projection_positions SET position = 0 WHERE name = ANY(%s)", (list(POSITIONS),))
    assert _snapshot(db)["ll_tabulars"] == []
    _rebuild(pg_url, data_dir)
    assert _differences(before, _snapshot(db)) == {}
    assert client.get(f"{p}/namespaces/rm%1Fchild/tables/t2b").status_code == 200


def test_an_append_behind_a_lagging_read_model_first_applies_the_gap(client, warehouse, db):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["gap"]})
    client.post(f"{p}/namespaces/gap/tables", json={"name": "t", "schema": SCHEMA})
    before = _snapshot(db)
    with db.transaction():
        for table in CATALOG:
            db.execute(f"DELETE FROM {table}")
        db.execute("UPDATE ll_projection_positions SET position = 0 WHERE name = 'catalog'")
    # the next write's own transaction replays everything it finds missing before its own events
    created = client.post("/management/v1/project", json={"project-name": "after-the-gap"})
    assert created.status_code == 201
    after = _snapshot(db)
    assert {k: v for k, v in after.items() if k != "ll_projects"} == \
        {k: v for k, v in before.items() if k != "ll_projects"}
    assert [r for r in after["ll_projects"] if r not in before["ll_projects"]] == \
        [r for r in after["ll_projects"] if str(r[0]) == created.json()["project-id"]]
    head = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    assert db.execute("SELECT position FROM ll_projection_positions WHERE name = 'catalog'").fetchone()[0] == head


def test_a_commit_sent_in_one_round_trip_behind_a_lagging_read_model_is_made_again_with_the_gap(
        client, warehouse, db):
    """A commit asks nothing of the database before its events go in, so it is sent in one round trip; the
    database refuses it when the catalog read model has not applied every earlier event, and it is made again
    the long way, which applies the gap first. A position left unused by a rolled-back append is no gap."""
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["gap2"]})
    client.post(f"{p}/namespaces/gap2/tables", json={"name": "t", "schema": SCHEMA})
    position = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    u = client.post(f"{p}/namespaces/gap2/tables", json={"name": "u", "schema": SCHEMA}).json()["metadata"]
    before = _snapshot(db)
    with db.transaction():  # the read model as it was before u's creation, which it has yet to apply
        # this u alone: another test's table of that name in the session's database would not come back
        db.execute("DELETE FROM ll_tabulars WHERE id = %s", (u["table-uuid"],))
        db.execute("UPDATE ll_projection_positions SET position = %s WHERE name = 'catalog'", (position,))
    committed = client.post(f"{p}/namespaces/gap2/tables/t", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"after": "gap"}}]})
    assert committed.status_code == 200, committed.text
    after = _snapshot(db)
    assert {k: v for k, v in after.items() if k != "ll_tabulars"} == \
        {k: v for k, v in before.items() if k != "ll_tabulars"}
    assert {r[0] for r in after["ll_tabulars"]} == {r[0] for r in before["ll_tabulars"]}  # u is back
    assert [r for r in after["ll_tabulars"] if r not in before["ll_tabulars"]] == \
        [r for r in after["ll_tabulars"] if r[0] == UUID(committed.json()["metadata"]["table-uuid"])]
    assert client.get(f"{p}/namespaces/gap2/tables/t").json()["metadata"]["properties"]["after"] == "gap"
    # an unused position (a sequence value taken by an append that rolled back) is not an unapplied event
    db.execute("SELECT nextval(pg_get_serial_sequence('lakeledger_events', 'notification_id'))")
    again = client.post(f"{p}/namespaces/gap2/tables/t", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"after": "unused position"}}]})
    assert again.status_code == 200, again.text
    head = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    assert db.execute("SELECT position FROM ll_projection_positions WHERE name = 'catalog'").fetchone()[0] == head


def test_a_refused_append_leaves_no_event(client, warehouse, log_length, server):
    """A condition that fails inside the append transaction rolls the events back with it."""
    import threading

    import httpx
    p = warehouse["prefix"]
    for round_ in range(6):
        ns = f"refuse{round_}"
        client.post(f"{p}/namespaces", json={"namespace": [ns]})
        before = log_length()
        barrier = threading.Barrier(2)
        results = {}

        def act(key, method, url, **kw):
            with httpx.Client(base_url=server.url) as c:
                barrier.wait()
                results[key] = c.request(method, url, **kw)

        threads = [threading.Thread(target=act, args=("drop", "DELETE", f"{p}/namespaces/{ns}")),
                   threading.Thread(target=act, args=("create", "POST", f"{p}/namespaces/{ns}/tables"),
                                    kwargs={"json": {"name": "t", "schema": SCHEMA}})]
        [t.start() for t in threads]
        [t.join() for t in threads]
        drop, create = results["drop"].status_code, results["create"].status_code
        appended = log_length() - before
        # exactly the events of whichever side won: a drop is 2 events (claim released, dropped),
        # a create 2 (claim, created); the loser appends nothing
        assert (drop, create) in ((204, 404), (409, 200)), (drop, create)
        assert appended == 2, (drop, create, appended)
