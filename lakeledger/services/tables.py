"""Use cases of Iceberg tables: create, commit (one table or a transaction of several), drop, rename, register;
what tables do as views do is services/tabulars.py's, with TABLE_KIND saying where tables differ."""

import logging
from dataclasses import dataclass
from typing import Any
from uuid import UUID, uuid4

from pyiceberg.table.update import SetLocationUpdate, UpgradeFormatVersionUpdate

from lakeledger.domain import table_metadata as tm
from lakeledger.domain.errors import AlreadyExists, InvalidArgument, NoSuchNamespace, NoSuchTable
from lakeledger.domain.names import check_name, check_namespace, dotted, name_key, path_key
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_profile import is_within, normalize_location
from lakeledger.domain.table import (
    CREATED_BY_COMMIT,
    CREATED_BY_REGISTRATION,
    CREATED_BY_REQUEST,
    Table,
)
from lakeledger.domain.table_changes import TableRequirement, TableUpdate
from lakeledger.domain.table_metadata import TableMetadata
from lakeledger.services import placement, resolve
from lakeledger.services.approval import proposed_commit
from lakeledger.services.conditions import Condition
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.tabulars import Placement, Registration, TabularKind, TabularService, in_namespace

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableState:
    """What a client receives after a create, commit or load: where the metadata is, and its bytes."""

    metadata_location: str | None
    metadata: bytes
    table_id: UUID | None = (
        None  # with location: what the engine is given access to (lakeledger/services/table_access.py)
    )
    location: str | None = None
    # a create's or a register's: the warehouse as the command found it, whose storage the answer gives access to
    warehouse: WarehouseSettings | None = None


@dataclass(frozen=True)
class TableChange:
    namespace: tuple[str, ...]
    name: str
    requirements_raw: list[Any]
    updates_raw: list[Any]


@dataclass
class _Staged:
    """One table's part of a commit. ``table`` is None when the change leaves the table as it is: nothing is
    written or appended for it, and the client gets the current metadata back."""

    table: Table | None
    claim: Any
    metadata: TableMetadata
    metadata_location: str
    conditions: list[Condition]
    base: TableMetadata | None = None
    base_location: str | None = None  # the metadata file this commit supersedes


TABLE_KIND = TabularKind(
    aggregate=Table,
    missing_namespace_is_missing_object=False,
    rename_destination_first=False,
    drop_checks_name=False,
    purgeable=True,
    rename_lost_race="Table already exists: {destination}",
)


class TableService(TabularService[Table]):
    kind = TABLE_KIND

    # -- create -------------------------------------------------------------------------------

    def create(self, warehouse_id: str, namespace: list[str], request: Any, raw: dict[str, Any],
               by: Provenance) -> TableState:
        def make(new: Placement) -> TableState:
            # the metadata keeps the location as the client spelt it; the catalog compares the normalised form
            metadata = tm.new_metadata(request.table_schema, request.partition_spec, request.write_order,
                                       new.spelt_location, _with_format_version(request.properties, new.wh), new.id)
            self.storages.of(new.wh).prepare_table_location(new.location)
            if request.stage_create:
                return TableState(None, tm.serialize(metadata), new.id, new.location, new.wh)
            metadata_location = self._metadata_location(new.wh, metadata, None)
            claim = self.tabulars.claim(new.wh, new.ns, new.levels, new.name, new.id, by)
            table = Table.create(new.id, new.wh.id, new.ns.id, new.levels, new.name, new.location, metadata_location,
                                 CREATED_BY_REQUEST, raw, by)
            data = self._write_and_append(new.wh, [(metadata_location, metadata, None)], [claim, table],
                                          in_namespace(new.ns, new.levels))
            return TableState(metadata_location, data[0], new.id, new.location, new.wh)

        return self.tabulars.create(warehouse_id, namespace, request.name, request.location, make)

    # -- commit -------------------------------------------------------------------------------

    def commit(self, warehouse_id: str, changes: list[TableChange], by: Provenance) -> list[TableState]:
        """Commits changes to one or more tables atomically: all are applied or none."""
        if not changes:
            raise InvalidArgument("Invalid table changes: empty")
        seen = set()
        for change in changes:
            key = (change.namespace, change.name)
            if key in seen:
                raise InvalidArgument(
                    f"Table {dotted([*change.namespace, change.name])} appears twice in one commit")
            seen.add(key)
        parsed = [(c, tm.parse_requirements(c.requirements_raw), tm.parse_updates(c.updates_raw)) for c in changes]

        def command() -> list[TableState]:
            hint = None
            if len(changes) == 1:  # the usual commit: its warehouse and table found in one query
                only = changes[0]
                wh, hint = resolve.warehouse_and_tabular(self.ledger, warehouse_id,
                                                         check_namespace(list(only.namespace)),
                                                         check_name(only.name, "Table"))
            else:
                wh = resolve.warehouse(self.ledger, warehouse_id)
                _named_once(changes, wh.name_matching)
            staged = [self._stage(wh, change, requirements, updates, by, hint)
                      for change, requirements, updates in parsed]
            changed = [s for s in staged if s.table is not None]
            if changed:
                self._write_and_append(wh, [(s.metadata_location, s.metadata, s.base) for s in changed],
                                       [a for s in changed for a in (s.claim, s.table)],
                                       [c for s in changed for c in s.conditions])
                self._retire_metadata_files(wh, changed)
                for s in changed:
                    if s.base_location is not None:
                        # what commits build on and loads serve is the new file: the old one's parsed form and
                        # bytes would only push the tables still in use out of the cache
                        self.files.forget(s.base_location)
            storage = self.storages.of(wh)
            return [TableState(s.metadata_location, self.files.data(s.metadata_location, storage)) for s in staged]

        return self.ledger.retrying(command)

    def _stage(self, wh: WarehouseSettings, change: TableChange, requirements: list[TableRequirement],
               updates: list[TableUpdate], by: Provenance, hint: resolve.TabularHint | None = None) -> _Staged:
        levels = check_namespace(list(change.namespace))
        name = check_name(change.name, "Table")
        for update in updates:  # only upgrades: a tightened policy never blocks writes to a table that exists
            if isinstance(update, UpgradeFormatVersionUpdate):
                wh.format_versions.ensure_allowed(update.format_version)
        table = self._live_table(wh, levels, name, hint)
        if table is None:
            ns = resolve.namespace(self.ledger, wh, levels)
            if not tm.is_create(requirements):
                raise NoSuchTable(f"Table does not exist: {dotted([*levels, name])}")
            return self._stage_create(wh, ns, name, change, requirements, updates, by)
        storage = self.storages.of(wh)
        base = self.files.parsed(table.metadata_location, storage)
        metadata = tm.apply_commit(base, table.metadata_location, requirements, updates)
        if metadata is base:
            return _Staged(None, None, base, table.metadata_location, [])
        # compared normalised, as the table's location is kept: an s3a:// table is not checked again on every
        # commit, so it stays writable after its warehouse stops accepting s3a:// for new tables (as in Lakekeeper)
        location = (
            placement.checked_location(self.ledger, wh, metadata.location, table.id)
            if normalize_location(metadata.location) != table.location
            else table.location
        )
        metadata_location = self._metadata_location(wh, metadata, table.metadata_location)
        self.ledger.approval.review(proposed_commit(table, by, change.requirements_raw, change.updates_raw))
        base_location = table.metadata_location
        table.commit(change.requirements_raw, change.updates_raw, metadata_location, location, by)
        return _Staged(table, None, metadata, metadata_location, [], base, base_location)

    def _live_table(self, wh: WarehouseSettings, levels: tuple[str, ...], name: str,
                    hint: resolve.TabularHint | None = None) -> Table | None:
        """The table a commit names. The read model finds it in one query (the hot path; ``hint`` when the
        caller has asked already) and the log confirms it; should the two ever disagree, the name claims in the
        log decide."""
        if hint is None:
            hint = resolve.TabularHint(self.ledger.queries.tabular_id(wh.id, levels, name), None)
        table = self.ledger.log.get(Table, hint.id, hint.version) if hint.id else None
        matching = wh.name_matching
        if (table is not None and not table.dropped
                and path_key(table.namespace, matching) == path_key(levels, matching)
                and name_key(table.name, matching) == name_key(name, matching)):
            return table
        try:
            ns = resolve.namespace(self.ledger, wh, levels)
        except NoSuchNamespace:
            return None
        return resolve.tabular(self.ledger, wh, Table, ns, name)

    def _stage_create(self, wh: WarehouseSettings, ns: Namespace, name: str, change: TableChange,
                      requirements: list[TableRequirement], updates: list[TableUpdate], by: Provenance) -> _Staged:
        self.tabulars.ensure_name_free(wh, ns, name)  # a view may hold it
        table_id = tm.assigned_uuid(updates) or uuid4()
        if self.ledger.log.get(Table, table_id) is not None:
            raise AlreadyExists(f"A table with uuid {table_id} already exists")
        if not any(isinstance(u, SetLocationUpdate) for u in updates):
            updates = [SetLocationUpdate(location=placement.default_location(self.ledger, wh, ns, table_id, name)),
                       *updates]
        metadata = tm.apply_commit(None, None, requirements, updates)
        if metadata.table_uuid != table_id:
            raise InvalidArgument("A created table needs exactly one assign-uuid update")
        location = placement.checked_location(self.ledger, wh, metadata.location, table_id)
        self.storages.of(wh).prepare_table_location(location)
        metadata_location = self._metadata_location(wh, metadata, None)
        claim = self.tabulars.claim(wh, ns, tuple(ns.path), name, table_id, by)
        table = Table.create(table_id, wh.id, ns.id, tuple(ns.path), name, location, metadata_location,
                             CREATED_BY_COMMIT, {"requirements": change.requirements_raw,
                                                 "updates": change.updates_raw}, by)
        return _Staged(table, claim, metadata, metadata_location, in_namespace(ns, tuple(ns.path)))

    # -- drop, register (a rename is TabularService's) ----------------------------------------

    def drop(self, warehouse_id: str, namespace: list[str], name: str, purge_requested: bool | None, force: bool,
             by: Provenance) -> None:
        """Soft in a warehouse with a soft delete profile (the files stay until expiry), final in a hard one.
        ``purge_requested`` None (the client did not say) follows the warehouse's drop-purge-default."""
        self.tabulars.drop(warehouse_id, namespace, name, purge_requested, force, by)

    def unregister(self, warehouse_id: str, namespace: list[str], name: str, by: Provenance) -> TableState:
        """Takes the table out of the catalog and leaves every file in place (unregisterTable); its last metadata
        file and metadata are the answer, so that another catalog can register it."""
        levels, name = check_namespace(namespace), check_name(name, "Table")

        def unregister(wh: WarehouseSettings, table: Table) -> dict[str, Any]:
            table.unregister(by)
            return {"purge_requested": False, "expires_at": None, "unregister": True}

        table = self.tabulars.remove(warehouse_id, levels, name, unregister, by)
        wh = resolve.warehouse(self.ledger, warehouse_id)
        data = self.files.data(table.metadata_location, self.storages.of(wh))
        return TableState(table.metadata_location, data, table.id, table.location)

    def register(self, warehouse_id: str, namespace: list[str], name: str, metadata_location: str,
                 overwrite: bool, raw: dict[str, Any], by: Provenance) -> TableState:
        def adopt(found: Registration) -> TableState:
            wh, ns, levels, name = found.wh, found.ns, found.levels, found.name
            location_of_file = found.metadata_location
            metadata = self.files.parsed(location_of_file, found.storage)
            table_id = metadata.table_uuid
            self.tabulars.ensure_name_free(wh, ns, name, unless_held_by_own_kind=True)
            existing = resolve.tabular(self.ledger, wh, Table, ns, name)
            if existing is not None:
                if not overwrite:
                    raise AlreadyExists(self.tabulars.taken_message(levels, name))
                if existing.id != table_id:
                    raise AlreadyExists("Cannot overwrite a table with metadata of another table (uuid differs)")
                location = placement.checked_location(self.ledger, wh, metadata.location, table_id)
                existing.commit([], [], location_of_file, location, by)
                self.ledger.append(existing)
                return TableState(location_of_file, found.data, table_id, location, wh)
            table = self.ledger.log.get(Table, table_id)
            if table is not None and not table.dropped:
                raise AlreadyExists(f"A table with uuid {table_id} is already registered: {table.identifier}")
            location = placement.checked_location(self.ledger, wh, metadata.location, table_id)
            claim = self.tabulars.claim(wh, ns, levels, name, table_id, by)
            if table is None:
                table = Table.create(table_id, wh.id, ns.id, levels, name, location, location_of_file,
                                     CREATED_BY_REGISTRATION, raw, by)
            else:  # a dropped table, registered back from one of its own metadata files
                table.register_again(wh.id, ns.id, levels, name, location, location_of_file, raw, by)
            self.ledger.append(claim, table, conditions=in_namespace(ns, levels))
            return TableState(location_of_file, found.data, table_id, location, wh)

        return self.tabulars.register(warehouse_id, namespace, name, metadata_location, adopt)

    # -- helpers ------------------------------------------------------------------------------

    def _retire_metadata_files(self, wh: WarehouseSettings, committed: list[_Staged]) -> None:
        """Deletes the metadata files that a commit's metadata log no longer lists, when the table asks for it
        (``write.metadata.delete-after-commit.enabled``), as Iceberg's own catalogs do: after the event that
        moved the table on is appended, and only files inside the table's own location."""
        storage = self.storages.of(wh)
        for s in committed:
            assert s.table is not None  # only what changed is committed
            for location in tm.retired_metadata_files(s.base, s.metadata):
                if not is_within(normalize_location(location), s.table.location):
                    continue
                self.files.forget(location)
                try:
                    storage.delete(location)
                except Exception:  # the commit stands; a file left behind is only litter
                    logger.warning("Could not delete retired metadata file %s", location, exc_info=True)

    def _metadata_location(self, wh: WarehouseSettings, metadata: TableMetadata, previous: str | None) -> str:
        return placement.metadata_file_location(wh, tm.next_metadata_location(metadata, previous))

    def _write_and_append(self, wh: WarehouseSettings, files: list[tuple[str, TableMetadata, TableMetadata | None]],
                          aggregates: list[Any], conditions: list[Condition]) -> list[bytes]:
        """Metadata files are written before the events that point at them, so a pointer in the log
        never names a missing file; files of a commit that then loses its race are removed."""
        storage = self.storages.of(wh)
        written: list[tuple[str, bytes]] = []
        try:
            for location, metadata, base in files:
                written.append((location, self.files.write(location, metadata, storage, base)))
            self.ledger.append(*aggregates, conditions=conditions)
        except BaseException:
            for location, _ in written:
                self.files.forget(location)
                storage.delete(location)
            raise
        return [data for _, data in written]


def _named_once(changes: list[TableChange], matching: str) -> None:
    """Refuses a commit that names one table twice under the warehouse's matching (in two cases, when it is
    case-insensitive): both changes would be staged from one base and the second would lose to the first."""
    seen = set()
    for change in changes:
        key = (tuple(path_key(change.namespace, matching)), name_key(change.name, matching))
        if key in seen:
            raise InvalidArgument(f"Table {dotted([*change.namespace, change.name])} appears twice in one commit")
        seen.add(key)


def _with_format_version(properties: dict[str, str], wh: resolve.WarehouseSettings) -> dict[str, str]:
    """A create's properties held to the warehouse's format-version policy: a version it names must be allowed, and
    one that names none gets the policy's default (v2, the catalog's own, unless the policy says otherwise)."""
    policy = wh.format_versions
    named = properties.get("format-version")
    if named is None:
        default = policy.resolved_default()
        return properties if default == tm.DEFAULT_FORMAT_VERSION else {**properties, "format-version": str(default)}
    try:
        version = int(str(named).removeprefix("v"))
    except ValueError:
        return properties  # the metadata's own checks refuse it
    policy.ensure_allowed(version)
    return properties
