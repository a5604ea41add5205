"""A maintenance run's Spark SQL: which of Iceberg's procedures it calls with which arguments, and the figures it
reports from their results. Pure, so the statements a policy leads to are tested without Spark."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from lakeledger.domain.maintenance_policy import (
    DATA_COMPACTION,
    METADATA_COMPACTION,
    ORPHAN_FILE_REMOVAL,
    SNAPSHOT_EXPIRY,
)
from lakeledger.domain.maintenance_triggers import expiry_cutoff, orphan_cutoff

ORPHANS = "remove_orphan_files"


@dataclass(frozen=True)
class Call:
    """One procedure call: its name (how its result is read) and its statement."""

    procedure: str
    sql: str


def _literal(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def table_argument(identifier: list[str]) -> str:
    """The ``table`` argument: the namespace's levels and the name, each quoted (a name may hold dots)."""
    return _literal(".".join("`" + part.replace("`", "``") + "`" for part in identifier))


def _timestamp(at: datetime) -> str:
    return "TIMESTAMP " + _literal(at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f"))


def _options(options: Mapping[str, Any]) -> str:
    return "map(" + ", ".join(f"{_literal(k)}, {_literal(str(v))}" for k, v in options.items()) + ")"


def calls(policy_type: str, settings: Mapping[str, Any], identifier: list[str], catalog: str, now: datetime,
          retention: timedelta | None = None) -> list[Call]:
    """What a run of ``policy_type`` with the effective ``settings`` calls on the table ``identifier``."""
    table = table_argument(identifier)

    def call(procedure: str, arguments: str) -> Call:
        return Call(procedure, f"CALL {catalog}.system.{procedure}(table => {table}{arguments})")

    if policy_type == DATA_COMPACTION:
        found = [call("rewrite_data_files", ", options => " + _options({
            "target-file-size-bytes": settings["target-file-size-bytes"],
            "min-input-files": settings["min-input-files"],
            # a group whose commit conflicts with a concurrent writer's is dropped, the others kept
            "partial-progress.enabled": "true"}))]
        if settings.get("rewrite-position-deletes"):
            found.append(call("rewrite_position_delete_files", ", options => " + _options({
                "min-input-files": settings["min-input-files"]})))
        return found
    if policy_type == METADATA_COMPACTION:
        return [call("rewrite_manifests", "")]
    if policy_type == SNAPSHOT_EXPIRY:
        return [call("expire_snapshots", f", older_than => {_timestamp(expiry_cutoff(settings, retention, now))}, "
                                         f"retain_last => {int(settings['min-snapshots-to-keep'])}")]
    if policy_type == ORPHAN_FILE_REMOVAL:
        # listed with the table's own FileIO (the catalog's vended credentials), not Hadoop's file systems, which
        # would need storage credentials of their own
        return [call(ORPHANS, f", older_than => {_timestamp(orphan_cutoff(settings, now))}, prefix_listing => true")]
    raise ValueError(f"unknown policy type {policy_type!r}")


def figures(procedure: str, rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """What a procedure's result rows say: orphan removal lists the files it deleted (counted); the others answer
    counts, summed over their rows."""
    found: dict[str, int] = {}
    if procedure == ORPHANS:
        return {"orphan_files_deleted": sum(1 for _ in rows)}
    for row in rows:
        for name, value in row.items():
            if isinstance(value, int) and not isinstance(value, bool):
                found[name] = found.get(name, 0) + value
    return found
