"""Immutable table properties (lakeledger/domain/table_metadata.py IMMUTABLE_TABLE_PROPERTIES): once a table has an
`encryption.key-id`, no commit may change or remove it. Refused as Lakekeeper refuses it (400
ImmutablePropertyModification / ImmutablePropertyRemoval) and nothing is appended, also when the offending change is
one of several in a multi-table transaction."""

from support import SCHEMA

KEY_ID = "encryption.key-id"


def _create(client, prefix, name, properties=None):
    client.post(f"{prefix}/namespaces", json={"namespace": ["enc"]})
    r = client.post(f"{prefix}/namespaces/enc/tables",
                    json={"name": name, "schema": SCHEMA, "properties": properties or {}})
    assert r.status_code == 200, r.text
    return f"{prefix}/namespaces/enc/tables/{name}"


def _set(**properties):
    return {"action": "set-properties", "updates": properties}


def _remove(*keys):
    return {"action": "remove-properties", "removals": list(keys)}


def _commit(client, table, *updates):
    return client.post(table, json={"requirements": [], "updates": list(updates)})


def _properties(client, table):
    r = client.get(table)
    assert r.status_code == 200, r.text
    return r.json()["metadata"]["properties"]


def _refused(r, error_type, message):
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert (error["type"], error["code"], error["message"]) == (error_type, 400, message)


def test_a_tables_encryption_key_id_can_neither_change_nor_go(client, warehouse, log_length):
    table = _create(client, warehouse["prefix"], "t", {KEY_ID: "my-key"})
    assert _properties(client, table)[KEY_ID] == "my-key"
    before = log_length()
    _refused(_commit(client, table, _set(**{KEY_ID: "different-key"})),
             "ImmutablePropertyModification", f"Cannot modify immutable property '{KEY_ID}'")
    _refused(_commit(client, table, _remove(KEY_ID)),
             "ImmutablePropertyRemoval", f"Cannot remove immutable property '{KEY_ID}'")
    # with other, valid, updates around it: the whole commit is refused
    _refused(_commit(client, table, _set(owner="me"), _remove("other", KEY_ID)),
             "ImmutablePropertyRemoval", f"Cannot remove immutable property '{KEY_ID}'")
    assert log_length() == before
    assert _properties(client, table)[KEY_ID] == "my-key" and "owner" not in _properties(client, table)
    # setting it to the value it has, and changing any other property, are commits like any other
    r = _commit(client, table, _set(**{KEY_ID: "my-key", "owner": "me"}))
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["properties"][KEY_ID] == "my-key"
    assert _commit(client, table, _remove("owner")).status_code == 200
    assert _properties(client, table)[KEY_ID] == "my-key" and "owner" not in _properties(client, table)


def test_a_table_without_one_may_be_given_one_once(client, warehouse):
    table = _create(client, warehouse["prefix"], "t")
    # removing one it does not have is no change, as any absent property
    assert _commit(client, table, _remove(KEY_ID)).status_code == 200
    assert _commit(client, table, _set(**{KEY_ID: "first"})).status_code == 200
    assert _properties(client, table)[KEY_ID] == "first"
    _refused(_commit(client, table, _set(**{KEY_ID: "second"})),
             "ImmutablePropertyModification", f"Cannot modify immutable property '{KEY_ID}'")
    assert _properties(client, table)[KEY_ID] == "first"


def test_a_transaction_changing_one_is_refused_as_a_whole(client, warehouse, log_length):
    prefix = warehouse["prefix"]
    plain = _create(client, prefix, "plain")
    encrypted = _create(client, prefix, "encrypted", {KEY_ID: "k1"})
    before = log_length()
    for update, error_type, message in [
            (_set(**{KEY_ID: "k2"}), "ImmutablePropertyModification", f"Cannot modify immutable property '{KEY_ID}'"),
            (_remove(KEY_ID), "ImmutablePropertyRemoval", f"Cannot remove immutable property '{KEY_ID}'")]:
        r = client.post(f"{prefix}/transactions/commit", json={"table-changes": [
            {"identifier": {"namespace": ["enc"], "name": "plain"}, "requirements": [],
             "updates": [_set(touched="yes")]},
            {"identifier": {"namespace": ["enc"], "name": "encrypted"}, "requirements": [], "updates": [update]}]})
        _refused(r, error_type, message)
    assert log_length() == before
    assert "touched" not in _properties(client, plain)
    assert _properties(client, encrypted)[KEY_ID] == "k1"
    # the same transaction leaving the key id alone goes through
    r = client.post(f"{prefix}/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ["enc"], "name": "plain"}, "requirements": [], "updates": [_set(touched="yes")]},
        {"identifier": {"namespace": ["enc"], "name": "encrypted"}, "requirements": [],
         "updates": [_set(touched="yes", **{KEY_ID: "k1"})]}]})
    assert r.status_code == 204, r.text
    assert _properties(client, plain)["touched"] == "yes"
    properties = _properties(client, encrypted)
    assert (properties[KEY_ID], properties["touched"]) == ("k1", "yes")
