from uuid import uuid4

import pytest

from lakeledger.domain.errors import AlreadyExists, BadRequest
from lakeledger.domain.name_claim import TABULAR, NameClaim
from lakeledger.domain.names import check_composed_name, check_name, check_namespace, check_new_name, claim_id
from lakeledger.domain.provenance import Provenance

BY = Provenance("alice", "req-1")


@pytest.mark.parametrize("name", ["orders", "with.dot", "with space", "ünïcødé", "日本"])
def test_names_that_round_trip_are_accepted(name):
    assert check_name(name, "Table") == name


@pytest.mark.parametrize("name", ["", "a\x1fb", "tab\there", "x" * 513, 42, None, "a\x00"])
def test_names_that_cannot_round_trip_are_refused(name):
    with pytest.raises(BadRequest):
        check_name(name, "Table")


def test_a_name_given_now_is_composed_and_a_lookup_is_of_the_name_as_sent():
    """NFD: one name, one spelling for what is created; an object an earlier version made under a decomposed name
    is still found by it."""
    decomposed = "cafe\u0301"
    for check in (check_composed_name, check_new_name):
        with pytest.raises(BadRequest):
            check(decomposed, "Table")
        assert check("caf\u00e9", "Table") == "caf\u00e9"
    assert check_name(decomposed, "Table") == decomposed


def test_namespace_must_be_a_non_empty_list():
    assert check_namespace(["a", "b"]) == ("a", "b")
    for bad in ([], "a", [""], ["a", None]):
        with pytest.raises(BadRequest):
            check_namespace(bad)


def test_claim_ids_are_deterministic_per_container_and_name():
    container = uuid4()
    assert claim_id(TABULAR, container, "t") == claim_id(TABULAR, container, "t")
    assert claim_id(TABULAR, container, "t") != claim_id(TABULAR, container, "u")
    assert claim_id(TABULAR, container, "t") != claim_id(TABULAR, uuid4(), "t")


def test_a_claimed_name_refuses_another_holder_until_released():
    first, second = uuid4(), uuid4()
    claim = NameClaim.first(TABULAR, uuid4(), "t", first, BY)
    with pytest.raises(AlreadyExists):
        claim.claim(second, "Table", BY)
    claim.release(first, BY)
    claim.claim(second, "Table", BY)
    assert claim.holder_id == second
    events = claim.collect_events()
    assert [type(e).__name__ for e in events] == ["Created", "Released", "Claimed"]
    assert all(e.actor == "alice" and e.request_id == "req-1" for e in events)


def test_releasing_by_someone_else_changes_nothing():
    holder = uuid4()
    claim = NameClaim.first(TABULAR, uuid4(), "t", holder, BY)
    claim.collect_events()
    claim.release(uuid4(), BY)
    assert claim.holder_id == holder and claim.collect_events() == []


def test_a_refused_claim_names_the_whole_identifier():
    claim = NameClaim.first(TABULAR, uuid4(), "orders", uuid4(), BY)
    with pytest.raises(AlreadyExists, match=r"^Table already exists: sales\.orders$"):
        claim.claim(uuid4(), "Table", BY, "sales.orders")
    with pytest.raises(AlreadyExists, match=r"^Table already exists: orders$"):
        claim.claim(uuid4(), "Table", BY)
