"""Use cases of Iceberg views: create, replace (commit), drop, rename, register.

Views share their namespace's name space with tables (one name claim per name, whichever kind holds
it). A replace is atomic like a table commit: it builds on the view's current metadata and appends
at the view's next version; when another writer got there first it is re-run against the winning
state, so its requirements are checked again and no replace is lost."""

from dataclasses import dataclass
from typing import Any
from uuid import uuid4

from pyiceberg.view.metadata import ViewMetadata

from lakeledger.domain import deletion
from lakeledger.domain import view_metadata as vm
from lakeledger.domain.errors import AlreadyExists, BadRequest, NoSuchNamespace, NoSuchView
from lakeledger.domain.name_claim import TABULAR
from lakeledger.domain.names import check_name, check_namespace, check_new_name, dotted
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_profile import normalize_location
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.view import View
from lakeledger.services import placement, resolve
from lakeledger.services.approval import proposed_drop
from lakeledger.services.conditions import namespace_exists
from lakeledger.services.metadata_files import MetadataFiles
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage import Storage, Storages


@dataclass(frozen=True)
class ViewState:
    """What a client receives after a create, replace or register: where the metadata is, and its bytes."""

    metadata_location: str
    metadata: bytes


class ViewService:
    def __init__(self, ledger: Ledger, files: MetadataFiles, storages: Storages):
        self.ledger = ledger
        self.files = files
        self.storages = storages

    # -- create -------------------------------------------------------------------------------

    def create(self, warehouse_id: str, namespace: list[str], request: Any, raw: dict, by: Provenance) -> ViewState:
        levels = check_namespace(namespace)
        name = check_new_name(request.name, "View")

        def command() -> ViewState:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            self._check_name_free(ns, name)
            view_id = uuid4()
            location = placement.new_location(self.ledger, wh, request.location, ns.id, view_id)
            # the metadata keeps the location as the client spelt it (clients compare it with what they
            # sent); the catalog's own records and checks use the normalised form
            metadata = vm.new_view(view_id, _as_spelt(request.location) or location, request.view_schema,
                                   request.view_version, request.properties)
            metadata_location = self._metadata_location(wh, metadata, None)
            claim = self.ledger.claim(TABULAR, ns.id, name, view_id, "View", by, dotted([*levels, name]))
            view = View.create(view_id, wh.id, ns.id, levels, name, location, metadata_location, raw, by)
            data = self._write_and_append(wh, metadata_location, metadata, [claim, view],
                                          [namespace_exists(ns.id, dotted(levels))])
            return ViewState(metadata_location, data)

        return self.ledger.retrying(command, AlreadyExists, f"View already exists: {dotted([*levels, name])}")

    # -- replace ------------------------------------------------------------------------------

    def replace(self, warehouse_id: str, namespace: list[str], name: str, requirements_raw: list, updates_raw: list,
                by: Provenance) -> ViewState:
        levels = check_namespace(namespace)
        name = check_name(name, "View")
        requirements = vm.parse_requirements(requirements_raw)
        updates = vm.parse_updates(updates_raw)

        def command() -> ViewState:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            _, view = self._view_at(wh, levels, name)
            storage = self.storages.of(wh)
            base = self._parsed(view.metadata_location, storage)
            metadata = vm.apply_replace(base, requirements, updates)
            if metadata is None:  # nothing changed: no new file, no event
                return ViewState(view.metadata_location, self.files.data(view.metadata_location, storage))
            location = view.location
            if normalize_location(metadata.location) != view.location:
                location = placement.checked_location(self.ledger, wh, metadata.location, view.id)
            metadata_location = self._metadata_location(wh, metadata, view.metadata_location)
            view.replace(requirements_raw, updates_raw, metadata_location, by, location=location)
            data = self._write_and_append(wh, metadata_location, metadata, [view], [])
            return ViewState(metadata_location, data)

        return self.ledger.retrying(command)

    # -- drop, rename, register ---------------------------------------------------------------

    def drop(self, warehouse_id: str, namespace: list[str], name: str, force: bool, by: Provenance) -> None:
        levels = check_namespace(namespace)
        name = check_name(name, "View")

        def command() -> None:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns, view = self._view_at(wh, levels, name)
            expires_at = deletion.expiry(wh.delete_profile, self.ledger.now())
            view.drop(False, expires_at, force, by)  # a view has no data files; its metadata files stay
            self.ledger.approval.review(proposed_drop(view, by, expires_at=expires_at))
            claim = self.ledger.release(TABULAR, ns.id, name, view.id, by)
            self.ledger.append(claim, view)

        self.ledger.retrying(command)

    def rename(self, warehouse_id: str, source: tuple[list[str], str], destination: tuple[list[str], str],
               by: Provenance) -> None:
        src_levels, src_name = check_namespace(source[0]), check_name(source[1], "View")
        dst_levels, dst_name = check_namespace(destination[0]), check_new_name(destination[1], "View")
        cannot = f"Cannot rename {dotted([*src_levels, src_name])} to {dotted([*dst_levels, dst_name])}."

        def command() -> None:
            # checked in the order of Iceberg's reference catalog, so clients see the same first error
            wh = resolve.warehouse(self.ledger, warehouse_id)
            dst_ns = resolve.namespace(self.ledger, wh, dst_levels)
            src_ns, view = self._view_at(wh, src_levels, src_name)
            # the view itself holds it when renamed onto its own name
            kind = resolve.holder_kind(self.ledger, dst_ns, dst_name)
            if kind is not None:
                raise AlreadyExists(f"{cannot} {kind} already exists")
            new_claim = self.ledger.claim(TABULAR, dst_ns.id, dst_name, view.id, "View", by,
                                         dotted([*dst_levels, dst_name]))
            old_claim = self.ledger.release(TABULAR, src_ns.id, src_name, view.id, by)
            view.rename(dst_ns.id, dst_levels, dst_name, by)
            self.ledger.append(old_claim, new_claim, view,
                               conditions=[namespace_exists(dst_ns.id, dotted(dst_levels))])

        self.ledger.retrying(command, AlreadyExists, f"{cannot} Table or view already exists")

    def register(self, warehouse_id: str, namespace: list[str], name: str, metadata_location: str, raw: dict,
                 by: Provenance) -> ViewState:
        levels = check_namespace(namespace)
        name = check_new_name(name, "View")

        def command() -> ViewState:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            location_of_file = placement.metadata_file_location(wh, metadata_location)
            storage = self.storages.of(wh)
            metadata = self._parsed(location_of_file, storage)
            data = self.files.data(location_of_file, storage)
            self._check_name_free(ns, name)
            view_id = vm.view_id(metadata)
            if self.ledger.log.get(Tabular, view_id) is not None:
                raise AlreadyExists(f"A table or view with uuid {view_id} is already registered")
            location = placement.checked_location(self.ledger, wh, metadata.location, view_id)
            claim = self.ledger.claim(TABULAR, ns.id, name, view_id, "View", by, dotted([*levels, name]))
            view = View.create(view_id, wh.id, ns.id, levels, name, location, location_of_file, raw, by)
            self.ledger.append(claim, view, conditions=[namespace_exists(ns.id, dotted(levels))])
            return ViewState(location_of_file, data)

        return self.ledger.retrying(command, AlreadyExists, f"View already exists: {dotted([*levels, name])}")

    # -- helpers ------------------------------------------------------------------------------

    def _check_name_free(self, ns: Namespace, name: str) -> None:
        """409 when a table or a view holds the name, in the words of Iceberg's catalogs, which Java
        clients and the REST compatibility kit read."""
        kind = resolve.holder_kind(self.ledger, ns, name)
        if kind == "Table":
            raise AlreadyExists(f"Table with same name already exists: {dotted([*ns.path, name])}")
        if kind == "View":
            raise AlreadyExists(f"View already exists: {dotted([*ns.path, name])}")

    def _view_in(self, ns: Namespace, name: str) -> View:
        found = resolve.tabular(self.ledger, View, ns, name)
        if found is None:
            raise NoSuchView(f"View does not exist: {dotted([*ns.path, name])}")
        return found

    def _view_at(self, wh: WarehouseSettings, levels: tuple[str, ...], name: str) -> tuple[Namespace, View]:
        """The live view and its namespace. A missing namespace means a missing view here, as in Iceberg's
        reference server (Java clients raise NoSuchViewException for both)."""
        try:
            ns = resolve.namespace(self.ledger, wh, levels)
        except NoSuchNamespace:
            raise NoSuchView(f"View does not exist: {dotted([*levels, name])}") from None
        return ns, self._view_in(ns, name)

    def _parsed(self, location: str, storage: Storage) -> ViewMetadata:
        # Parsed afresh (views are small and replaced rarely); only the bytes are shared with the
        # metadata cache, which keeps parsed *table* metadata and must never hold a view's.
        return vm.parse(self.files.data(location, storage))

    def _metadata_location(self, wh: WarehouseSettings, metadata: ViewMetadata, previous: str | None) -> str:
        return placement.metadata_file_location(wh, vm.next_metadata_location(metadata, previous))

    def _write_and_append(self, wh: WarehouseSettings, location: str, metadata: ViewMetadata, aggregates: list[Any],
                          conditions: list) -> bytes:
        """The metadata file is written before the event that points at it, so a pointer in the log
        never names a missing file; the file of a replace that then loses its race is removed."""
        storage = self.storages.of(wh)
        data = vm.serialize(metadata)
        try:
            storage.write_new(location, data)
        except FileExistsError:
            raise BadRequest(f"Metadata file already exists: {location}") from None
        try:
            self.ledger.append(*aggregates, conditions=conditions)
        except BaseException:
            storage.delete(location)
            raise
        return data


def _as_spelt(location: str | None) -> str | None:
    """A requested location as the client wrote it, less a trailing slash (metadata paths are joined to it)."""
    return location.rstrip("/") if location else None
