"""Name claims in a case-insensitive warehouse (the tier's warehouses are new, so case-insensitive): a claim is the
name's key's (lakeledger/domain/names.py), so two names that differ only in case meet on one claim, and one of two
racing creators wins; the claim keeps the spelling it was first taken with; a rename that changes only the case
keeps the claim (no claim event at all); a drop through another case releases it."""

from uuid import UUID

import pytest

from lakeledger.domain.errors import AlreadyExists
from lakeledger.domain.name_claim import TABULAR, NameClaim
from lakeledger.domain.names import CASE_INSENSITIVE, claim_id, name_key
from lakeledger.domain.table import Table


def _claim(catalog, container_id: UUID, name: str) -> NameClaim | None:
    return catalog.services.log.get(NameClaim, claim_id(TABULAR, container_id, name_key(name, CASE_INSENSITIVE)))


def test_a_create_racing_one_in_another_case_loses_on_the_same_claim(catalog, interleave):
    ns = catalog.namespace("Sales")
    winner = []
    interleave(catalog.services.ledger, lambda: winner.append(catalog.table("sales", "ORDERS", on=catalog.rival)))
    start = catalog.head()

    with pytest.raises(AlreadyExists, match=r"^Table already exists: Sales\.Orders$"):
        catalog.table("SALES", "Orders")

    [won] = winner
    assert catalog.kinds_after(start) == ["NameClaim.Created", "Table.Created"]
    claim = _claim(catalog, ns, "orders")
    assert claim is not None and claim.holder_id == won.table_id and claim.name == "ORDERS"
    assert catalog.loaded_table("Sales", "Orders")[0] == won.table_id
    assert catalog.listed("Sales", "table") == ["ORDERS"]


def test_a_rename_that_changes_only_the_case_keeps_the_claim(catalog):
    ns = catalog.namespace("Sales")
    table = catalog.table("Sales", "orders")
    start = catalog.head()
    catalog.services.tables.rename(catalog.warehouse_id, (["SALES"], "ORDERS"), (["sales"], "Orders"), catalog.by)
    assert catalog.kinds_after(start) == ["Tabular.Renamed"]
    claim = _claim(catalog, ns, "ORDERS")
    assert claim is not None and claim.holder_id == table.table_id
    assert catalog.listed("Sales", "table") == ["Orders"]
    # the table's namespace is recorded as spelt, not as the rename's request spelt it
    renamed = catalog.services.log.get(Table, table.table_id)
    assert (list(renamed.namespace), renamed.name) == (["Sales"], "Orders")


def test_a_drop_through_another_case_releases_the_claim(catalog):
    ns = catalog.namespace("Sales")
    table = catalog.table("Sales", "Orders")
    start = catalog.head()
    catalog.services.tables.drop(catalog.warehouse_id, ["sales"], "ORDERS", None, False, catalog.by)
    assert sorted(catalog.kinds_after(start)) == ["NameClaim.Released", "Tabular.Dropped"]
    claim = _claim(catalog, ns, "orders")
    assert claim is not None and claim.holder_id is None
    again = catalog.table("SALES", "orders")
    assert again.table_id != table.table_id
    assert _claim(catalog, ns, "Orders").holder_id == again.table_id
