"""A table loaded at a past catalog position (lakeledger/api/time_travel.py), as far as its past still exists: its
metadata file of then, less the snapshots the table has removed since (lakeledger/domain/expired_past.py)."""

from lakeledger.domain.expired_past import as_it_still_exists, removed_since
from lakeledger.domain.table_metadata import serialize
from lakeledger.services.metadata_files import (
    REFS_SNAPSHOTS,
    MetadataFiles,
    load_result_body,
    referenced_snapshots_only,
)
from lakeledger.storage import Storage


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
    metadata = as_it_still_exists(past, removed, name)
    if snapshots == REFS_SNAPSHOTS:
        metadata = referenced_snapshots_only(metadata)
    covered = past_location + "#without:" + ",".join(str(s) for s in sorted(removed))
    return load_result_body(past_location, serialize(metadata)), covered
