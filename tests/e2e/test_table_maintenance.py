"""Issue 31: tables that look after themselves. A table given many small appends, whose snapshots are days old and
under whose location orphan files lie, gets maintenance policies on its warehouse; the catalog's workers schedule a
run of each action, Spark runs Iceberg's own procedures with the catalog as the job's REST catalog, and afterwards the
files are compacted, old snapshots expired, old orphans deleted (a young one, which an in-flight write may still
commit, kept), every row is still there exactly once, and the history and the task API show each run with its
figures. A job that cannot run fails its attempts with a pause between them, and readiness does not notice."""

import json
import os
import time

import pytest
from maintenance_support import (
    AGE_DAYS,
    APPENDS,
    DAY_MS,
    Stack,
    aged_table,
    data_file_count,
    ended,
    maintenance_database,
    maintenance_server,
    maintenance_stack,
    path_of,
    stored,
    table_rows,
)
from support import wait_until


@pytest.fixture(scope="module")
def stack(pg_url, tmp_path_factory, spark_runtime):
    with maintenance_stack(pg_url, tmp_path_factory.mktemp("maintenance"), spark_runtime) as found:
        yield found


def test_a_decayed_table_is_compacted_expired_and_cleaned_by_spark(stack):
    warehouse = stack.warehouse("decayed")
    metadata = aged_table(stack, warehouse, "events")
    table_id, location = metadata["table-uuid"], path_of(metadata["location"])
    before = table_rows(stack, warehouse, "events")
    assert len(before) == APPENDS * 10 and data_file_count(stack, warehouse, "events") == APPENDS
    # files no metadata references: three left by failed writes days ago, one an in-flight write staged just now
    old_orphans = [location / "data" / f"orphan-{i}.parquet" for i in range(3)]
    young_orphan = location / "data" / "staged-by-a-running-write.parquet"
    for orphan in (*old_orphans, young_orphan):
        orphan.write_bytes(b"PAR1 not referenced PAR1")
    days_ago = time.time() - AGE_DAYS * 86_400
    for orphan in old_orphans:
        os.utime(orphan, (days_ago, days_ago))
    files_before, data_bytes_before = stored(location)

    stack.policy(warehouse, "system.data-compaction",
                 {"enabled": True, "trigger-small-files": 5, "min-input-files": 2})
    stack.policy(warehouse, "system.metadata-compaction", {"enabled": True, "trigger-manifests": 5})
    stack.policy(warehouse, "system.snapshot-expiry",
                 {"enabled": True, "max-snapshot-age": "PT1H", "min-snapshots-to-keep": 1, "trigger-snapshots": 5})
    stack.policy(warehouse, "system.orphan-file-removal", {"enabled": True, "min-orphan-age": "P1D"})

    queues = {"data_compaction", "metadata_compaction", "snapshot_expiry", "orphan_file_removal"}
    tasks = wait_until(lambda: (found := stack.tasks(warehouse)) and ended(found, queues) and found, 600,
                       "every maintenance run to end")
    by_queue = {t["queue-name"]: t for t in tasks}
    assert {t["status"] for t in by_queue.values()} == {"SUCCESS"}, tasks
    assert all(t["entity"] == {"type": "table", "table-id": table_id} for t in tasks)
    assert all(t["entity-name"] == ["ns", "events"] for t in tasks)
    figures = {q: stack.details(warehouse, t["task-id"])["task-data"]["figures"] for q, t in by_queue.items()}

    compaction = figures["data_compaction"]
    assert compaction["rewritten_data_files_count"] == APPENDS and compaction["added_data_files_count"] == 1
    expiry = figures["snapshot_expiry"]
    # every aged snapshot expired: the small files only they still referenced are deleted with them
    assert expiry["deleted_data_files_count"] == APPENDS and expiry["deleted_manifest_lists_count"] >= APPENDS
    assert figures["orphan_file_removal"] == {"orphan_files_deleted": 3}
    assert not any(o.exists() for o in old_orphans) and young_orphan.exists()

    assert table_rows(stack, warehouse, "events") == before
    assert data_file_count(stack, warehouse, "events") == 1
    current = stack.client.get(f"{warehouse['prefix']}/namespaces/ns/tables/events").json()["metadata"]
    assert len(current["snapshots"]) < APPENDS
    assert all(s["timestamp-ms"] > time.time() * 1000 - DAY_MS for s in current["snapshots"])
    # fewer files, and the data smaller; the manifests the compaction's own snapshot rewrote go when that snapshot
    # expires in turn (it is younger than the policy's age)
    files_after, data_bytes_after = stored(location)
    assert files_after < files_before - APPENDS and data_bytes_after < data_bytes_before

    history = stack.history(warehouse)
    runs = [e for e in history if e["type"].startswith("table-maintenance.")]
    kinds = [e["type"] for e in runs]
    for queue in queues:
        assert any(queue in e["summary"] for e in runs if e["type"] == "table-maintenance.run-succeeded")
    assert kinds.count("table-maintenance.run-scheduled") == 4 and kinds.count("table-maintenance.run-started") == 4
    assert all(e["actor"] == "system:maintenance" for e in runs)
    # Spark's commits went through the catalog, each under its run's request id
    commits = [e for e in history if e["type"] == "table.committed" and e["request-id"].startswith("maintenance-")]
    assert {c["request-id"].split("-")[1] for c in commits} <= {t["task-id"].split("-")[0] for t in tasks}
    assert len(commits) >= 3  # compaction, manifests, expiry


def test_a_job_that_cannot_run_fails_with_pauses_and_readiness_stays_up(pg_url, tmp_path_factory, spark_runtime):
    """The Spark master is unreachable (nothing listens at its port): each attempt fails at the job's timeout, or
    sooner when a task control stops it (the run is then tried again). An expiry scheduled meanwhile waits behind it;
    when its turn comes its trigger no longer holds (the warehouse's time-travel retention grew past the snapshots'
    age), and it is cancelled saying so rather than run."""
    home = tmp_path_factory.mktemp("maintenance-down")
    server = maintenance_server(maintenance_database(pg_url), home, spark_runtime, LAKELEDGER__SPARK_MASTER="spark://127.0.0.1:9",
                     LAKELEDGER__MAINTENANCE_MAX_ATTEMPTS="2", LAKELEDGER__MAINTENANCE_RETRY_SECONDS="1",
                     LAKELEDGER__MAINTENANCE_JOB_TIMEOUT_SECONDS="20")
    try:
        stack = Stack(server, home)
        warehouse = stack.warehouse("unreachable")
        aged_table(stack, warehouse, "t")
        stack.policy(warehouse, "system.orphan-file-removal", {"enabled": True})
        wait_until(lambda: any(t["status"] == "RUNNING" for t in stack.tasks(warehouse)), 60, "the run to start")
        assert stack.ready() == 200
        stack.policy(warehouse, "system.snapshot-expiry", {"enabled": True, "max-snapshot-age": "PT1H"})

        def by_queue() -> dict[str, dict]:
            return {t["queue-name"]: t for t in stack.tasks(warehouse)}

        wait_until(lambda: by_queue().get("snapshot_expiry", {}).get("status") == "SCHEDULED", 60,
                   "the expiry to wait behind the running run")
        retention = stack.client.post(f"{warehouse['management']}/time-travel-retention",
                                      json={"time-travel-retention": "P7D"})
        assert retention.status_code == 200, retention.text
        stopped = stack.client.post(f"{warehouse['management']}/task/control", json={
            "action": {"action-type": "stop"}, "task-ids": [by_queue()["orphan_file_removal"]["task-id"]]})
        assert stopped.status_code == 204, stopped.text
        tasks = wait_until(lambda: (found := by_queue()) and found["orphan_file_removal"]["status"] == "FAILED"
                           and found, 180, "the run to fail for good")
        details = stack.details(warehouse, tasks["orphan_file_removal"]["task-id"])
        attempts = details["attempts"]
        assert [a["status"] for a in attempts] == ["FAILED", "FAILED"], attempts
        assert "ran longer than" in attempts[0]["message"], attempts
        assert attempts[1]["message"].startswith("stopped by a task control"), attempts  # newest first
        assert stack.ready() == 200
        expiry = stack.details(warehouse, tasks["snapshot_expiry"]["task-id"])
        assert expiry["status"] == "CANCELLED" and expiry["attempts"] == [], expiry
        runs = [e for e in stack.history(warehouse) if e["type"].startswith("table-maintenance.")]
        orphans = [e["type"] for e in runs if "orphan_file_removal" in e["summary"]]
        assert orphans == ["table-maintenance.run-scheduled", "table-maintenance.run-started",
                           "table-maintenance.stop-requested", "table-maintenance.run-failed",
                           "table-maintenance.run-started", "table-maintenance.run-failed"], runs
        expiries = [e for e in runs if "snapshot_expiry" in e["summary"]]
        assert [e["type"] for e in expiries] == ["table-maintenance.run-scheduled",
                                                  "table-maintenance.run-cancelled"], runs
        assert "no longer due" in json.dumps(expiries[-1]), expiries[-1]
    finally:
        server.stop()


def test_a_run_whose_worker_is_killed_mid_job_is_taken_over_and_succeeds_once(pg_url, tmp_path_factory,
                                                                                spark_runtime):
    """Two `lakeledger workers` beside an API without workers; the one whose Spark job is compacting the table is
    killed with -9: its job dies with it, the other worker starts the next attempt naming the abandoned one, and
    the run succeeds once, with every row there once."""
    import psutil
    from support import WorkersProcess

    home = tmp_path_factory.mktemp("maintenance-kill")
    database = maintenance_database(pg_url)
    api = maintenance_server(database, home, spark_runtime, LAKELEDGER__WORKERS="off")
    conf = {"spark.jars": spark_runtime, "spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2"}
    settings = {"LAKELEDGER__MAINTENANCE": "on", "LAKELEDGER__MAINTENANCE_CHECK_SECONDS": "1",
                "LAKELEDGER__WORKER_POLL_SECONDS": "0.5", "LAKELEDGER__SPARK_MASTER": "local[2]",
                "LAKELEDGER__SPARK_CONF": json.dumps(conf),
                "LAKELEDGER__MAINTENANCE_CATALOG_URI": f"{api.url}/catalog"}
    workers = [WorkersProcess(database, home, **settings) for _ in range(2)]
    try:
        stack = Stack(api, home)
        warehouse = stack.warehouse("killed")
        stack.small_files_table(warehouse, appends=6)
        before = table_rows(stack, warehouse, "t")
        stack.policy(warehouse, "system.data-compaction",
                     {"enabled": True, "trigger-small-files": 2, "min-input-files": 2})

        running = wait_until(lambda: [t for t in stack.tasks(warehouse) if t["status"] == "RUNNING"], 120,
                             "a worker to start the run")
        task_id = running[0]["task-id"]
        first = stack.details(warehouse, task_id)["attempts"][0]
        holder = next(w for w in workers if first["execution-details"]["worker"].endswith(f":{w.pid}"))
        jobs = wait_until(lambda: [p for p in psutil.Process(holder.pid).children(recursive=True)
                                   if "spark_job" in " ".join(p.cmdline())], 30, "the Spark job to start")
        holder.kill()
        gone, alive = psutil.wait_procs(jobs, timeout=30)
        assert not alive, "the killed worker's Spark job outlived it"

        ended = wait_until(lambda: (d := stack.details(warehouse, task_id)) and d["status"] in ("SUCCESS", "FAILED")
                           and d, 300, "the other worker to finish the run")
        assert ended["status"] == "SUCCESS", ended
        attempts = sorted(ended["attempts"], key=lambda a: a["attempt"])
        assert [a["status"] for a in attempts] == ["FAILED", "SUCCESS"], attempts
        assert attempts[0]["message"].startswith("Abandoned")
        runs = [e for e in stack.history(warehouse) if e["type"].startswith("table-maintenance.")]
        assert [e["type"] for e in runs] == ["table-maintenance.run-scheduled", "table-maintenance.run-started",
                                             "table-maintenance.run-started", "table-maintenance.run-succeeded"]
        assert runs[2]["change"]["abandoned"] == 1 and runs[2]["change"]["worker"] != runs[1]["change"]["worker"]
        assert table_rows(stack, warehouse, "t") == before and data_file_count(stack, warehouse, "t") == 1
    finally:
        for w in workers:
            w.stop()
        api.stop()


def test_with_openid_connect_on_the_jobs_commit_as_the_maintenance_identity(pg_url, tmp_path_factory, spark_runtime,
                                                                             oidc):
    """The jobs take tokens with LAKELEDGER__MAINTENANCE_CREDENTIAL (OAuth2 client credentials, through Iceberg's REST
    client): the compaction's commit carries that identity as its actor, the runs themselves system:maintenance."""
    home = tmp_path_factory.mktemp("maintenance-oidc")
    server = maintenance_server(maintenance_database(pg_url), home, spark_runtime,
                                LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer, LAKELEDGER__OPENID_AUDIENCE=oidc.audience,
                                LAKELEDGER__AUTHZ_ALLOWALL_WITH_OPENID="true",
                                LAKELEDGER__MAINTENANCE_CREDENTIAL="bob:bob-secret",
                                LAKELEDGER__MAINTENANCE_SCOPE="catalog")
    try:
        stack = Stack(server, home, token=oidc.token("spark"))
        warehouse = stack.warehouse("signed-in")
        stack.small_files_table(warehouse, appends=3, rows=1)
        stack.policy(warehouse, "system.data-compaction",
                     {"enabled": True, "trigger-small-files": 2, "min-input-files": 2})
        tasks = wait_until(lambda: (found := stack.tasks(warehouse)) and ended(found, {"data_compaction"}) and found,
                           300, "the compaction run to end")
        assert tasks[0]["status"] == "SUCCESS", stack.details(warehouse, tasks[0]["task-id"])
        history = stack.history(warehouse)
        compaction = [e for e in history if e["type"] == "table.committed" and e["request-id"].startswith("maint")]
        assert [e["actor"] for e in compaction] == ["oidc~bob"]
        assert {e["actor"] for e in history if e["type"].startswith("table-maintenance.")} == {"system:maintenance"}
        assert data_file_count(stack, warehouse, "t") == 1
    finally:
        server.stop()


def test_nothing_is_scheduled_or_started_while_the_server_is_read_only(pg_url, tmp_path_factory):
    """Read-only maintenance mode refuses every commit a job would make: the workers schedule nothing meanwhile, and
    schedule the due run as soon as the mode ends. (No Spark: the job's Python is /bin/false, so it fails at once.)"""
    from support import WorkersProcess

    home = tmp_path_factory.mktemp("maintenance-read-only")
    database = maintenance_database(pg_url)
    api = maintenance_server(database, home, "unused.jar", LAKELEDGER__WORKERS="off")
    workers: list = []
    try:
        stack = Stack(api, home)
        warehouse = stack.warehouse("paused")
        stack.small_files_table(warehouse, appends=3)
        stack.policy(warehouse, "system.data-compaction",
                     {"enabled": True, "trigger-small-files": 2, "min-input-files": 2})
        switched = stack.client.post("/management/v1/maintenance-mode", json={"mode": "read-only"})
        assert switched.status_code == 200, switched.text
        workers.append(WorkersProcess(database, home, LAKELEDGER__MAINTENANCE="on",
                                      LAKELEDGER__MAINTENANCE_CHECK_SECONDS="0.2",
                                      LAKELEDGER__SPARK_PYTHON="/bin/false"))
        time.sleep(4)  # a dozen check passes, each of which would have scheduled the run
        assert stack.tasks(warehouse) == []
        assert not [e for e in stack.history(warehouse) if e["type"].startswith("table-maintenance.")]
        switched = stack.client.post("/management/v1/maintenance-mode", json={"mode": "off"})
        assert switched.status_code == 200, switched.text
        tasks = wait_until(lambda: stack.tasks(warehouse), 30, "the run to be scheduled once the mode ended")
        assert [t["queue-name"] for t in tasks] == ["data_compaction"]
    finally:
        for w in workers:
            w.stop()
        api.stop()
