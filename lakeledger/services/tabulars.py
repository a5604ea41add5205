"""What tables and views do alike, as domain/tabular.py holds what they are alike: a name in their namespace's one
name space (checked, claimed, released), a place in the warehouse, and the create, register, rename and drop built
around them. A ``TabularKind`` says where the two kinds differ; ``TabularService`` is what the table and the view
service are built on. Each kind's own work (a table's metadata and commits, a view's versions) stays in
services/tables.py and services/views.py, which hand it to ``create`` and ``register`` as the step that makes the
new object."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from uuid import UUID, uuid4

from lakeledger.domain import deletion
from lakeledger.domain.errors import AlreadyExists, NoSuchNamespace, NotFound
from lakeledger.domain.name_claim import TABULAR, NameClaim
from lakeledger.domain.names import check_name, check_namespace, check_new_name, dotted, name_key
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.warehouse import PURGE
from lakeledger.services import placement, resolve
from lakeledger.services.approval import proposed_drop
from lakeledger.services.conditions import Condition, namespace_exists
from lakeledger.services.metadata_files import MetadataFiles
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage import Storage, Storages

T = TypeVar("T", bound=Tabular)
Answer = TypeVar("Answer")  # what a create or a register answers: a TableState, a ViewState


@dataclass(frozen=True)
class TabularKind(Generic[T]):
    """How one kind of tabular differs from the other in the work they share. The answers each kind gives follow
    Iceberg's reference catalog, which Java clients and the REST compatibility kit read (pinned by
    tests/api/test_tabular_errors.py)."""

    aggregate: type[T]
    # a missing namespace answers as a missing object of this kind (a view: Java's loadView raises
    # NoSuchViewException for both) rather than as a missing namespace (a table)
    missing_namespace_is_missing_object: bool
    # a rename looks up the destination namespace before the source (a view), or after it (a table)
    rename_destination_first: bool
    # a drop checks the name it is given by the rules of names (a view: 400 for a name none could have); a table's
    # drop looks the name up as given (404)
    drop_checks_name: bool
    # its drop may purge data files (a table); a view has none, and its metadata files stay
    purgeable: bool
    # what a rename answers when it keeps losing its race for the destination name ({source}, {destination})
    rename_lost_race: str

    @property
    def word(self) -> str:
        """The kind as messages and name claims spell it: Table, View, Generic table."""
        return self.aggregate.word

    def missing(self, path: tuple[str, ...] | list[str], name: str) -> NotFound:
        return self.aggregate.not_found(f"{self.word} does not exist: {dotted([*path, name])}")


@dataclass(frozen=True)
class NewName:
    """Where a table or view about to be created or registered is named: its warehouse, its namespace (as found and
    as the request named it) and its name."""

    wh: WarehouseSettings
    ns: Namespace
    levels: tuple[str, ...]
    name: str


@dataclass(frozen=True)
class Placement(NewName):
    """A new table or view: its new id and its location, normalised (what the catalog records and compares) and as
    the client spelt it (what its metadata keeps)."""

    id: UUID
    location: str
    spelt_location: str


@dataclass(frozen=True)
class Registration(NewName):
    """A metadata file to register: where it is (inside the warehouse) and its bytes."""

    metadata_location: str
    storage: Storage
    data: bytes


class Tabulars(Generic[T]):
    """The create, register, rename and drop of one kind of tabular, and the name checks and claims they make."""

    def __init__(self, ledger: Ledger, files: MetadataFiles, storages: Storages, kind: TabularKind[T]):
        self.ledger = ledger
        self.files = files
        self.storages = storages
        self.kind = kind

    # -- create, register ---------------------------------------------------------------------

    def create(self, warehouse_id: str, namespace: list[str], name: str, requested_location: str | None,
               make: Callable[[Placement], Answer]) -> Answer:
        """Checks the name, finds the namespace, refuses a name held already and places the new object; ``make``
        writes its metadata and appends it (claiming the name with ``claim``)."""
        levels = check_namespace(namespace)
        name = check_new_name(name, self.kind.word)

        def command() -> Answer:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            self.ensure_name_free(wh, ns, name)
            tabular_id = uuid4()
            location = placement.new_location(self.ledger, wh, requested_location, ns, tabular_id, name)
            # the namespace as it is spelt (in a case-insensitive warehouse the request may spell it otherwise)
            return make(Placement(wh, ns, tuple(ns.path), name, tabular_id, location,
                                  as_spelt(requested_location) or location))

        return self.ledger.retrying(command, AlreadyExists, self.taken_message(levels, name))

    def register(self, warehouse_id: str, namespace: list[str], name: str, metadata_location: str,
                 adopt: Callable[[Registration], Answer]) -> Answer:
        """Checks the name, finds the namespace and reads the metadata file, which must lie inside the warehouse;
        ``adopt`` checks the name is free (the file is read first, so a bad file is the answer even when the name
        is taken) and appends the object."""
        levels = check_namespace(namespace)
        name = check_new_name(name, self.kind.word)

        def command() -> Answer:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            location_of_file = placement.metadata_file_location(wh, metadata_location)
            storage = self.storages.of(wh)
            data = self.files.data(location_of_file, storage)
            return adopt(Registration(wh, ns, tuple(ns.path), name, location_of_file, storage, data))

        return self.ledger.retrying(command, AlreadyExists, self.taken_message(levels, name))

    def taken_message(self, levels: tuple[str, ...], name: str) -> str:
        return f"{self.kind.word} already exists: {dotted([*levels, name])}"

    # -- rename, drop -------------------------------------------------------------------------

    def rename(self, warehouse_id: str, source: tuple[list[str], str], destination: tuple[list[str], str],
               by: Provenance) -> None:
        word = self.kind.word
        src_levels, src_name = check_namespace(source[0]), check_name(source[1], word)
        dst_levels, dst_name = check_namespace(destination[0]), check_new_name(destination[1], word)
        src, dst = dotted([*src_levels, src_name]), dotted([*dst_levels, dst_name])

        def command() -> None:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            if self.kind.rename_destination_first:
                dst_ns = resolve.namespace(self.ledger, wh, dst_levels)
                src_ns, tabular = self.live(wh, src_levels, src_name)
            else:
                src_ns, tabular = self.live(wh, src_levels, src_name)
                dst_ns = resolve.namespace(self.ledger, wh, dst_levels)
            matching = wh.name_matching
            # a change of case only, in a case-insensitive warehouse: the object keeps its claim, under a new spelling
            respelt = dst_ns.id == src_ns.id and name_key(dst_name, matching) == name_key(tabular.name, matching)
            # otherwise the object itself holds it when renamed onto its own name
            taken = None if respelt else resolve.holder_kind(self.ledger, wh, dst_ns, dst_name)
            if taken is not None:
                raise AlreadyExists(f"Cannot rename {src} to {dst}. {taken} already exists")
            if respelt:
                if dst_name == tabular.name:
                    raise AlreadyExists(f"Cannot rename {src} to {dst}. {self.kind.word} already exists")
                claims: list[NameClaim | None] = []
            else:
                claims = [self.ledger.release(TABULAR, src_ns.id, src_name, tabular.id, by, matching),
                          self.ledger.claim(TABULAR, dst_ns.id, dst_name, tabular.id, word, by, dst, matching)]
            dst_path = tuple(dst_ns.path)  # as spelt, whatever the request's case
            tabular.rename(dst_ns.id, dst_path, dst_name, by)
            self.ledger.append(*claims, tabular, conditions=in_namespace(dst_ns, dst_path))

        self.ledger.retrying(command, AlreadyExists, self.kind.rename_lost_race.format(source=src, destination=dst))

    def drop(self, warehouse_id: str, namespace: list[str], name: str, purge_requested: bool | None, force: bool,
             by: Provenance) -> None:
        """Soft in a warehouse with a soft delete profile (restorable until expiry), final in a hard one.
        ``purge_requested`` None (the client did not say) follows the warehouse's drop-purge-default; it is ignored
        for a kind that is not purgeable."""
        levels = check_namespace(namespace)
        if self.kind.drop_checks_name:
            name = check_name(name, self.kind.word)

        def drop(wh: WarehouseSettings, tabular: T) -> dict[str, Any]:
            expires_at = deletion.expiry(wh.delete_profile, self.ledger.now())
            options: dict[str, Any] = {}
            purge = False
            if self.kind.purgeable:
                purge = purge_requested if purge_requested is not None else wh.drop_purge_default == PURGE
                options["purge_requested"] = purge
            tabular.drop(purge, expires_at, force, by)  # refuses a protected one first
            return {**options, "expires_at": expires_at}

        self.remove(warehouse_id, levels, name, drop, by)

    def remove(self, warehouse_id: str, levels: tuple[str, ...], name: str,
               change: Callable[[WarehouseSettings, T], dict[str, Any]], by: Provenance) -> T:
        """Takes the live object named ``levels.name`` out of the catalog: ``change`` records how on it (a drop, an
        unregister) and says the options the approval review sees; the name is released with it. Returns the
        object as it was taken out."""
        def command() -> T:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns, tabular = self.live(wh, levels, name)
            options = change(wh, tabular)
            self.ledger.approval.review(proposed_drop(tabular, by, **options))
            claim = self.ledger.release(TABULAR, ns.id, name, tabular.id, by, wh.name_matching)
            self.ledger.append(claim, tabular)
            return tabular

        return self.ledger.retrying(command)

    # -- names --------------------------------------------------------------------------------

    def live(self, wh: WarehouseSettings, levels: tuple[str, ...], name: str) -> tuple[Namespace, T]:
        """The live object of this kind named ``levels.name`` and its namespace, or the kind's 404."""
        try:
            ns = resolve.namespace(self.ledger, wh, levels)
        except NoSuchNamespace:
            if self.kind.missing_namespace_is_missing_object:
                raise self.kind.missing(levels, name) from None
            raise
        found = resolve.tabular(self.ledger, wh, self.kind.aggregate, ns, name)
        if found is None:
            raise self.kind.missing(ns.path, name)
        return ns, found

    def ensure_name_free(self, wh: WarehouseSettings, ns: Namespace, name: str,
                         unless_held_by_own_kind: bool = False) -> None:
        """409 when a table or a view holds ``name`` in ``ns`` (tables and views share one name space), in the words
        of Iceberg's catalogs: "<Kind> already exists" for a holder of this kind, "<Kind> with same name already
        exists" for one of the other."""
        holder = resolve.holder_kind(self.ledger, wh, ns, name)
        if holder is None or (unless_held_by_own_kind and holder == self.kind.word):
            return
        if holder == self.kind.word:
            raise AlreadyExists(f"{holder} already exists: {dotted([*ns.path, name])}")
        raise AlreadyExists(f"{holder} with same name already exists: {dotted([*ns.path, name])}")

    def claim(self, wh: WarehouseSettings, ns: Namespace, levels: tuple[str, ...], name: str, tabular_id: UUID,
              by: Provenance) -> NameClaim:
        """The name claim a new object of this kind takes (AlreadyExists when another holds it)."""
        return self.ledger.claim(TABULAR, ns.id, name, tabular_id, self.kind.word, by, dotted([*levels, name]),
                                 wh.name_matching)


class TabularService(Generic[T]):
    """What the table and the view service are built on: the core for their kind, and the rename, the same for
    both."""

    kind: TabularKind[T]

    def __init__(self, ledger: Ledger, files: MetadataFiles, storages: Storages):
        self.ledger = ledger
        self.files = files
        self.storages = storages
        self.tabulars = Tabulars(ledger, files, storages, self.kind)

    def rename(self, warehouse_id: str, source: tuple[list[str], str], destination: tuple[list[str], str],
               by: Provenance) -> None:
        self.tabulars.rename(warehouse_id, source, destination, by)


def in_namespace(ns: Namespace, levels: tuple[str, ...]) -> list[Condition]:
    """The append condition of an object created in ``ns``: the namespace is still there."""
    return [namespace_exists(ns.id, levels)]


def as_spelt(location: str | None) -> str | None:
    """A requested location as the client wrote it, less a trailing slash (metadata paths are joined to it)."""
    return location.rstrip("/") if location else None
