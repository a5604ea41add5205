"""Where tables and views live in a warehouse, and where their metadata files go: inside the warehouse, and
never at, below or above the location of another live table or view (one purge must not reach another's files)."""

from uuid import UUID

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.storage_profile import FullHierarchyLayout, check_no_dot_segments, is_within, normalize_location
from lakeledger.services import resolve
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.unit_of_work import Ledger


def new_location(ledger: Ledger, wh: WarehouseSettings, requested: str | None, ns: Namespace,
                 tabular_id: UUID, name: str) -> str:
    """The location of a new table or view, normalised (the form overlap checks compare): the one the client
    asked for, or the warehouse's default."""
    if requested:
        return checked_location(ledger, wh, requested, tabular_id)
    location = default_location(ledger, wh, ns, tabular_id, name)
    _check_no_overlap(ledger, wh, location, tabular_id)
    return location


def default_location(ledger: Ledger, wh: WarehouseSettings, ns: Namespace, tabular_id: UUID, name: str) -> str:
    """Where the warehouse puts a table or view whose client names no location (its storage layout decides)."""
    profile = wh.profile()
    chain: tuple[tuple[str, UUID], ...] = ()
    if isinstance(profile.storage_layout, FullHierarchyLayout):
        # the id of every level from the top: only this layout names them, so only it pays for the lookups
        path = tuple(ns.path)
        chain = tuple((path[i], resolve.namespace(ledger, wh, path[:i + 1]).id) for i in range(len(path) - 1))
        chain += ((path[-1], ns.id),)
    return profile.default_table_location(ns.id, tabular_id, chain, name)


def checked_location(ledger: Ledger, wh: WarehouseSettings, location: str, tabular_id: UUID) -> str:
    location = wh.profile().check_tabular_location(location)
    _check_no_overlap(ledger, wh, location, tabular_id)
    return location


def _check_no_overlap(ledger: Ledger, wh: WarehouseSettings, location: str, tabular_id: UUID) -> None:
    other = ledger.queries.overlapping_tabular(wh.id, location, tabular_id)
    if other is not None:
        raise BadRequest(f"Location {location} overlaps the location of another table or view: {other}")


def metadata_file_location(wh: WarehouseSettings, proposed: str) -> str:
    """``proposed``, spelt as it is (clients compare what they wrote with what they read back), once its
    normalised form is found inside the warehouse."""
    if not is_within(check_no_dot_segments(normalize_location(proposed)), wh.profile().base_location()):
        raise BadRequest(f"Metadata location {proposed} is not inside the warehouse")
    return proposed


def check_namespace_location(wh: WarehouseSettings, properties: dict[str, str] | None) -> None:
    """A namespace's own ``location`` property, if it is given one, by the rules of a table's location (it may be
    the warehouse itself): engines place tables below it. Stored as spelt; only checked."""
    if properties and "location" in properties:
        wh.profile().check_location(properties["location"])
