"""The log hands out deep copies of its cached aggregates, which commands then change: a copy must equal its
original and share nothing that can change in place."""

import uuid
from copy import deepcopy

from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table import Table


def _table() -> Table:
    table = Table(id=uuid.uuid4(), warehouse_id=uuid.uuid4(), namespace_id=uuid.uuid4(), namespace=["a", "b"],
                  name="t", location="file:///w/t", metadata_location="file:///w/t/metadata/0.json",
                  origin="created", request={"name": "t"}, actor="ana", request_id="r-1")
    table.collect_events()
    return table


def test_a_copy_equals_its_original():
    table = _table()
    copied = deepcopy(table)
    assert type(copied) is Table and vars(copied) == vars(table)


def test_a_copy_shares_nothing_mutable():
    table = _table()
    copied = deepcopy(table)
    assert copied.namespace is not table.namespace and copied.deletion is not table.deletion
    assert copied._pending_events is not table._pending_events
    copied.namespace.append("c")
    copied.commit([], [], "file:///w/t/metadata/1.json", "file:///w/t", Provenance(actor="ana", request_id="r-2"))
    assert table.namespace == ["a", "b"] and table.metadata_location == "file:///w/t/metadata/0.json"
    assert table.version == 1 and copied.version == 2
    assert not table.collect_events() and len(copied.collect_events()) == 1
