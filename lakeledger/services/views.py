"""Use cases of Iceberg views: create, replace (commit), drop, rename, register; what views do as tables do is
services/tabulars.py's, with VIEW_KIND saying where views differ.

Views share their namespace's name space with tables (one name claim per name, whichever kind holds
it). A replace is atomic like a table commit: it builds on the view's current metadata and appends
at the view's next version; when another writer got there first it is re-run against the winning
state, so its requirements are checked again and no replace is lost."""

from dataclasses import dataclass
from typing import Any

from pyiceberg.view.metadata import ViewMetadata

from lakeledger.domain import view_metadata as vm
from lakeledger.domain.errors import AlreadyExists, BadRequest
from lakeledger.domain.names import check_name, check_namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_profile import normalize_location
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.view import View
from lakeledger.services import placement, resolve
from lakeledger.services.conditions import Condition
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.tabulars import Placement, Registration, TabularKind, TabularService, in_namespace
from lakeledger.storage import Storage


@dataclass(frozen=True)
class ViewState:
    """What a client receives after a create, replace or register: where the metadata is, and its bytes."""

    metadata_location: str
    metadata: bytes


VIEW_KIND = TabularKind(
    aggregate=View,
    missing_namespace_is_missing_object=True,
    rename_destination_first=True,  # the order of Iceberg's reference catalog, so clients see the same first error
    drop_checks_name=True,
    purgeable=False,
    rename_lost_race="Cannot rename {source} to {destination}. Table or view already exists",
)


class ViewService(TabularService[View]):
    kind = VIEW_KIND

    # -- create -------------------------------------------------------------------------------

    def create(self, warehouse_id: str, namespace: list[str], request: Any, raw: dict[str, Any],
               by: Provenance) -> ViewState:
        def make(new: Placement) -> ViewState:
            # the metadata keeps the location as the client spelt it (clients compare it with what they
            # sent); the catalog's own records and checks use the normalised form
            metadata = vm.new_view(new.id, new.spelt_location, request.view_schema, request.view_version,
                                   request.properties)
            metadata_location = self._metadata_location(new.wh, metadata, None)
            claim = self.tabulars.claim(new.wh, new.ns, new.levels, new.name, new.id, by)
            view = View.create(new.id, new.wh.id, new.ns.id, new.levels, new.name, new.location, metadata_location,
                               raw, by)
            data = self._write_and_append(new.wh, metadata_location, metadata, [claim, view],
                                          in_namespace(new.ns, new.levels))
            return ViewState(metadata_location, data)

        return self.tabulars.create(warehouse_id, namespace, request.name, request.location, make)

    # -- replace ------------------------------------------------------------------------------

    def replace(self, warehouse_id: str, namespace: list[str], name: str, requirements_raw: list[Any],
                updates_raw: list[Any], by: Provenance) -> ViewState:
        levels = check_namespace(namespace)
        name = check_name(name, "View")
        requirements = vm.parse_requirements(requirements_raw)
        updates = vm.parse_updates(updates_raw)

        def command() -> ViewState:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            _, view = self.tabulars.live(wh, levels, name)
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

    # -- drop, register (a rename is TabularService's) ----------------------------------------

    def drop(self, warehouse_id: str, namespace: list[str], name: str, force: bool, by: Provenance) -> None:
        self.tabulars.drop(warehouse_id, namespace, name, None, force, by)

    def register(self, warehouse_id: str, namespace: list[str], name: str, metadata_location: str,
                 raw: dict[str, Any], by: Provenance) -> ViewState:
        def adopt(found: Registration) -> ViewState:
            metadata = vm.parse(found.data)
            self.tabulars.ensure_name_free(found.wh, found.ns, found.name)
            view_id = vm.view_id(metadata)
            known = self.ledger.log.get(Tabular, view_id)
            if known is not None and not isinstance(known, View):
                raise AlreadyExists(f"A table or view with uuid {view_id} is already registered")
            if known is not None:
                known.ensure_registrable()
            location = placement.checked_location(self.ledger, found.wh, metadata.location, view_id)
            claim = self.tabulars.claim(found.wh, found.ns, found.levels, found.name, view_id, by)
            if known is None:
                view = View.create(view_id, found.wh.id, found.ns.id, found.levels, found.name, location,
                                   found.metadata_location, raw, by)
            else:  # a dropped view, registered back from one of its own metadata files
                view = known
                view.register_again(found.wh.id, found.ns.id, found.levels, found.name, location,
                                    found.metadata_location, raw, by)
            self.ledger.append(claim, view, conditions=in_namespace(found.ns, found.levels))
            return ViewState(found.metadata_location, found.data)

        return self.tabulars.register(warehouse_id, namespace, name, metadata_location, adopt)

    # -- helpers ------------------------------------------------------------------------------

    def _parsed(self, location: str, storage: Storage) -> ViewMetadata:
        # Parsed afresh (views are small and replaced rarely); only the bytes are shared with the
        # metadata cache, which keeps parsed *table* metadata and must never hold a view's.
        return vm.parse(self.files.data(location, storage))

    def _metadata_location(self, wh: WarehouseSettings, metadata: ViewMetadata, previous: str | None) -> str:
        return placement.metadata_file_location(wh, vm.next_metadata_location(metadata, previous))

    def _write_and_append(self, wh: WarehouseSettings, location: str, metadata: ViewMetadata, aggregates: list[Any],
                          conditions: list[Condition]) -> bytes:
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
