"""Table maintenance's pure parts: the runs' aggregate (one open run, attempts, take-over, backoff), the triggers, and
the Spark SQL a policy leads to."""

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

from lakeledger.domain import table_metadata as tm
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.maintenance_policy import (
    DATA_COMPACTION,
    DEFAULTS,
    METADATA_COMPACTION,
    ORPHAN_FILE_REMOVAL,
    SNAPSHOT_EXPIRY,
)
from lakeledger.domain.maintenance_triggers import (
    IDLE_RECHECK,
    TableFigures,
    check_due,
    due_reason,
    expiry_cutoff,
    next_check,
    oldest_expirable_at,
    orphan_cutoff,
)
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table_maintenance import Backoff, RunRefused, TableMaintenance, maintenance_id
from lakeledger.domain.warehouse import (
    Warehouse,
    parse_delete_profile,
    parse_storage_profile,
    parse_time_travel_retention,
    retention_of,
)
from lakeledger.maintenance.procedures import calls, figures, table_argument

BY = Provenance("system:maintenance", "r")
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _scheduled(found=None, table_id=None) -> TableMaintenance:
    table_id = table_id or uuid4()
    run = TableMaintenance.schedule(found, uuid4(), table_id, ["ns", "t"], "data_compaction", NOW, "why", {"a": 1}, BY)
    assert run is not None
    return run


def test_one_run_is_open_at_a_time_and_the_next_follows_the_end():
    run = _scheduled()
    assert run.id == maintenance_id(run.table_id, "data_compaction") and run.open_run == 1
    assert TableMaintenance.schedule(run, run.warehouse_id, run.table_id, ["ns", "t"], "data_compaction", NOW, "again",
                                     {}, BY) is None
    attempt = run.start("w1", BY)
    run.succeed(attempt, {"rewritten_data_files_count": 12}, 3.2, BY)
    assert run.open_run is None and run.last_ended_at is not None
    again = TableMaintenance.schedule(run, run.warehouse_id, run.table_id, ["ns", "t"], "data_compaction", NOW, "x",
                                      {}, BY)
    assert again is run and run.open_run == 2 and run.attempts == 0


def test_a_failed_attempt_waits_longer_each_time_and_the_last_one_ends_the_run():
    run = _scheduled()
    backoff = Backoff(10, longest_seconds=25, max_attempts=3)
    assert run.fail(run.start("w", BY), "boom", NOW, backoff, BY) == NOW + timedelta(seconds=10)
    assert run.open_run == 1 and not run.is_due(NOW) and run.is_due(NOW + timedelta(seconds=10))
    assert run.fail(run.start("w", BY), "boom", NOW, backoff, BY) == NOW + timedelta(seconds=20)
    assert run.fail(run.start("w", BY), "boom", NOW, backoff, BY) is None
    assert run.open_run is None and run.attempts == 3


def test_a_started_attempt_with_no_outcome_is_named_abandoned_by_the_next_and_cannot_end_later():
    run = _scheduled()
    first = run.start("w1", BY)
    second = run.start("w2", BY)
    started = [e for e in run.collect_events() if isinstance(e, TableMaintenance.RunStarted)]
    assert [e.abandoned for e in started] == [None, first]
    with pytest.raises(RunRefused):
        run.succeed(first, {}, 1.0, BY)
    run.succeed(second, {}, 1.0, BY)


def test_cancel_and_reschedule_touch_only_a_waiting_run():
    run = _scheduled()
    assert run.reschedule(NOW, NOW, BY) is False  # due already: run-now changes nothing
    assert run.reschedule(NOW + timedelta(hours=2), NOW, BY) is True and run.due_at == NOW + timedelta(hours=2)
    assert run.reschedule(NOW + timedelta(hours=2), NOW, BY) is False  # the same time again
    assert run.reschedule(NOW, NOW, BY) is True and run.is_due(NOW)
    run.fail(run.start("w", BY), "boom", NOW, Backoff(60), BY)
    assert not run.is_due(NOW) and run.reschedule(NOW, NOW, BY) is True and run.is_due(NOW)
    run.start("w", BY)
    assert run.cancel("no", BY) is False  # a running job's commits cannot be called back
    assert run.cancel("its table is gone", BY, running_too=True) is True
    assert run.open_run is None and run.cancel("again", BY) is False


def test_a_stop_is_asked_of_a_running_attempt_once_and_its_run_is_always_tried_again():
    run = _scheduled()
    assert run.request_stop(BY) is False  # nothing runs
    backoff = Backoff(60, max_attempts=1)
    attempt = run.start("w", BY)
    assert run.request_stop(BY) is True and run.stop_requested == attempt
    assert run.request_stop(BY) is False  # asked already
    retry_at = run.fail(attempt, "stopped by a task control", NOW, backoff, BY, stopped=True)
    assert retry_at == NOW + timedelta(seconds=60) and run.open_run is not None and run.stop_requested is None
    # the same attempt failing of itself would have been the last
    assert run.fail(run.start("w", BY), "boom", NOW, backoff, BY) is None and run.open_run is None


def _settings(policy_type: str, **overrides) -> dict:
    return {**DEFAULTS[policy_type], **overrides}


def test_triggers_say_why_with_the_figures():
    small = TableFigures(snapshots=3, oldest_snapshot_at=NOW, data_files=120, small_files=110, delete_files=0,
                         manifests=4)
    assert "110 of 120 data files" in due_reason(DATA_COMPACTION, _settings(DATA_COMPACTION), small, NOW)
    assert due_reason(DATA_COMPACTION, _settings(DATA_COMPACTION, **{"trigger-small-files": 110}), small, NOW) is None
    assert due_reason(METADATA_COMPACTION, _settings(METADATA_COMPACTION, **{"trigger-manifests": 3}), small, NOW)
    assert due_reason(METADATA_COMPACTION, _settings(METADATA_COMPACTION), small, NOW) is None
    old = TableFigures(3, NOW - timedelta(days=6), 1, 0, 0, 1)
    assert "older than P5D" in due_reason(SNAPSHOT_EXPIRY, _settings(SNAPSHOT_EXPIRY), old, NOW)
    one = TableFigures(1, NOW - timedelta(days=60), 1, 0, 0, 1)
    assert due_reason(SNAPSHOT_EXPIRY, _settings(SNAPSHOT_EXPIRY), one, NOW) is None  # the one kept
    assert due_reason(ORPHAN_FILE_REMOVAL, _settings(ORPHAN_FILE_REMOVAL), one, NOW)


def test_a_table_is_looked_at_next_at_its_soonest_enabled_interval():
    assert next_check({}, NOW) == NOW + IDLE_RECHECK
    assert next_check({"data_compaction": ("PT1H", None)}, NOW) == NOW  # never looked at
    soonest = {"data_compaction": ("PT1H", NOW - timedelta(minutes=10)), "snapshot_expiry": ("P1D", NOW)}
    assert next_check(soonest, NOW) == NOW + timedelta(minutes=50)
    assert next_check({"orphan_file_removal": ("PT5M", NOW - timedelta(hours=2))}, NOW) == NOW  # overdue: now


def test_an_expiry_the_retention_makes_pointless_is_not_due():
    expiry = _settings(SNAPSHOT_EXPIRY, **{"max-snapshot-age": "PT1H", "trigger-snapshots": 5})
    aged = TableFigures(snapshots=12, oldest_snapshot_at=NOW - timedelta(days=3), data_files=12, small_files=12,
                        delete_files=0, manifests=12)
    assert "12 snapshots" in due_reason(SNAPSHOT_EXPIRY, expiry, aged, NOW)
    # every snapshot is within a week's retention: neither their number nor their age makes a run worth it
    assert due_reason(SNAPSHOT_EXPIRY, expiry, aged, NOW, timedelta(days=7)) is None
    assert "12 snapshots" in due_reason(SNAPSHOT_EXPIRY, expiry, aged, NOW, timedelta(days=1))
    # nor, without a retention, when every snapshot is younger than the policy's own age
    young = TableFigures(12, NOW - timedelta(minutes=30), 12, 12, 0, 12)
    assert due_reason(SNAPSHOT_EXPIRY, expiry, young, NOW) is None
    # the retention is the expiry's only: compaction and orphan removal run as before
    assert due_reason(ORPHAN_FILE_REMOVAL, _settings(ORPHAN_FILE_REMOVAL), aged, NOW, timedelta(days=7))


def _snapshots(refs: list[dict]):
    metadata = tm.new_metadata(Schema(NestedField(1, "id", LongType(), required=True)), None, None, "file:///w/t", {},
                               uuid4())
    parent = None
    for snapshot_id in (1, 2, 3):
        snapshot = {"snapshot-id": snapshot_id, "sequence-number": snapshot_id, "timestamp-ms": snapshot_id * 1000,
                    "manifest-list": f"file:///w/t/metadata/snap-{snapshot_id}.avro", "schema-id": 0,
                    "summary": {"operation": "append"}, **({"parent-snapshot-id": parent} if parent else {})}
        metadata = tm.apply_commit(metadata, "file:///w/t/metadata/1.metadata.json", [], tm.parse_updates([
            {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}]))
        parent = snapshot_id
    updates = [{"action": "set-snapshot-ref", **ref} for ref in refs]
    return tm.apply_commit(metadata, "file:///w/t/metadata/2.metadata.json", [], tm.parse_updates(updates))


def test_a_snapshot_a_ref_keeps_does_not_make_an_expiry_due():
    def at(seconds: int) -> datetime:
        return datetime.fromtimestamp(seconds, UTC)

    assert oldest_expirable_at(_snapshots([])) == at(1)
    tagged = _snapshots([{"ref-name": "t", "type": "tag", "snapshot-id": 1}])
    assert oldest_expirable_at(tagged) == at(2)  # the tag keeps 1 for ever; 2 may go
    everything = _snapshots([{"ref-name": "t", "type": "tag", "snapshot-id": 1},
                             {"ref-name": "b", "type": "branch", "snapshot-id": 2}])
    assert oldest_expirable_at(everything) is None  # every snapshot is a ref's own: an expiry would remove none
    figures = TableFigures(3, oldest_expirable_at(everything), 1, 0, 0, 1)
    assert due_reason(SNAPSHOT_EXPIRY, _settings(SNAPSHOT_EXPIRY, **{"trigger-snapshots": 2}), figures, NOW) is None
    aging = _snapshots([{"ref-name": "t", "type": "tag", "snapshot-id": 1, "max-ref-age-ms": 1000}])
    assert oldest_expirable_at(aging) == at(1)  # a tag that itself expires does not keep its snapshot


def test_a_retention_set_since_the_last_check_makes_the_table_checked_again():
    expiry = _settings(SNAPSHOT_EXPIRY)  # every PT6H
    checked = NOW - timedelta(minutes=10)
    assert not check_due(expiry, checked, NOW)
    assert not check_due(expiry, checked, NOW, changed_at=NOW - timedelta(hours=1))
    assert check_due(expiry, checked, NOW, changed_at=NOW - timedelta(minutes=5))
    assert check_due(expiry, None, NOW) and check_due(expiry, NOW - timedelta(hours=6), NOW)


def test_a_time_travel_retention_is_an_iso_duration_spelt_one_way():
    assert parse_time_travel_retention("P7D") == "P7D"
    assert parse_time_travel_retention("PT48H") == "P2D"
    assert parse_time_travel_retention(None) is None
    assert retention_of("P2D") == timedelta(days=2) and retention_of(None) is None
    for bad in ("7 days", 7, "PT30M", "P40000D", "", "P", True, {"days": 7}):
        with pytest.raises(BadRequest):
            parse_time_travel_retention(bad)


def test_a_warehouse_records_its_retention_once_per_change():
    warehouse = Warehouse.create(uuid4(), uuid4(), "w", parse_storage_profile({"type": "file", "location": "file:///w"}),
                                 parse_delete_profile(None), BY)
    warehouse.collect_events()
    warehouse.set_time_travel_retention("P7D", BY)
    warehouse.set_time_travel_retention("PT168H", BY)  # the same week
    warehouse.set_time_travel_retention(None, BY)
    recorded = warehouse.collect_events()
    assert [e.time_travel_retention for e in recorded] == ["P7D", None]
    assert all(isinstance(e, Warehouse.TimeTravelRetentionSet) and e.actor == BY.actor for e in recorded)


def test_cutoffs_keep_the_retention_and_never_delete_young_orphans():
    expiry = _settings(SNAPSHOT_EXPIRY, **{"max-snapshot-age": "PT1H"})
    assert expiry_cutoff(expiry, None, NOW) == NOW - timedelta(hours=1)
    assert expiry_cutoff(expiry, timedelta(days=7), NOW) == NOW - timedelta(days=7)
    retained = calls(SNAPSHOT_EXPIRY, expiry, ["ns", "t"], "c", NOW, timedelta(days=7))[0].sql
    assert "older_than => TIMESTAMP '2026-11-20 12:00:00.000000'" in retained
    # a policy recorded before the floor existed, or written by hand into the log, still keeps a day
    assert orphan_cutoff({"min-orphan-age": "PT1H"}, NOW) == NOW - timedelta(days=1)
    assert orphan_cutoff({"min-orphan-age": "P3D"}, NOW) == NOW - timedelta(days=3)


def test_procedures_quote_names_and_pass_the_policy():
    assert table_argument(["a.b", "it's", "t`x"]) == "'`a.b`.`it\\'s`.`t``x`'"
    compaction = calls(DATA_COMPACTION, _settings(DATA_COMPACTION), ["ns", "t"], "lakeledger", NOW)
    assert [c.procedure for c in compaction] == ["rewrite_data_files", "rewrite_position_delete_files"]
    assert "'target-file-size-bytes', '536870912'" in compaction[0].sql
    assert compaction[0].sql.startswith("CALL lakeledger.system.rewrite_data_files(table => '`ns`.`t`'")
    expiry = calls(SNAPSHOT_EXPIRY, _settings(SNAPSHOT_EXPIRY), ["ns", "t"], "lakeledger", NOW)[0].sql
    assert "older_than => TIMESTAMP '2026-11-22 12:00:00.000000'" in expiry and "retain_last => 1" in expiry
    orphans = calls(ORPHAN_FILE_REMOVAL, _settings(ORPHAN_FILE_REMOVAL), ["ns", "t"], "lakeledger", NOW)[0].sql
    assert "older_than => TIMESTAMP '2026-11-24 12:00:00.000000', prefix_listing => true" in orphans
    assert calls(METADATA_COMPACTION, {}, ["ns", "t"], "c", NOW)[0].sql == \
        "CALL c.system.rewrite_manifests(table => '`ns`.`t`')"


def test_figures_sum_counts_and_count_orphans():
    assert figures("rewrite_data_files", [{"rewritten_data_files_count": 3, "added_data_files_count": 1,
                                           "rewritten_bytes_count": 900, "failed_data_files_count": 0}]) == {
        "rewritten_data_files_count": 3, "added_data_files_count": 1, "rewritten_bytes_count": 900,
        "failed_data_files_count": 0}
    assert figures("remove_orphan_files", [{"orphan_file_location": "file:/a"}, {"orphan_file_location": "b"}]) == {
        "orphan_files_deleted": 2}
