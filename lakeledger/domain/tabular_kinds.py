"""Which kind of tabular an event created, for the projections that keep tables, views and generic tables side by
side and name the kind in a column (the read model's ``typ``, authorization's object type)."""

from typing import Any

from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.tabular import GENERIC_TABLE, TABLE, VIEW
from lakeledger.domain.view import View


def created_kind(e: Any) -> str:
    """"table", "view" or "generic-table" for a Tabular.Created, or a Table.Registered or View.Registered."""
    if isinstance(e, GenericTable.Created):
        return GENERIC_TABLE
    return VIEW if isinstance(e, (View.Created, View.Registered)) else TABLE
