"""The tasks API (Lakekeeper's shapes) over HTTP against a real server with its workers and Postgres (and OpenFGA for
who may): soft drops listed as scheduled expiries and purges, a cancelled expiry that never fires, a purge run now
and done, paging and filters, queue configurations under both of Lakekeeper's names, the controls in the history,
and bad requests refused with nothing appended."""

import time
import uuid
from pathlib import Path

import lakekeeper_spec
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support import SCHEMA, event_count, openfga_api, signed_in, wait_until

from lakeledger.bootstrap import Container
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table_maintenance import Backoff, TableMaintenance, maintenance_id
from lakeledger.domain.tabular import Tabular
from lakeledger.settings import Settings

M = "/management/v1"


def _ok(response, status: int = 200):
    assert response.status_code == status, (response.request.method, response.request.url, response.text)
    return response.json() if response.content else None


class Tasks:
    def __init__(self, client, warehouse, expiration_seconds: int):
        self.client, self.wh, self.p = client, warehouse, warehouse["prefix"]
        self.w = f"{M}/warehouse/{warehouse['id']}"
        _ok(client.post(f"{self.w}/delete-profile",
                        json={"delete-profile": {"type": "soft", "expiration-seconds": expiration_seconds}}))
        _ok(client.post(f"{self.p}/namespaces", json={"namespace": ["ns"]}))

    def dropped_table(self, name: str, purge: bool = True) -> str:
        t = _ok(self.client.post(f"{self.p}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA}))
        r = self.client.delete(f"{self.p}/namespaces/ns/tables/{name}", params={"purgeRequested": str(purge).lower()})
        assert r.status_code == 204, r.text
        return t["metadata"]["table-uuid"]

    def listed(self, **body) -> dict:
        return _ok(self.client.post(f"{self.w}/task/list", json=body))

    def of(self, table_id: str, queue: str) -> dict:
        [task] = [t for t in self.listed(entities=[{"type": "table", "table-id": table_id}])["tasks"]
                  if t["queue-name"] == queue]
        return task

    def control(self, action: str, *task_ids: str, **fields: str):
        return self.client.post(f"{self.w}/task/control",
                                json={"action": {"action-type": action, **fields}, "task-ids": list(task_ids)})

    def files(self, table_id: str) -> list[Path]:
        return [f for f in Path(self.wh["path"]).rglob("*") if f.is_file() and table_id in str(f)]

    def history(self, table_id: str) -> list[dict]:
        return _ok(self.client.get(f"{self.w}/history", params={"tabular-id": table_id}))["events"]


def test_a_soft_drop_is_listed_as_a_scheduled_expiry_and_purge_in_lakekeepers_shape(client, warehouse):
    tasks = Tasks(client, warehouse, 3600)
    table_id = tasks.dropped_table("t")
    expiry, purge = tasks.of(table_id, "tabular_expiration"), tasks.of(table_id, "tabular_purge")
    for task in (expiry, purge):
        assert task["status"] == "SCHEDULED" and task["attempt"] == 1 and task["progress"] == 0.0
        assert task["entity"] == {"type": "table", "table-id": table_id}
        assert task["entity-name"] == ["ns", "t"] and task["warehouse-id"] == warehouse["id"]
        assert task["scheduled-for"] == expiry["scheduled-for"]  # the purge follows the expiry
    assert expiry["task-id"] != purge["task-id"]
    details = _ok(client.get(f"{tasks.w}/task/by-id/{expiry['task-id']}"))
    assert {k: details[k] for k in expiry} == expiry
    assert details["attempts"] == [] and details["task-data"]["purge-requested"] is True
    # Lakekeeper's newer name of the queue filters the same tasks
    by_alias = tasks.listed(**{"queue-name": ["soft_deletion"], "entities": [{"type": "table", "table-id": table_id}]})
    assert [t["task-id"] for t in by_alias["tasks"]] == [expiry["task-id"]]


def test_a_cancelled_expiry_never_fires_and_the_table_stays_restorable(client, warehouse):
    tasks = Tasks(client, warehouse, 4)
    table_id = tasks.dropped_table("t")
    expiry = tasks.of(table_id, "tabular_expiration")
    assert tasks.control("cancel", expiry["task-id"]).status_code == 204
    assert tasks.of(table_id, "tabular_expiration")["status"] == "CANCELLED"
    assert tasks.of(table_id, "tabular_purge")["status"] == "CANCELLED"  # it waited for the expiry
    due = time.time() + 4
    time.sleep(max(0.0, due - time.time()) + 2)  # past the time it was due, with the expirer awake
    assert tasks.of(table_id, "tabular_expiration")["status"] == "CANCELLED"
    assert tasks.files(table_id), "nothing was purged"
    cancelled = [e for e in tasks.history(table_id) if e["type"] == "table.expiry-rescheduled"]
    assert len(cancelled) == 1 and cancelled[0]["actor"] and cancelled[0]["request-id"]
    assert "table.expired" not in [e["type"] for e in tasks.history(table_id)]
    # cancelling again changes nothing (the task has ended) and appends nothing
    assert tasks.control("cancel", expiry["task-id"]).status_code == 204
    assert len(tasks.history(table_id)) == 3
    r = client.post(f"{tasks.w}/deleted-tabulars/undrop", json={"targets": [{"type": "table", "id": table_id}]})
    assert r.status_code == 204, r.text


def test_run_at_moves_an_expiry_and_is_refused_for_a_purge(client, warehouse, log_length):
    """Lakekeeper's run-at: the expiry is moved to the time named (and its purge, which follows it); a purge has no
    time of its own to move (it runs when its drop is final): 400, nothing appended."""
    tasks = Tasks(client, warehouse, 3600)
    table_id = tasks.dropped_table("t")
    expiry, purge = tasks.of(table_id, "tabular_expiration"), tasks.of(table_id, "tabular_purge")
    later = "2031-01-02T03:04:05+00:00"
    before = log_length()
    assert tasks.control("run-at", expiry["task-id"], **{"scheduled-for": later}).status_code == 204
    assert log_length() == before + 1
    assert tasks.of(table_id, "tabular_expiration")["scheduled-for"] == later
    assert tasks.of(table_id, "tabular_purge")["scheduled-for"] == later
    r = tasks.control("run-at", purge["task-id"], **{"scheduled-for": later})
    assert r.status_code == 400 and "tabular_purge tasks do not take 'run-at'" in r.json()["error"]["message"]
    r = tasks.control("stop", expiry["task-id"])  # a running expiry is over within a second
    assert r.status_code == 400 and "tabular_expiration tasks do not take 'stop'" in r.json()["error"]["message"]
    assert log_length() == before + 1
    moved = [e for e in tasks.history(table_id) if e["type"] == "table.expiry-rescheduled"]
    assert len(moved) == 1 and moved[0]["change"]["expires_at"].startswith("2031-01-02 03:04:05")


def test_run_now_of_a_purge_expires_the_table_and_purges_it_at_once(client, warehouse):
    tasks = Tasks(client, warehouse, 3600)
    table_id = tasks.dropped_table("t")
    kept = tasks.dropped_table("kept")
    assert tasks.files(table_id)
    purge = tasks.of(table_id, "tabular_purge")
    assert tasks.control("run-now", purge["task-id"]).status_code == 204
    wait_until(lambda: tasks.of(table_id, "tabular_purge")["status"] == "SUCCESS", 30, what="the purge")
    assert tasks.of(table_id, "tabular_expiration")["status"] == "SUCCESS"
    assert not tasks.files(table_id)
    done = _ok(client.get(f"{tasks.w}/task/by-id/{purge['task-id']}"))
    assert done["progress"] == 1.0 and "files removed" in done["message"] and done["attempt"] == 1
    # the attempt is in the log: started by a worker (actor system:purger), then its outcome
    [attempt] = done["attempts"]
    assert attempt["attempt"] == 1 and attempt["status"] == "SUCCESS" and attempt["duration"].startswith("PT")
    assert attempt["execution-details"]["worker"] and "files removed" in attempt["message"]
    history = tasks.history(table_id)
    assert [e["type"] for e in history] == [
        "table.created", "table.dropped", "table.expiry-rescheduled", "table.expired", "table.purge-started",
        "table.purged"]
    assert history[-2]["actor"] == history[-1]["actor"] == "system:purger"
    # the other table's tasks are untouched
    assert {tasks.of(kept, q)["status"] for q in ("tabular_expiration", "tabular_purge")} == {"SCHEDULED"}
    assert tasks.files(kept)


def test_a_purge_attempt_whose_worker_died_is_shown_abandoned_by_the_next(client, warehouse, pg_url, data_dir):
    """A worker that recorded its start and died (kill -9) leaves a RUNNING attempt with no outcome: the next
    attempt's start names it, and the task API shows it FAILED as abandoned, then the attempt that succeeded."""
    tasks = Tasks(client, warehouse, 3600)
    table_id = tasks.dropped_table("t")
    container = Container(Settings(pg_url=pg_url, data_dir=data_dir))
    try:  # what the purger records once it holds the claim, by a worker that then stops
        table = container.ledger.log.get(Tabular, uuid.UUID(table_id))
        assert table.start_purge("dead-host:1", Provenance("system:purger", "r-dead")) == 1
        container.ledger.append(table)
    finally:
        container.close()
    purge = tasks.of(table_id, "tabular_purge")
    running = lakekeeper_spec.check(client.get(f"{tasks.w}/task/by-id/{purge['task-id']}"))
    assert running["attempts"][0]["status"] == "RUNNING" and running["attempts"][0]["duration"] is None
    assert purge["status"] == "RUNNING" and purge["attempt"] == 1 and purge["picked-up-at"], purge
    assert tasks.control("run-now", tasks.of(table_id, "tabular_expiration")["task-id"]).status_code == 204
    wait_until(lambda: tasks.of(table_id, "tabular_purge")["status"] == "SUCCESS", 30, what="the purge")
    done = lakekeeper_spec.check(client.get(f"{tasks.w}/task/by-id/{purge['task-id']}"))  # Lakekeeper's shape
    assert [(a["attempt"], a["status"]) for a in done["attempts"]] == [(2, "SUCCESS"), (1, "FAILED")], done
    assert done["attempts"][1]["message"].startswith("Abandoned") and done["attempt"] == 2
    assert done["attempts"][1]["execution-details"] == {"worker": "dead-host:1"}
    assert "attempt 1 was abandoned" in tasks.history(table_id)[-2]["summary"]
    # the Events API shows the attempts like any change
    r = client.post(f"{warehouse['prefix']}/events", json={"operation-types": ["x-lakeledger.table.purge-started"]})
    assert r.status_code == 200, r.text
    started = [e["operation"] for e in r.json()["events"] if e["operation"]["object-uuid"] == table_id]
    assert [o["change"]["attempt"] for o in started] == [1, 2] and started[0]["change"]["abandoned"] is None


def test_stop_asks_a_running_maintenance_run_to_stop_and_its_worker_tries_it_again(client, warehouse, pg_url,
                                                                                    data_dir, log_length):
    """Lakekeeper's stop: the running run is STOPPING (one event, asked once), counted as running, until its worker
    records the attempt failed; the run is then waiting for its next attempt. A run that is not running records
    nothing."""
    tasks = Tasks(client, warehouse, 3600)
    t = _ok(client.post(f"{tasks.p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}))
    table_id = uuid.UUID(t["metadata"]["table-uuid"])
    by = Provenance("system:maintenance", "r-stop")
    container = Container(Settings(pg_url=pg_url, data_dir=data_dir))
    try:  # what the checks and then a worker holding the run's claim record
        run = TableMaintenance.schedule(None, uuid.UUID(warehouse["id"]), table_id, ["ns", "t"], "data_compaction",
                                        container.ledger.now(), "12 small files", {"enabled": True}, by)
        container.ledger.append(run)
        task = tasks.of(str(table_id), "data_compaction")
        before = log_length()
        assert tasks.control("stop", task["task-id"]).status_code == 204  # waiting, not running: nothing
        assert log_length() == before
        running = _tasks_gauge(client, "data_compaction", "running") + 1
        run = container.ledger.log.get(TableMaintenance, maintenance_id(table_id, "data_compaction"))
        attempt = run.start("host:1", by)
        container.ledger.append(run)
        wait_until(lambda: _tasks_gauge(client, "data_compaction", "running") == running, 30, what="running + 1")
        assert tasks.control("stop", task["task-id"]).status_code == 204
        assert tasks.control("stop", task["task-id"]).status_code == 204  # asked already: nothing more
        assert log_length() == before + 2
        stopping = lakekeeper_spec.check(client.get(f"{tasks.w}/task/by-id/{task['task-id']}"))
        assert stopping["status"] == "STOPPING" and stopping["attempts"][0]["status"] == "RUNNING", stopping
        assert _tasks_gauge(client, "data_compaction", "running") == running
        run = container.ledger.log.get(TableMaintenance, maintenance_id(table_id, "data_compaction"))
        run.fail(attempt, "stopped by a task control (stop); tried again", container.ledger.now(),
                 Backoff(60, max_attempts=1), by, stopped=True)
        container.ledger.append(run)
    finally:
        container.close()
    waiting = lakekeeper_spec.check(client.get(f"{tasks.w}/task/by-id/{task['task-id']}"))
    assert waiting["status"] == "SCHEDULED" and waiting["attempts"][0]["status"] == "FAILED", waiting
    assert waiting["attempts"][0]["message"].startswith("stopped by a task control")
    kinds = [e["type"] for e in _ok(client.get(f"{tasks.w}/history"))["events"]
             if e["type"].startswith("table-maintenance.")]
    assert kinds[-3:] == ["table-maintenance.run-started", "table-maintenance.stop-requested",
                          "table-maintenance.run-failed"], kinds


def _tasks_gauge(client, queue: str, state: str) -> float:
    [value] = [s.value for f in text_string_to_metric_families(client.get("/metrics").text) for s in f.samples
               if s.name == "lakeledger_tasks" and s.labels == {"queue": queue, "state": state}]
    return value


def test_the_task_gauges_count_what_the_queues_hold(client, warehouse):
    tasks = Tasks(client, warehouse, 3600)
    before = _tasks_gauge(client, "tabular_expiration", "queued")
    table_id = tasks.dropped_table("t", purge=False)
    wait_until(lambda: _tasks_gauge(client, "tabular_expiration", "queued") == before + 1, 30, what="queued + 1")
    assert tasks.control("cancel", tasks.of(table_id, "tabular_expiration")["task-id"]).status_code == 204
    wait_until(lambda: _tasks_gauge(client, "tabular_expiration", "queued") == before, 30, what="queued again")
    text = client.get("/metrics").text
    assert 'lakeledger_task_oldest_due_seconds{queue="tabular_purge"}' in text


def test_a_cancelled_purge_keeps_the_files_after_a_run_now_expiry(client, warehouse):
    tasks = Tasks(client, warehouse, 3600)
    table_id = tasks.dropped_table("t")
    assert tasks.control("cancel", tasks.of(table_id, "tabular_purge")["task-id"]).status_code == 204
    assert tasks.control("run-now", tasks.of(table_id, "tabular_expiration")["task-id"]).status_code == 204
    wait_until(lambda: tasks.of(table_id, "tabular_expiration")["status"] == "SUCCESS", 30, what="the expiry")
    assert tasks.of(table_id, "tabular_purge")["status"] == "CANCELLED"
    assert tasks.files(table_id)


def test_a_soft_dropped_generic_table_is_a_task_and_run_now_expires_it(client, warehouse):
    tasks = Tasks(client, warehouse, 3600)
    base = f"/lakekeeper/v1/{warehouse['id']}/namespaces/ns/generic-tables"
    _ok(client.post(base, json={"name": "g", "format": "lance"}))
    [generic_id] = [i["id"] for i in _ok(client.get(base))["identifiers"]]
    assert client.delete(f"{base}/g", params={"purgeRequested": "false"}).status_code == 204
    [expiry] = tasks.listed(entities=[{"type": "generic-table", "generic-table-id": generic_id}])["tasks"]
    assert expiry["entity"] == {"type": "generic-table", "generic-table-id": generic_id}
    assert tasks.control("run-now", expiry["task-id"]).status_code == 204
    # the expiry schedule follows generic tables' drops too
    wait_until(lambda: _ok(client.get(f"{tasks.w}/task/by-id/{expiry['task-id']}"))["status"] == "SUCCESS", 30,
               what="the generic table's expiry")


def test_lists_page_and_filter(client, warehouse):
    tasks = Tasks(client, warehouse, 3600)
    ids = [tasks.dropped_table(f"t{i}", purge=False) for i in range(3)]
    everything = tasks.listed()["tasks"]
    assert len(everything) == 3 and {t["queue-name"] for t in everything} == {"tabular_expiration"}
    first = tasks.listed(**{"page-size": 2})
    assert len(first["tasks"]) == 2 and first["next-page-token"]
    second = tasks.listed(**{"page-size": 2, "page-token": first["next-page-token"]})
    assert len(second["tasks"]) == 1 and second["next-page-token"] is None
    assert [t["task-id"] for t in first["tasks"] + second["tasks"]] == [t["task-id"] for t in everything]
    assert [t["entity"]["table-id"] for t in everything] == ids[::-1]  # newest first
    # a token is for the list it came from
    other = client.post(f"{tasks.w}/task/list", json={"status": ["SCHEDULED"], "page-token": first["next-page-token"]})
    assert other.status_code == 400, other.text
    assert tasks.listed(status=["SUCCESS"])["tasks"] == []
    assert tasks.listed(**{"queue-name": ["tabular_purge"]})["tasks"] == []
    assert tasks.listed(entities=[{"type": "view", "view-id": ids[0]}])["tasks"] == []  # a table is no view
    assert tasks.listed(entities=[{"type": "warehouse"}])["tasks"] == []
    assert len(tasks.listed(**{"created-after": everything[1]["created-at"]})["tasks"]) == 1


def test_queue_configs_are_set_and_read_under_both_names(client, warehouse, log_length):
    w = f"{M}/warehouse/{warehouse['id']}"
    assert _ok(client.get(f"{w}/task-queue/tabular_purge/config")) == {
        "queue-config": {}, "max-seconds-since-last-heartbeat": None}
    before = log_length()
    config = {"queue-config": {"note": "kept"}, "max-seconds-since-last-heartbeat": 600}
    _ok(client.post(f"{w}/task-queue/soft_deletion/config", json=config), 204)
    assert _ok(client.get(f"{w}/task-queue/tabular_expiration/config")) == config
    assert _ok(client.get(f"{w}/task-queue/soft_deletion/config")) == config
    _ok(client.post(f"{w}/task-queue/tabular_expiration/config", json=config), 204)  # the same again: nothing
    assert log_length() == before + 1
    history = _ok(client.get(f"{w}/history", params={"type": "task-queue-config.set"}))["events"]
    assert history and "tabular_expiration" in history[-1]["summary"]


@pytest.mark.parametrize("path,body", [
    ("task/control", {"action": {"action-type": "pause"}, "task-ids": []}),
    ("task/control", {"action": {"action-type": "cancel"}, "task-ids": [str(uuid.uuid4()) for _ in range(101)]}),
    ("task/control", {"action": {"action-type": "cancel"}}),
    ("task/list", {"page-size": 0}),
    ("task/list", {"page-token": "not-a-token"}),
    ("task/list", {"entities": [{"type": "table"}]}),
    ("task/list", {"status": ["DONE"]}),
    ("task/list", {"created-before": 7398.9}),  # a date-time is a string, not seconds since 1970
    ("task/control", {"action": {"action-type": "run-at", "scheduled-for": 1700000000}, "task-ids": []}),
    ("task/control", {"action": {"action-type": "run-at"}, "task-ids": []}),
    ("task/control", {"action": {"action-type": "run-at", "scheduled-for": "2030-01-01T00:00:00"}, "task-ids": []}),
    ("task-queue/tabular_purge/config", {"queue-config": []}),
    ("task-queue/tabular_purge/config", {"queue-config": {}, "max-seconds-since-last-heartbeat": -1}),
    ("task-queue/tabular_purge/config", {}),
])
def test_bad_requests_are_400_and_append_nothing(client, warehouse, log_length, path, body):
    before = log_length()
    r = client.post(f"{M}/warehouse/{warehouse['id']}/{path}", json=body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["code"] == 400
    assert log_length() == before


def test_unknown_tasks_and_warehouses_are_404(client, warehouse, log_length):
    tasks = Tasks(client, warehouse, 3600)
    table_id = tasks.dropped_table("t", purge=False)
    known = tasks.of(table_id, "tabular_expiration")["task-id"]
    before = log_length()
    unknown = str(uuid.uuid4())
    assert client.get(f"{tasks.w}/task/by-id/{unknown}").status_code == 404
    r = tasks.control("cancel", known, unknown)
    assert r.status_code == 404 and unknown in r.json()["error"]["message"]
    assert tasks.of(table_id, "tabular_expiration")["status"] == "SCHEDULED"  # all or nothing
    assert client.post(f"{M}/warehouse/{uuid.uuid4()}/task/list", json={}).status_code == 404
    assert client.get(f"{M}/warehouse/{uuid.uuid4()}/task-queue/tabular_purge/config").status_code == 404
    assert log_length() == before


# ---- who may: a server of this module's with OpenFGA; spark (the operator) owns everything, bob is given describe --

@pytest.fixture(scope="module")
def fga_api(oidc, openfga, pg_url, tmp_path_factory):
    with openfga_api(pg_url, tmp_path_factory, oidc, openfga, "tasks") as server:
        yield server


def test_reading_takes_seeing_the_warehouse_and_control_takes_modify(fga_api, oidc, tmp_path):
    with signed_in(fga_api, oidc, "spark") as spark:
        assert spark.post(f"{M}/bootstrap", json={"accept-terms-of-use": True, "is-operator": True}).status_code == 204
        project = _ok(spark.post(f"{M}/project", json={"project-name": "tasks"}), 201)["project-id"]
        w = _ok(spark.post(f"{M}/warehouse", json={
            "warehouse-name": "wh", "project-id": project,
            "storage-profile": {"type": "file", "location": f"file://{tmp_path}"},
            "delete-profile": {"type": "soft", "expiration-seconds": 3600}}), 201)["warehouse-id"]
        _ok(spark.post(f"/catalog/v1/{w}/namespaces", json={"namespace": ["ns"]}))
        _ok(spark.post(f"/catalog/v1/{w}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}))
        assert spark.delete(f"/catalog/v1/{w}/namespaces/ns/tables/t").status_code == 204
        [task_id] = [t["task-id"] for t in _ok(spark.post(f"{M}/warehouse/{w}/task/list", json={}))["tasks"]
                     if t["queue-name"] == "tabular_expiration"]
    cancel = {"action": {"action-type": "cancel"}, "task-ids": [task_id]}
    with signed_in(fga_api, oidc, "bob", project) as bob:
        assert bob.post(f"{M}/warehouse/{w}/task/list", json={}).status_code == 404  # he cannot see the warehouse
        assert bob.post(f"{M}/warehouse/{w}/task/control", json=cancel).status_code == 404
        with signed_in(fga_api, oidc, "spark", project) as spark:
            describe = {"privilege": "describe", "principal": {"user": "oidc~bob"}}
            assert spark.post(f"{M}/warehouse/{w}/grants", json={"writes": [describe]}).status_code == 204
        before = event_count(fga_api.database)
        assert len(_ok(bob.post(f"{M}/warehouse/{w}/task/list", json={}))["tasks"]) == 2
        assert _ok(bob.get(f"{M}/warehouse/{w}/task/by-id/{task_id}"))["status"] == "SCHEDULED"
        assert bob.post(f"{M}/warehouse/{w}/task/control", json=cancel).status_code == 403
        refused = bob.post(f"{M}/warehouse/{w}/task-queue/tabular_purge/config", json={"queue-config": {}})
        assert refused.status_code == 403, refused.text
        assert event_count(fga_api.database) == before
        with signed_in(fga_api, oidc, "spark", project) as spark:
            modify = {"privilege": "modify", "principal": {"user": "oidc~bob"}}
            assert spark.post(f"{M}/warehouse/{w}/grants", json={"writes": [modify]}).status_code == 204
        assert bob.post(f"{M}/warehouse/{w}/task/control", json=cancel).status_code == 204
        assert _ok(bob.get(f"{M}/warehouse/{w}/task/by-id/{task_id}"))["status"] == "CANCELLED"
