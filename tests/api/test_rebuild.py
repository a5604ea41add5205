"""``lakeledger rebuild`` while the API serves a commit load: every read model is replayed into new tables and
swapped in when complete (lakeledger/projections/rebuild.py). No request fails or waits long enough to time out, nothing
the load wrote is lost, and every read model comes out as a rebuild on a quiet log makes it: a pure function of the log,
whatever ran meanwhile."""

import os
import subprocess
import sys
import threading
import uuid

import psycopg
import pytest
from support import SCHEMA, wait_until

from lakeledger.projections.access_history import AccessHistoryProjection
from lakeledger.projections.catalog import CatalogProjection
from lakeledger.projections.catalog_versions import CatalogVersionsProjection
from lakeledger.projections.expiry_schedule import ExpirySchedule
from lakeledger.projections.history import HistoryProjection
from lakeledger.projections.maintenance_policies import MaintenancePoliciesProjection
from lakeledger.projections.metrics_reports import MetricsReportsProjection
from lakeledger.projections.tags import TagsProjection
from lakeledger.projections.tasks import TasksProjection
from lakeledger.projections.users_roles import UsersRolesProjection

READ_MODELS = (CatalogProjection, HistoryProjection, ExpirySchedule, UsersRolesProjection, AccessHistoryProjection,
               CatalogVersionsProjection, TagsProjection, MetricsReportsProjection, MaintenancePoliciesProjection,
               TasksProjection)
TABLES = [t for projection in READ_MODELS for t in projection.tables]
# numbered by a sequence that keeps counting across rebuilds: the row's content is what the log decides
SURROGATE_KEYS = {"ll_access_ranges": {"id"}}


def _snapshot(db) -> dict[str, list]:
    out = {}
    for table in TABLES:
        columns = [
            r[0]
            for r in db.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_name = %s AND table_schema = current_schema()"
                " ORDER BY ordinal_position",
                (table,),
            ).fetchall()
            if r[0] not in SURROGATE_KEYS.get(table, set())
        ]
        listed = ", ".join(f'"{c}"' for c in columns)
        out[table] = db.execute(f"SELECT {listed} FROM {table} ORDER BY {listed}").fetchall()
    return out


def _caught_up(db) -> None:
    names = [projection.name for projection in READ_MODELS]
    wait_until(lambda: db.execute(
        "SELECT min(position) >= (SELECT max(notification_id) FROM lakeledger_events) FROM ll_projection_positions"
        " WHERE name = ANY(%s)", (names,)).fetchone()[0], timeout=30, what="the workers catch the read models up")


def _rebuild(pg_url, data_dir, apart: bool = False) -> subprocess.CompletedProcess:
    """``lakeledger rebuild``; ``apart``: the history filled by a process of its own whatever the log's length (by
    default only from 100,000 events)."""
    env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    if apart:
        env["LAKELEDGER__REBUILD_APART_FROM_EVENTS"] = "0"
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("apart", [False, True], ids=["one process", "history apart"])
def test_a_rebuild_writes_exactly_what_the_projections_wrote_event_by_event(client, warehouse, db, pg_url, data_dir,
                                                                          apart):
    """The read models as the running server's projections wrote them, one event at a time, for everything this
    test session appended before this test (every other test's creations, commits, drops, grants, ...), against
    the rebuild's batch writers (the history's in-memory entities and COPY, the catalog's held creations, the
    catalog versions in memory) and pipelined replay; with the history filled in a process of its own too."""
    p = warehouse["prefix"]
    assert client.post(f"{p}/namespaces", json={"namespace": ["same"], "properties": {"k": "v"}}).status_code == 200
    r = client.post(f"{p}/namespaces/same/tables", json={"name": "t", "schema": SCHEMA, "properties": {"n": "1"}})
    assert r.status_code == 200, r.text
    r = client.post(f"{p}/namespaces/same/tables/t/metrics", json={
        "report-type": "commit-report", "table-name": "same.t", "snapshot-id": 1, "sequence-number": 1,
        "operation": "append", "metrics": {"added-records": {"unit": "count", "value": 3}}})
    assert r.status_code == 204, r.text
    _caught_up(db)
    live, indexes = _snapshot(db), _indexes(db)
    assert live["ll_history"] and live["ll_history_entities"] and live["ll_tabular_placements"]
    _rebuild(pg_url, data_dir, apart)
    rebuilt = _snapshot(db)
    assert {t: (len(live[t]), len(rebuilt[t])) for t in TABLES if rebuilt[t] != live[t]} == {}
    # the indexes a rebuild builds after the fill (indexed_after_fill) are there, under the same names
    assert _indexes(db) == indexes


def _indexes(db) -> list[tuple[str, str]]:
    return db.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = ANY(%s)"
                      " AND schemaname = current_schema() ORDER BY indexname", (TABLES,)).fetchall()


def test_a_rebuild_under_commit_load_fails_no_request_and_comes_out_as_on_a_quiet_log(
        client, warehouse, db, pg_url, data_dir):
    p = warehouse["prefix"]
    assert client.post(f"{p}/namespaces", json={"namespace": ["rb"]}).status_code == 200
    names = [f"t{i}" for i in range(4)]
    for name in names:
        assert client.post(f"{p}/namespaces/rb/tables", json={"name": name, "schema": SCHEMA}).status_code == 200
    # enough of a log that the replay takes a while: a few hundred commits
    for i in range(60):
        for name in names:
            r = client.post(f"{p}/namespaces/rb/tables/{name}", json={"requirements": [], "updates": [
                {"action": "set-properties", "updates": {"seed": str(i)}}]})
            assert r.status_code == 200, r.text

    stop = threading.Event()
    failures: list[str] = []
    counts = {name: 0 for name in names}
    created: list[str] = []

    def commits(name: str) -> None:
        while not stop.is_set():
            n = counts[name] + 1
            r = client.post(f"{p}/namespaces/rb/tables/{name}", json={"requirements": [], "updates": [
                {"action": "set-properties", "updates": {"n": str(n)}}]})
            if r.status_code != 200:
                failures.append(f"commit {name}: {r.status_code} {r.text[:300]}")
                return
            counts[name] = n
            listed = client.get(f"{p}/namespaces/rb/tables")
            if listed.status_code != 200:
                failures.append(f"list: {listed.status_code} {listed.text[:300]}")
                return

    def creations() -> None:
        while not stop.is_set():
            name = f"c{uuid.uuid4().hex[:8]}"
            r = client.post(f"{p}/namespaces/rb/tables", json={"name": name, "schema": SCHEMA})
            if r.status_code != 200:
                failures.append(f"create {name}: {r.status_code} {r.text[:300]}")
                return
            created.append(name)

    load = [threading.Thread(target=commits, args=(name,)) for name in names] + [threading.Thread(target=creations)]
    for t in load:
        t.start()
    try:
        # the history filled apart, then brought by the runners' writer over what the load appended meanwhile
        done = _rebuild(pg_url, data_dir, apart=True)
    finally:
        stop.set()
        for t in load:
            t.join(timeout=60)
    assert failures == []
    assert "rebuilt" in done.stdout and "rebuild:" in done.stderr  # the progress lines
    assert all(counts[name] > 0 for name in names) and created, "the load ran while the rebuild did"

    # what the load wrote is there, through the rebuilt read model
    for name in names:
        r = client.get(f"{p}/namespaces/rb/tables/{name}")
        assert r.status_code == 200 and r.json()["metadata"]["properties"]["n"] == str(counts[name])
    listed = client.get(f"{p}/namespaces/rb/tables", params={"pageSize": 1000}).json()["identifiers"]
    assert set(created) <= {i["name"] for i in listed}

    # and a rebuild on the now quiet log, in one process, changes nothing: the one under load was exact (once the
    # workers have brought the read models they follow, not applied inside appends, to the head)
    _caught_up(db)
    after_load = _snapshot(db)
    assert any(after_load[t] for t in ("ll_tabulars", "ll_history", "ll_tabular_placements"))
    _rebuild(pg_url, data_dir)
    again = _snapshot(db)
    assert {t: len(rows) for t, rows in again.items()} == {t: len(rows) for t, rows in after_load.items()}
    assert [t for t in TABLES if again[t] != after_load[t]] == []


def test_a_rebuild_while_another_runs_is_refused_with_a_clear_message(pg_url, data_dir, server):
    from lakeledger.projections.rebuild import REBUILD_LOCK

    with psycopg.connect(pg_url, autocommit=True) as other:  # holds what a running rebuild holds
        other.execute("SELECT pg_advisory_lock(%s)", (REBUILD_LOCK,))
        env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
        refused = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True,
                                 text=True, timeout=120)
        assert refused.returncode != 0 and "another rebuild is running" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    assert "rebuilt" in _rebuild(pg_url, data_dir).stdout


def test_a_rebuild_waits_for_a_history_process_an_interrupted_rebuild_left(pg_url, data_dir, server):
    """A rebuild's process that filled the history apart holds a shared lock while it writes; should its first
    process die, the next rebuild is refused until it has stopped (it would write into the shadows made anew)."""
    from lakeledger.projections.rebuild import APART_LOCK

    with psycopg.connect(pg_url, autocommit=True) as orphan:
        orphan.execute("SELECT pg_advisory_lock_shared(%s)", (APART_LOCK,))
        env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
        refused = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True,
                                 text=True, timeout=120)
        assert refused.returncode != 0 and "still filling the history" in refused.stderr, refused.stderr
    _rebuild(pg_url, data_dir)  # once it has stopped
