"""When a table's maintenance action is due, and with which arguments it runs: pure decisions over the table's figures
(read from its metadata by lakeledger/maintenance/figures.py) and its effective policy's settings
(lakeledger/domain/maintenance_policy.py ``effective``)."""

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import isodate

from lakeledger.domain.maintenance_policy import (
    DATA_COMPACTION,
    METADATA_COMPACTION,
    ORPHAN_AGE_FLOOR,
    ORPHAN_FILE_REMOVAL,
    SNAPSHOT_EXPIRY,
)
from lakeledger.domain.table_metadata import TableMetadata

# A data file smaller than this part of the target size counts as small (Iceberg's rewrite_data_files takes files
# below 75 % of the target as candidates by default: min-file-size-bytes)
SMALL_FRACTION = 0.75


@dataclass(frozen=True)
class TableFigures:
    """What the table's current metadata says, as far as the triggers ask."""

    snapshots: int
    oldest_snapshot_at: datetime | None  # of those an expiry may remove (``oldest_expirable_at``)
    data_files: int
    small_files: int  # data files smaller than SMALL_FRACTION of the data-compaction target size
    delete_files: int
    manifests: int


def oldest_expirable_at(metadata: TableMetadata) -> datetime | None:
    """When the oldest snapshot an expiry may remove was made. A snapshot a branch or tag points at is never removed
    for its age (unless the ref itself has a max-ref-age-ms), so an old tag alone does not make a run due: every
    run would find it kept, and another would follow every schedule interval."""
    protected = {ref.snapshot_id for ref in metadata.refs.values() if ref.max_ref_age_ms is None}
    found = min((s.timestamp_ms for s in metadata.snapshots if s.snapshot_id not in protected), default=None)
    return None if found is None else datetime.fromtimestamp(found / 1000, UTC)


def duration(value: Any) -> timedelta:
    """A setting's ISO-8601 duration (validated when the policy was recorded)."""
    found = isodate.parse_duration(str(value))
    return found if isinstance(found, timedelta) else found.totimedelta(start=datetime(2000, 1, 1))


def small_file_bytes(settings: Mapping[str, Any]) -> int:
    return int(int(settings["target-file-size-bytes"]) * SMALL_FRACTION)


def enabled(settings: Mapping[str, Any]) -> bool:
    return settings.get("enabled") is True


def check_due(settings: Mapping[str, Any], last_checked: datetime | None, now: datetime,
              changed_at: datetime | None = None) -> bool:
    """Whether the table is to be checked again: never checked, checked a schedule interval ago, or something the
    decision depends on beyond the policy (``changed_at``: the warehouse's time-travel retention, for an expiry)
    changed after the last check."""
    if last_checked is None or last_checked + duration(settings["schedule-interval"]) <= now:
        return True
    return changed_at is not None and changed_at > last_checked


# a table no enabled action reaches is looked at again this late (a policy set meanwhile brings the look forward)
IDLE_RECHECK = timedelta(days=1)


def next_check(intervals: Mapping[str, tuple[Any, datetime | None]], now: datetime) -> datetime:
    """When the table is to be looked at next: the soonest of its enabled actions' last look plus schedule-interval
    (``intervals``: queue -> (schedule-interval, last look)), or IDLE_RECHECK from now when none is enabled."""
    times = [now if last is None else last + duration(interval) for interval, last in intervals.values()]
    return max(now, min(times)) if times else now + IDLE_RECHECK


def due_reason(policy_type: str, settings: Mapping[str, Any], figures: TableFigures, now: datetime,
               retention: timedelta | None = None) -> str | None:
    """Why the action is to run now (the trigger that holds, with the figures), or None when it is not. An expiry
    is not due while every snapshot is younger than the cutoff (``expiry_cutoff``: the policy's age or the
    warehouse's time-travel ``retention``), whatever their number: it could remove none of them."""
    if policy_type == DATA_COMPACTION:
        small, trigger = figures.small_files, int(settings["trigger-small-files"])
        if small > trigger and small >= int(settings["min-input-files"]):
            return (f"{small} of {figures.data_files} data files are smaller than {small_file_bytes(settings)} bytes "
                    f"(more than {trigger})")
        if settings.get("rewrite-position-deletes") and figures.delete_files >= int(settings["min-input-files"]):
            return f"{figures.delete_files} delete files"
        return None
    if policy_type == METADATA_COMPACTION:
        if figures.manifests > int(settings["trigger-manifests"]):
            return f"{figures.manifests} manifests (more than {settings['trigger-manifests']})"
        return None
    if policy_type == SNAPSHOT_EXPIRY:
        keep = int(settings["min-snapshots-to-keep"])
        oldest = figures.oldest_snapshot_at
        if figures.snapshots <= keep or oldest is None or oldest >= expiry_cutoff(settings, retention, now):
            return None
        if figures.snapshots > int(settings["trigger-snapshots"]):
            return f"{figures.snapshots} snapshots (more than {settings['trigger-snapshots']})"
        if oldest < now - duration(settings["max-snapshot-age"]):
            return f"snapshots older than {settings['max-snapshot-age']} (the oldest from {oldest.isoformat()})"
        return None
    if policy_type == ORPHAN_FILE_REMOVAL:
        return f"every {settings['schedule-interval']}"
    raise ValueError(f"unknown policy type {policy_type!r}")


def expiry_cutoff(settings: Mapping[str, Any], retention: timedelta | None, now: datetime) -> datetime:
    """Snapshots older than this may expire: the policy's age, or the warehouse's time-travel retention when that is
    longer (a catalog time travel within the retention must find its snapshots)."""
    age = duration(settings["max-snapshot-age"])
    if retention is not None and retention > age:
        age = retention
    return now - age


def orphan_cutoff(settings: Mapping[str, Any], now: datetime) -> datetime:
    """Files no metadata references and older than this are deleted; never younger than ORPHAN_AGE_FLOOR, whatever a
    policy recorded before the floor existed says."""
    return now - max(duration(settings["min-orphan-age"]), ORPHAN_AGE_FLOOR)
