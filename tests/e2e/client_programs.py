"""The iceberg-go and iceberg-rust programs of tests/clients: both play one scenario against a catalog and print one
line per step, so both tests check the same transcript and the same events."""

import os
import subprocess
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parents[2]


def program(variable: str, default: str, make_target: str) -> Path:
    binary = Path(os.environ.get(variable, ROOT / default))
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `make {make_target}`")
    return binary


def run(binary: Path, catalog_uri: str, warehouse: str) -> list[str]:
    done = subprocess.run([str(binary), catalog_uri, warehouse], capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, (lines[-5:], done.stderr[-3000:])
    return lines


def log_position(pg_url: str) -> int:
    with psycopg.connect(pg_url) as conn:
        return conn.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]


def event_types_since(pg_url: str, position: int) -> list[str]:
    """The class names (`Table.Committed`, ...) of the events appended after ``position``, in log order."""
    with psycopg.connect(pg_url) as conn:
        # expiries and purges are the workers' own, on their own time (an earlier test's drop may be purged now)
        topics = [t for (t,) in conn.execute(
            "SELECT topic FROM lakeledger_events WHERE notification_id > %s AND topic NOT LIKE '%%.Expired'"
            " AND topic NOT LIKE '%%.Purged' AND topic NOT LIKE '%%.PurgeStarted' AND topic NOT LIKE '%%.PurgeFailed'"
            " ORDER BY notification_id", (position,))]
    return [topic.rsplit(":", 1)[-1] for topic in topics]


# what each program prints: "ok STEP" for a step that worked, "ok STEP ERROR" for a refusal it recognised, and what
# it read back (values sorted: a scan's row order is not defined)
EXPECTED_LINES = [
    "ok connect",
    "ok create-namespace",
    "ok create-nested-namespace",
    "ok create-namespace-again namespace already exists",
    "ok list-namespaces",
    "namespaces outer.inner level",
    "ok set-namespace-property",
    "ok remove-namespace-property",
    "ok load-namespace",
    'namespace-properties k=v owner=""',
    "ok partition-spec",
    "ok create-table",
    "partition-fields 2",
    "ok create-table-again table already exists",
    "ok arrow-data",
    "ok arrow-extra-row",
    "ok append",
    "ok load-stale-copy",
    "ok append-again",
    "ok append-from-stale-copy commit failed, refresh and try again",
    "ok load-table",
    "ok scan",
    "rows 4 snapshots 2",
    "names alpha,beta,delta,gamma",
    "amounts -5.00,0.01,12.34,99999999.99",
    "days 2023-12-31,2024-01-02,2024-01-03,2024-01-03",
    "ok evolve-schema",
    "ok commit-schema",
    "columns id,big,name,ts,amount,day,flag,note",
    "ok rename-table",
    "ok load-old-name table does not exist",
    "ok load-new-name",
    "renamed-columns 8",
    "ok list-tables",
    "tables outer.renamed",
    "ok drop-table",
    "ok drop-table-again table does not exist",
    "ok load-dropped table does not exist",
    "ok load-missing-namespace namespace does not exist",
    "ok drop-nested-namespace",
    "ok drop-namespace",
    "done",
]

# what the catalog recorded: each accepted change once, each refused one (the second create, the stale append, the
# drop of a dropped table) not at all
EXPECTED_EVENTS = [
    "NameClaim.Created", "Namespace.Created",  # outer
    "NameClaim.Created", "Namespace.Created",  # outer.inner level
    "Namespace.PropertiesUpdated", "Namespace.PropertiesUpdated",
    "NameClaim.Created", "Table.Created",
    "Table.Committed", "Table.Committed",  # two appends
    "Table.Committed",  # the schema change
    "NameClaim.Released", "NameClaim.Created", "Tabular.Renamed",
    "NameClaim.Released", "Tabular.Dropped",
    "NameClaim.Released", "Namespace.Dropped",
    "NameClaim.Released", "Namespace.Dropped",
]
