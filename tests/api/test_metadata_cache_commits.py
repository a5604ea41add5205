"""A commit leaves only the table's new metadata file in the cache: the file it supersedes is what no commit builds
on and no load serves any more, and kept, it would push the files still in use out (with 50 tables of 140
snapshots committed in turn, every commit parsed its base again: 91 commits/s instead of 237)."""

import uuid
from pathlib import Path

from lakeledger.bootstrap import Container
from lakeledger.domain.provenance import Provenance
from lakeledger.services.tables import TableChange
from lakeledger.settings import Settings

SET = [{"action": "set-properties", "updates": {"k": "v"}}]


def test_a_commit_drops_the_file_it_supersedes_from_the_cache(client, warehouse, table_factory, pg_url, data_dir):
    table_factory("cache", "t")
    container = Container(Settings(pg_url=pg_url, data_dir=data_dir))
    try:
        by = Provenance(actor="test", request_id=str(uuid.uuid4()))
        [first] = container.tables.commit(warehouse["id"], [TableChange(("cache",), "t", [], SET)], by)
        assert container.files.response_body(first.metadata_location) is not None
        [second] = container.tables.commit(warehouse["id"], [TableChange(("cache",), "t", [], SET)], by)
        assert second.metadata_location != first.metadata_location
        assert container.files.response_body(second.metadata_location) is not None
        assert container.files.response_body(first.metadata_location) is None
        # the superseded file is still there to read; loads serve the new one
        assert Path(first.metadata_location.removeprefix("file://")).is_file()
        loaded = client.get(f"{warehouse['prefix']}/namespaces/cache/tables/t")
        assert loaded.json()["metadata-location"] == second.metadata_location
    finally:
        container.close()
