"""A table loaded at a past catalog position (lakeledger/api/time_travel.py), as far as its past still exists: its
metadata file of then, less the snapshots the table has removed since (lakeledger/domain/expired_past.py)."""

from lakeledger.domain.expired_past import as_it_still_exists, removed_since
from lakeledger.domain.table_metadata import TableMetadata, serialize
from lakeledger.services.metadata_files import (
    REFS_SNAPSHOTS,
    MetadataFiles,
    load_result_body,
    referenced_snapshots_only,
)
from lakeledger.storage import Storage


def metadata(files: MetadataFiles, storage: Storage, past_location: str, latest_location: str | None,
             name: str) -> TableMetadata:
    """The metadata a read of the past works on (scan planning's, as loadTable's): the file of then, less the
    snapshots removed since; NoSuchTable when the then-current one is among them."""
    past = files.parsed(past_location, storage)
    if latest_location is None or latest_location == past_location:
        return past
    return as_it_still_exists(past, removed_since(past, files.parsed(latest_location, storage)), name)


def load_body(files: MetadataFiles, storage: Storage, past_location: str, latest_location: str | None,
              snapshots: str, name: str) -> tuple[bytes, str]:
    """The LoadTableResult for the table whose metadata was at ``past_location`` then and is at ``latest_location``
    now (None: not known), and what its ETag is to cover: the location, and which snapshots were left out (the
    answer for one past position changes when an expiry removes more of it)."""
    if latest_location is None or latest_location == past_location:
        return files.load_response_body(past_location, storage, snapshots), past_location
    past = files.parsed(past_location, storage)
    removed = removed_since(past, files.parsed(latest_location, storage))
    if not removed:
        return files.load_response_body(past_location, storage, snapshots), past_location
    served = as_it_still_exists(past, removed, name)
    if snapshots == REFS_SNAPSHOTS:
        served = referenced_snapshots_only(served)
    covered = past_location + "#without:" + ",".join(str(s) for s in sorted(removed))
    return load_result_body(past_location, serialize(served)), covered
