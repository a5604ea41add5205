"""What a table's current metadata says for the maintenance triggers: its snapshots, its data files (how many are
small), its delete files and its manifests. Read with pyiceberg over the warehouse's storage, the catalog's own
credential (lakeledger/storage/iceberg_io.py): a check reads the manifest list and the manifests of the current
snapshot once, no data file."""

from pyiceberg.manifest import ManifestContent

from lakeledger.domain.maintenance_triggers import TableFigures, oldest_expirable_at
from lakeledger.domain.table_metadata import TableMetadata
from lakeledger.storage.base import Storage
from lakeledger.storage.iceberg_io import StorageFileIO


def table_figures(metadata: TableMetadata, storage: Storage, small_bytes: int) -> TableFigures:
    snapshots = list(metadata.snapshots)
    oldest_at = oldest_expirable_at(metadata)
    current = metadata.current_snapshot()
    if current is None:
        return TableFigures(len(snapshots), oldest_at, 0, 0, 0, 0)
    io = StorageFileIO(storage)
    manifests = current.manifests(io)
    data_files = small = delete_files = 0
    for manifest in manifests:
        entries = manifest.fetch_manifest_entry(io, discard_deleted=True)
        if manifest.content == ManifestContent.DATA:
            data_files += len(entries)
            small += sum(1 for e in entries if e.data_file.file_size_in_bytes < small_bytes)
        else:
            delete_files += len(entries)
    return TableFigures(len(snapshots), oldest_at, data_files, small, delete_files, len(manifests))
