"""The folding rule of names (lakeledger/domain/names.py ``name_key``): pure, so claims, read models and lookups
derive the same key from the same name."""

from lakeledger.domain.names import CASE_INSENSITIVE, EXACT, claim_id, name_key, path_key


def test_exact_keys_are_the_names_themselves():
    for name in ("Sales", "sales", "Straße", "e\u0301"):
        assert name_key(name, EXACT) == name


def test_case_insensitive_keys_fold_case_fully_and_composition():
    assert name_key("Sales", CASE_INSENSITIVE) == name_key("SALES", CASE_INSENSITIVE) == "sales"
    assert name_key("Straße", CASE_INSENSITIVE) == name_key("STRASSE", CASE_INSENSITIVE)  # full case folding
    assert name_key("Ǆ", CASE_INSENSITIVE) == name_key("ǆ", CASE_INSENSITIVE)  # titlecase digraphs too
    assert name_key("E\u0301", CASE_INSENSITIVE) == name_key("é", CASE_INSENSITIVE)  # decomposed = composed
    assert name_key("a b", CASE_INSENSITIVE) != name_key("ab", CASE_INSENSITIVE)
    assert path_key(("Sales", "EU"), CASE_INSENSITIVE) == ["sales", "eu"]


def test_names_that_differ_only_in_case_meet_on_one_claim_when_case_insensitive():
    import uuid
    container = uuid.uuid4()
    one, other = (claim_id("tabular", container, name_key(n, CASE_INSENSITIVE)) for n in ("Orders", "ORDERS"))
    assert one == other
    assert claim_id("tabular", container, name_key("Orders", EXACT)) != claim_id("tabular", container, "ORDERS")
    # a claim taken before keys existed (its id from the name itself) is the exact key's claim
    assert claim_id("tabular", container, name_key("Orders", EXACT)) == claim_id("tabular", container, "Orders")
