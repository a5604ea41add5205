"""The private parts of pyiceberg (pinned: 0.12.0) that table and view metadata rely on, imported here and nowhere
else. Each says why no public API serves; ``RELIED_ON`` lists them for tests/unit/test_compat.py, which checks them
against the installed pyiceberg. Pure: nothing here does I/O."""

from typing import TypeVar, cast

from pyiceberg.catalog import MetastoreCatalog
from pyiceberg.table.metadata import TableMetadata, TableMetadataV1, TableMetadataV2, TableMetadataV3
from pyiceberg.table.update import (
    TableUpdate,
    _apply_table_update,
    _TableMetadataUpdateContext,
    _update_table_metadata_log,
)

from lakeledger.domain.private_api import PrivateApi, Subclass

PYICEBERG = "pyiceberg"

# table metadata of one format, pyiceberg's model of it or a subclass (lakeledger/domain/metadata_v3.py)
M = TypeVar("M", bound=TableMetadataV1 | TableMetadataV2 | TableMetadataV3)

# pyiceberg's record of the updates a commit applied so far, which its rules read (``is_added_snapshot``, ...);
# lakeledger/domain/table_changes.py extends it (CommitContext). Public only inside ``update_table_metadata``.
UpdateContext = _TableMetadataUpdateContext


def apply_table_update(update: TableUpdate, metadata: TableMetadata, context: UpdateContext) -> TableMetadata:
    """pyiceberg's rule for one update. Public only as ``update_table_metadata``, which applies them all and then
    deep-copies the whole metadata: that copy grows with every snapshot and dominated commit time; the catalog
    applies the rules one by one (lakeledger/domain/table_metadata.py) and adds its own in between."""
    return _apply_table_update(update, metadata, context)


def with_metadata_log_entry(metadata: M, previous_location: str, last_updated_ms: int) -> M:
    """``metadata`` with the previous metadata file appended to its metadata log, trimmed to
    ``write.metadata.previous-versions-max``: the step of ``update_table_metadata`` that comes with its deep copy.
    pyiceberg declares any metadata as its result; it is a ``model_copy`` of ``metadata``, so of its class."""
    return cast(M, _update_table_metadata_log(metadata, previous_location, last_updated_ms))


def empty_table_metadata() -> TableMetadataV1:
    """What pyiceberg's own catalogs build a table from when a commit creates it (``assert-create``): no public
    function hands it out, and its shape (v1, last-column-id -1) is what the create updates and the final
    validation expect. pyiceberg declares any metadata as its result; it builds a v1 (tests/unit/test_compat.py)."""
    return cast(TableMetadataV1, MetastoreCatalog._empty_table_metadata())


def metadata_file_version(location: str) -> int:
    """The version number of a metadata file named as pyiceberg's catalogs name them (``00001-<uuid>.metadata.json``),
    -1 for any other name: the public ``new_table_metadata_file_location`` takes the next number, nothing public
    reads it back."""
    return MetastoreCatalog._parse_metadata_version(location)


RELIED_ON = (
    PrivateApi(PYICEBERG, "pyiceberg.table.update:_apply_table_update", "(update, base_metadata, context)",
               "each update's rule without update_table_metadata's closing deep copy"),
    PrivateApi(PYICEBERG, "pyiceberg.table.update:_update_table_metadata_log",
               "(base_metadata, metadata_location, last_updated_ms)",
               "the metadata-log step of update_table_metadata, without its deep copy"),
    PrivateApi(PYICEBERG, "pyiceberg.table.update:_TableMetadataUpdateContext.__init__", "(self)",
               "CommitContext (lakeledger/domain/table_changes.py) is constructed without arguments"),
    PrivateApi(PYICEBERG, "pyiceberg.table.update:_TableMetadataUpdateContext.add_update", "(self, update)",
               "the catalog's own rules record the updates they applied, as pyiceberg's do"),
    PrivateApi(PYICEBERG, "pyiceberg.table.update:_TableMetadataUpdateContext.has_changes", "(self)",
               "a commit whose updates changed nothing owes no new metadata file"),
    PrivateApi(PYICEBERG, "pyiceberg.catalog:MetastoreCatalog._empty_table_metadata", "()",
               "the metadata a creating commit's updates are applied to"),
    PrivateApi(PYICEBERG, "pyiceberg.catalog:MetastoreCatalog._parse_metadata_version", "(metadata_location)",
               "the next metadata file's number, as pyiceberg's catalogs count"),
)

SUBCLASSES = (
    Subclass(PYICEBERG, "pyiceberg.table.update:_TableMetadataUpdateContext",
             "lakeledger.domain.table_changes:CommitContext", ("last_added", "_added", "added", "reused", "resolve"),
             "what -1 means in set-current-schema and its kin, which pyiceberg does not resolve as Java does"),
)
