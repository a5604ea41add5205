"""Metrics reports kept (issue 30 point 5): `POST .../tables/{t}/metrics` with the spec's ScanReport and CommitReport
bodies appends one event each, and `GET /management/v1/warehouse/{w}/table/{t}/metrics-reports` lists them newest
first, paged, with the figures a person asks for; bad reports and unknown tables are refused with nothing appended;
reports are no catalog change (not in the history, not in the Events API); the read model is rebuilt from the log row
for row, and keeps the newest LAKELEDGER__METRICS_REPORTS_PER_TABLE of a table."""

import os
import subprocess
import sys
import uuid

import httpx
import psycopg
import pytest
from support import SCHEMA, Server

from lakeledger.eventstore.identity import event_id

M = "/management/v1"

# Iceberg's own examples' shapes (ScanReport, CommitReport of the REST spec; the figures Java's reporters send)
SCAN = {
    "report-type": "scan-report", "table-name": "lakeledger.ns.t", "snapshot-id": 3497810964824022504,
    "filter": {"type": "gt", "term": "id", "value": 23}, "schema-id": 0, "projected-field-ids": [1, 2],
    "projected-field-names": ["id", "data"],
    "metrics": {
        "total-planning-duration": {"count": 1, "time-unit": "nanoseconds", "total-duration": 2644235116},
        "result-data-files": {"unit": "count", "value": 4},
        "result-delete-files": {"unit": "count", "value": 1},
        "total-data-manifests": {"unit": "count", "value": 2},
        "total-delete-manifests": {"unit": "count", "value": 0},
        "scanned-data-manifests": {"unit": "count", "value": 2},
        "skipped-data-manifests": {"unit": "count", "value": 0},
        "total-file-size-in-bytes": {"unit": "bytes", "value": 10240},  # Java's name
        "total-delete-file-size-bytes": {"unit": "bytes", "value": 512},  # the spec example's name
    },
    "metadata": {"engine-name": "spark", "engine-version": "3.5.6"},
}
COMMIT = {
    "report-type": "commit-report", "table-name": "lakeledger.ns.t", "snapshot-id": 7, "sequence-number": 2,
    "operation": "append",
    "metrics": {
        "total-duration": {"count": 1, "time-unit": "milliseconds", "total-duration": 250},
        "attempts": {"unit": "count", "value": 1},
        "added-data-files": {"unit": "count", "value": 3},
        "added-records": {"unit": "count", "value": 1000},
        "added-files-size-bytes": {"unit": "bytes", "value": 4096},
    },
}


def _reports(client, warehouse, table_id, **params) -> httpx.Response:
    return client.get(f"{M}/warehouse/{warehouse['id']}/table/{table_id}/metrics-reports", params=params)


def _table_id(client, table_path: str) -> str:
    return client.get(table_path).json()["metadata"]["table-uuid"]


def test_scan_and_commit_reports_are_kept_and_listed_newest_first(client, warehouse, table_factory, db):
    table = table_factory("ns", "t")
    table_id = _table_id(client, table)
    r = client.post(f"{table}/metrics", json=SCAN, headers={"x-request-id": "scan-1"})
    assert r.status_code == 204, r.text
    r = client.post(f"{table}/metrics", json=COMMIT, headers={"x-request-id": "commit-1"})
    assert r.status_code == 204, r.text

    r = _reports(client, warehouse, table_id)
    assert r.status_code == 200, r.text
    body = r.json()
    commit, scan = body["reports"]
    assert body["next-page-token"] is None
    assert (commit["report-type"], scan["report-type"]) == ("commit-report", "scan-report")
    assert commit["sequence"] > scan["sequence"]
    assert scan["request-id"] == "scan-1" and commit["request-id"] == "commit-1"
    assert scan["actor"] == commit["actor"] and scan["actor"]
    assert scan["snapshot-id"] == 3497810964824022504 and scan["schema-id"] == 0
    assert scan["filter"] == SCAN["filter"] and scan["projected-field-names"] == ["id", "data"]
    assert scan["metrics"] == SCAN["metrics"] and scan["metadata"] == SCAN["metadata"]
    assert scan["figures"] == {"files": 5, "bytes": 10752, "records": None, "duration-ms": pytest.approx(2644.235116)}
    assert (commit["operation"], commit["sequence-number"], commit["snapshot-id"]) == ("append", 2, 7)
    assert commit["figures"] == {"files": 3, "bytes": 4096, "records": 1000, "duration-ms": 250.0}
    # the event's own id and time, as the log has them
    row = db.execute("SELECT originator_id, originator_version FROM lakeledger_events WHERE notification_id = %s",
                     (scan["sequence"],)).fetchone()
    assert scan["event-id"] == str(event_id(*row))

    # paged: one a page, newest first, and only one kind when asked
    first = _reports(client, warehouse, table_id, pageSize=1).json()
    assert [x["report-type"] for x in first["reports"]] == ["commit-report"]
    second = _reports(client, warehouse, table_id, pageSize=1, pageToken=first["next-page-token"]).json()
    assert [x["report-type"] for x in second["reports"]] == ["scan-report"]
    assert second["next-page-token"] is None
    scans = _reports(client, warehouse, table_id, reportType="scan-report").json()["reports"]
    assert [x["sequence"] for x in scans] == [scan["sequence"]]
    # the boolean filter Java writes for a scan without one
    assert client.post(f"{table}/metrics", json={**SCAN, "filter": True}).status_code == 204
    assert _reports(client, warehouse, table_id, pageSize=1).json()["reports"][0]["filter"] is True


@pytest.mark.parametrize("body, why", [
    ({"report-type": "scan-report"}, "requires 'table-name'"),
    ({**SCAN, "snapshot-id": "three"}, "'snapshot-id'"),
    ({**SCAN, "metrics": {"result-data-files": {"unit": "count"}}}, "'value'"),
    ({**SCAN, "metrics": {"total-planning-duration": {"time-unit": "nanoseconds", "count": 1}}}, "'total-duration'"),
    ({**COMMIT, "operation": 3}, "'operation'"),
    ({**COMMIT, "snapshot-id": 2**64}, "64-bit"),
    ({k: v for k, v in COMMIT.items() if k != "report-type"}, "'report-type' is required"),
    ({**SCAN, "projected-field-ids": ["a"]}, "projected-field-ids"),
    ([SCAN], "object"),
])
def test_a_bad_report_is_refused_and_nothing_is_appended(client, table_factory, log_length, body, why):
    table = table_factory("ns", "t")
    before = log_length()
    r = client.post(f"{table}/metrics", json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == 400 and error["type"] == "BadRequestException" and why in error["message"], error
    assert log_length() == before


def test_a_report_on_a_missing_table_is_404_and_nothing_is_appended(client, warehouse, table_factory, log_length):
    table_factory("ns", "t")
    before = log_length()
    r = client.post(f"{warehouse['prefix']}/namespaces/ns/tables/nope/metrics", json=SCAN)
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchTableException", r.text
    r = client.post(f"/catalog/v1/{uuid.uuid4()}/namespaces/ns/tables/t/metrics", json=SCAN)
    assert r.status_code == 404, r.text
    assert log_length() == before
    assert _reports(client, warehouse, uuid.uuid4()).status_code == 404


def test_a_report_type_of_another_name_is_classified_by_its_shape(client, warehouse, table_factory):
    """The spec requires report-type as any string, and the body one of the two shapes."""
    table = table_factory("ns", "t")
    assert client.post(f"{table}/metrics", json={**COMMIT, "report-type": "commit"}).status_code == 204
    [kept] = _reports(client, warehouse, _table_id(client, table)).json()["reports"]
    assert kept["report-type"] == "commit-report"


def test_reports_are_no_catalog_change(client, warehouse, table_factory):
    """Neither the history nor the Events API lists them: they are about reads, and engines send one per scan."""
    table = table_factory("ns", "t")
    events = client.post(f"{warehouse['prefix']}/events", json={"page-size": 100}).json()["events"]
    history = client.get(f"{M}/warehouse/{warehouse['id']}/history").json()["events"]
    for _ in range(3):
        assert client.post(f"{table}/metrics", json=SCAN).status_code == 204
    assert client.post(f"{warehouse['prefix']}/events", json={"page-size": 100}).json()["events"] == events
    assert client.get(f"{M}/warehouse/{warehouse['id']}/history").json()["events"] == history
    assert len(_reports(client, warehouse, _table_id(client, table)).json()["reports"]) == 3


def test_a_rebuild_gives_the_same_reports(client, warehouse, table_factory, db, pg_url, data_dir):
    table = table_factory("ns", "t")
    table_id = _table_id(client, table)
    for body in (SCAN, COMMIT, {**SCAN, "filter": True, "metadata": None}):
        assert client.post(f"{table}/metrics", json=body).status_code == 204
    served = _reports(client, warehouse, table_id).json()  # caught up

    def snapshot() -> list:
        return db.execute("SELECT * FROM ll_metrics_reports ORDER BY sequence").fetchall()

    live = snapshot()
    assert len([r for r in live if str(r[6]) == table_id]) == 3
    env = {"LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env={**os.environ, **env},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert snapshot() == live
    assert _reports(client, warehouse, table_id).json() == served


def test_only_the_newest_reports_of_a_table_are_kept(database, tmp_path):
    """LAKELEDGER__METRICS_REPORTS_PER_TABLE bounds the read model per table (the log keeps every report)."""
    s = Server(database, tmp_path, LAKELEDGER__METRICS_REPORTS_PER_TABLE="2", LAKELEDGER__WORKERS="off")
    try:
        with httpx.Client(base_url=s.url, timeout=60) as c, psycopg.connect(database, autocommit=True) as db:
            r = c.post(f"{M}/warehouse", json={"warehouse-name": "bounded", "storage-profile": {
                "type": "file", "location": f"file://{tmp_path}/wh"}})
            assert r.status_code == 201, r.text
            wh = {"id": r.json()["warehouse-id"]}
            prefix = f"/catalog/v1/{wh['id']}"
            assert c.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
            ids = []
            for name in ("a", "b"):
                r = c.post(f"{prefix}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA})
                ids.append(r.json()["metadata"]["table-uuid"])
            for snapshot_id in range(1, 5):
                assert c.post(f"{prefix}/namespaces/ns/tables/a/metrics",
                              json={**COMMIT, "snapshot-id": snapshot_id}).status_code == 204
            assert c.post(f"{prefix}/namespaces/ns/tables/b/metrics", json=SCAN).status_code == 204
            kept = _reports(c, wh, ids[0]).json()["reports"]
            assert [x["snapshot-id"] for x in kept] == [4, 3]
            assert len(_reports(c, wh, ids[1]).json()["reports"]) == 1
            logged = db.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE %s",
                                ("%MetricsReport.Received",)).fetchone()[0]
            assert logged == 5
    finally:
        s.stop()

