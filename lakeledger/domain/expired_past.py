"""A table's past after snapshot expiry, as catalog time travel answers it (docs/history.md, "Catalog time travel").

The metadata file a table pointed at then still lists every snapshot it had, but expiry (the catalog's maintenance,
or any engine's ``expire_snapshots``) has since deleted the manifest lists of those it removed: a client that took
the listing at its word would fail half-way through a scan on a missing file. So the past is answered as far as it
still exists: the snapshots the table has removed since are left out of the metadata (with the refs, snapshot-log
entries and statistics naming them), so reading one is the client's own "snapshot not found", as it is on the live
table; and a table whose then-current snapshot has been removed since cannot be read as it was at all (404)."""

from lakeledger.domain.errors import NoSuchTable
from lakeledger.domain.table_metadata import TableMetadata


def removed_since(past: TableMetadata, now: TableMetadata) -> set[int]:
    """The past's snapshots that the table's metadata of now no longer has (a snapshot id is never reused within a
    table's lineage, so one absent now was removed)."""
    return {s.snapshot_id for s in past.snapshots} - {s.snapshot_id for s in now.snapshots}


def as_it_still_exists(past: TableMetadata, removed: set[int], name: str) -> TableMetadata:
    """``past`` without the snapshots ``removed`` since; NoSuchTable when its current snapshot is one of them."""
    if not removed:
        return past
    if past.current_snapshot_id in removed:
        raise NoSuchTable(f"Table {name} cannot be read as it was then: its current snapshot "
                          f"{past.current_snapshot_id} has been expired since")
    return past.model_copy(update={
        "snapshots": [s for s in past.snapshots if s.snapshot_id not in removed],
        "refs": {ref_name: ref for ref_name, ref in past.refs.items() if ref.snapshot_id not in removed},
        "snapshot_log": [e for e in past.snapshot_log if e.snapshot_id not in removed],
        "statistics": [s for s in past.statistics if s.snapshot_id not in removed],
        "partition_statistics": [s for s in past.partition_statistics if s.snapshot_id not in removed],
    })
