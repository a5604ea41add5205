"""Governance tags' races (lakeledger/services/tags.py), made by another writer between a command's reads and its
append: a name taken meanwhile in another case, a table dropped while it is being tagged, a tag attached while its
definition is being deleted. Each is refused as the state that won says, and nothing of the loser is appended."""

import json
import uuid
from uuid import UUID

import pytest

from lakeledger.domain.errors import NoSuchTable
from lakeledger.domain.project import DEFAULT_PROJECT_ID
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tag import TagDefinitionInUse, TagNameAlreadyExists

RIVAL = Provenance("rival", "move")


def _name() -> str:
    return f"svc.{uuid.uuid4().hex[:8]}"


def _define(on, name: str, scope: list[str], by: Provenance) -> UUID:
    return on.tags.create(DEFAULT_PROJECT_ID, name, None, scope, "marker", None, by)


def test_a_name_taken_in_another_case_meanwhile_is_refused(catalog, interleave):
    name = _name()
    interleave(catalog.services.ledger, lambda: _define(catalog.rival, name.upper(), ["table"], RIVAL))
    head = catalog.head()
    with pytest.raises(TagNameAlreadyExists):
        _define(catalog.services, name, ["table"], catalog.by)
    assert catalog.kinds_after(head) == ["NameClaim.Created", "TagDefinition.Created"]  # the rival's alone


def test_a_table_dropped_while_it_is_tagged_is_not_tagged(catalog, interleave):
    name = _name()
    _define(catalog.services, name, ["table"], catalog.by)
    catalog.namespace("ns")
    table_id = UUID(json.loads(catalog.table("ns", "t").metadata)["table-uuid"])
    warehouse_id = UUID(catalog.warehouse_id)
    interleave(catalog.services.ledger,
               lambda: catalog.rival.tables.drop(catalog.warehouse_id, ["ns"], "t", None, False, RIVAL))
    head = catalog.head()
    with pytest.raises(NoSuchTable):
        catalog.services.tags.apply(warehouse_id, ("table", table_id, None), name, None, catalog.by)
    assert "TagDefinition.Applied" not in catalog.kinds_after(head)


def test_a_tag_attached_while_its_definition_is_deleted_keeps_it(catalog, interleave):
    name = _name()
    definition_id = _define(catalog.services, name, ["warehouse"], catalog.by)
    warehouse_id = UUID(catalog.warehouse_id)
    interleave(catalog.services.ledger, lambda: catalog.rival.tags.apply(
        warehouse_id, ("warehouse", warehouse_id, None), name, None, RIVAL))
    head = catalog.head()
    with pytest.raises(TagDefinitionInUse):
        catalog.services.tags.delete(DEFAULT_PROJECT_ID, definition_id, catalog.by)
    assert catalog.kinds_after(head) == ["TagDefinition.Applied"]
    assert not catalog.services.tags.definition(DEFAULT_PROJECT_ID, definition_id).deleted
