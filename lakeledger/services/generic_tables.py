"""Use cases of generic tables (domain/generic_table.py): create and drop; the rename, the name checks and the life
after a drop are every tabular's (services/tabulars.py), with GENERIC_KIND saying where generic tables differ.

A generic table shares its namespace's one name space with tables and views: a Lance table and an Iceberg table
cannot have one name."""

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.provenance import Provenance
from lakeledger.services.tabulars import Placement, TabularKind, TabularService, in_namespace


@dataclass(frozen=True)
class GenericTableState:
    """What a create answers: the new table's id and location (where its engines write)."""

    id: UUID
    location: str


GENERIC_KIND = TabularKind(
    aggregate=GenericTable,
    # as Lakekeeper: a generic table in a namespace that does not exist is missing
    missing_namespace_is_missing_object=True,
    rename_destination_first=False,
    drop_checks_name=True,
    # a drop may ask for its files to go (Lakekeeper's purgeRequested); the catalog only knows its location
    purgeable=True,
    rename_lost_race="Generic table already exists: {destination}",
)


class GenericTableService(TabularService[GenericTable]):
    kind = GENERIC_KIND

    def create(self, warehouse_id: str, namespace: list[str], name: str, base_location: str | None,
               description: dict[str, Any], by: Provenance) -> GenericTableState:
        """``description``: format, doc, properties, schema and statistics as the request gave them. The location
        is placed as a table's is (inside the warehouse, overlapping no other tabular's)."""

        def make(new: Placement) -> GenericTableState:
            claim = self.tabulars.claim(new.wh, new.ns, new.levels, new.name, new.id, by)
            table = GenericTable.create(new.id, new.wh.id, new.ns.id, new.levels, new.name, new.location,
                                        description, by)
            self.ledger.append(claim, table, conditions=in_namespace(new.ns, new.levels))
            return GenericTableState(new.id, new.location)

        return self.tabulars.create(warehouse_id, namespace, name, base_location, make)

    def drop(self, warehouse_id: str, namespace: list[str], name: str, purge_requested: bool | None, force: bool,
             by: Provenance) -> None:
        """Soft in a warehouse with a soft delete profile (restorable from the recycle bin until expiry)."""
        self.tabulars.drop(warehouse_id, namespace, name, purge_requested, force, by)
