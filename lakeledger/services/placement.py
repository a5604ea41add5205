"""Where tables and views live in a warehouse, and where their metadata files go: inside the warehouse, and
never at, below or above the location of another live table or view (one purge must not reach another's files)."""

from uuid import UUID

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_profile import check_no_dot_segments, is_within, normalize_location
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.unit_of_work import Ledger


def new_location(ledger: Ledger, wh: WarehouseSettings, requested: str | None, namespace_id: UUID,
                 tabular_id: UUID) -> str:
    """The location of a new table or view, normalised (the form overlap checks compare): the one the client
    asked for, or the warehouse's default."""
    if requested:
        return checked_location(ledger, wh, requested, tabular_id)
    location = wh.profile().default_table_location(namespace_id, tabular_id)
    _check_no_overlap(ledger, wh, location, tabular_id)
    return location


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
