def test_create_load_list_and_drop_nested_namespaces(client, warehouse):
    p = warehouse["prefix"]
    created = client.post(f"{p}/namespaces", json={"namespace": ["a"], "properties": {"owner": "x"}}).json()
    # every namespace advertises a location (Trino stage-creates its tables below it)
    assert created == {"namespace": ["a"], "properties": {"location": f"{warehouse['location']}/a", "owner": "x"},
                       "namespace-uuid": created["namespace-uuid"]}
    assert client.post(f"{p}/namespaces", json={"namespace": ["a", "b"]}).status_code == 200
    assert client.post(f"{p}/namespaces", json={"namespace": ["a", "b", "c"]}).status_code == 200
    assert client.post(f"{p}/namespaces", json={"namespace": ["z"]}).status_code == 200

    assert client.get(f"{p}/namespaces").json()["namespaces"] == [["a"], ["z"]]
    assert client.get(f"{p}/namespaces", params={"parent": "a"}).json()["namespaces"] == [["a", "b"]]
    assert client.get(f"{p}/namespaces", params={"parent": "a\x1fb"}).json()["namespaces"] == [["a", "b", "c"]]
    assert client.get(f"{p}/namespaces", params={"parent": "nope"}).status_code == 404

    loaded = client.get(f"{p}/namespaces/a%1Fb").json()
    assert {k: v for k, v in loaded.items() if k != "namespace-uuid"} == {"namespace": ["a", "b"], "properties": {
        "location": f"{warehouse['location']}/a/b"}}
    assert client.head(f"{p}/namespaces/a%1Fb").status_code == 204
    assert client.head(f"{p}/namespaces/a%1Fzz").status_code == 404

    conflict = client.post(f"{p}/namespaces", json={"namespace": ["a", "b"]})
    assert conflict.status_code == 409 and conflict.json()["error"]["type"] == "AlreadyExistsException"
    orphan = client.post(f"{p}/namespaces", json={"namespace": ["missing", "child"]})
    assert orphan.status_code == 404 and orphan.json()["error"]["type"] == "NoSuchNamespaceException"

    not_empty = client.delete(f"{p}/namespaces/a")
    assert not_empty.status_code == 409 and not_empty.json()["error"]["type"] == "NamespaceNotEmptyException"
    assert client.delete(f"{p}/namespaces/a%1Fb%1Fc").status_code == 204
    assert client.delete(f"{p}/namespaces/a%1Fb").status_code == 204
    assert client.delete(f"{p}/namespaces/a").status_code == 204
    assert client.get(f"{p}/namespaces/a").status_code == 404
    assert client.delete(f"{p}/namespaces/a").status_code == 404
    # a dropped name can be created again
    again = client.post(f"{p}/namespaces", json={"namespace": ["a"]}).json()
    assert again["properties"] == {"location": f"{warehouse['location']}/a"}


def test_namespace_with_a_table_is_not_empty(client, warehouse, table_factory):
    table_factory("full", "t")
    r = client.delete(f"{warehouse['prefix']}/namespaces/full")
    assert r.status_code == 409


def test_update_properties(client, warehouse):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["props"], "properties": {"a": "1", "b": "2"}})
    r = client.post(f"{p}/namespaces/props/properties", json={"updates": {"a": "10", "c": "3"},
                                                              "removals": ["b", "missing"]})
    assert r.status_code == 200
    body = r.json()
    assert sorted(body["updated"]) == ["a", "c"] and body["removed"] == ["b"] and body["missing"] == ["missing"]
    assert client.get(f"{p}/namespaces/props").json()["properties"] == {
        "location": f"{warehouse['location']}/props", "a": "10", "c": "3"}
    both = client.post(f"{p}/namespaces/props/properties", json={"updates": {"a": "1"}, "removals": ["a"]})
    assert both.status_code == 422 and both.json()["error"]["type"] == "UnprocessableEntityException"


def test_unusual_names_round_trip(client, warehouse):
    p = warehouse["prefix"]
    for name in ["with.dot", "with space", "ünïcødé"]:
        assert client.post(f"{p}/namespaces", json={"namespace": [name]}).status_code == 200
        assert client.get(f"{p}/namespaces/{name}").json()["namespace"] == [name]


def test_namespaces_advertise_a_location_unless_they_have_their_own(client, warehouse, log_length):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["top"]})
    client.post(f"{p}/namespaces", json={"namespace": ["top", "a/b c%"]})
    own = f"{warehouse['location']}/elsewhere"
    client.post(f"{p}/namespaces", json={"namespace": ["mine"], "properties": {"location": own}})
    before = log_length()
    nested = client.get(f"{p}/namespaces/top%1Fa%2Fb%20c%25").json()["properties"]
    assert nested == {"location": f"{warehouse['location']}/top/a%2Fb%20c%25"}  # one escaped folder per level
    assert client.get(f"{p}/namespaces/mine").json()["properties"] == {"location": own}
    assert log_length() == before  # derived when read, never recorded
