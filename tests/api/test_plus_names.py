"""A `+` in a request path is a space, as Iceberg's Java client (Spark, Trino) sends it and as Lakekeeper reads it;
`%20` keeps working, and no new namespace, table or view name may hold a `+` (it could only be reached as `%2B`)."""

import pytest
from support import SCHEMA, VIEW_VERSION


def _ok(r, status: int = 200):
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text)
    return r


@pytest.mark.parametrize("space", ["+", "%20"])
def test_a_space_in_a_path_is_reachable_as_plus_and_as_percent_20(client, warehouse, space):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["a b"]}))
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["a b", "c d"]}))
    outer, inner = f"a{space}b", f"a{space}b%1Fc{space}d"
    assert _ok(client.get(f"{p}/namespaces/{outer}")).json()["namespace"] == ["a b"]
    assert _ok(client.get(f"{p}/namespaces/{inner}")).json()["namespace"] == ["a b", "c d"]
    _ok(client.head(f"{p}/namespaces/{inner}"), 204)
    _ok(client.post(f"{p}/namespaces/{inner}/properties", json={"updates": {"k": "v"}}))

    _ok(client.post(f"{p}/namespaces/{inner}/tables", json={"name": "t 1", "schema": SCHEMA}))
    table = f"{p}/namespaces/{inner}/tables/t{space}1"
    first = _ok(client.get(table))
    _ok(client.get(table, headers={"If-None-Match": first.headers["etag"]}), 304)  # the fast path's revalidation
    _ok(client.get(table, params={"snapshots": "refs"}))  # the routed load
    _ok(client.head(table), 204)
    _ok(client.post(table, json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"p": "1"}}]}))

    _ok(client.post(f"{p}/namespaces/{inner}/views",
                    json={"name": "v 1", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}))
    view = f"{p}/namespaces/{inner}/views/v{space}1"
    _ok(client.get(view))
    _ok(client.head(view), 204)

    _ok(client.delete(view), 204)
    _ok(client.delete(table, params={"purgeRequested": "false"}), 204)
    _ok(client.get(table), 404)
    _ok(client.delete(f"{p}/namespaces/{inner}"), 204)
    _ok(client.delete(f"{p}/namespaces/{outer}"), 204)
    assert _ok(client.get(f"{p}/namespaces")).json()["namespaces"] == []


def test_a_plus_in_a_query_parameter_is_a_space_too(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["x y"]}))
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["x y", "z"]}))
    listed = _ok(client.get(f"{p}/namespaces?parent=x+y")).json()["namespaces"]
    assert listed == [["x y", "z"]]


def test_new_names_with_a_plus_are_refused_and_append_nothing(client, warehouse, log_length):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["ns"]}))
    _ok(client.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}))
    _ok(client.post(f"{p}/namespaces/ns/views",
                    json={"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}))
    before = log_length()
    refused = [
        client.post(f"{p}/namespaces", json={"namespace": ["a+b"]}),
        client.post(f"{p}/namespaces", json={"namespace": ["ns", "c+d"]}),
        client.post(f"{p}/namespaces/ns/tables", json={"name": "t+1", "schema": SCHEMA}),
        client.post(f"{p}/namespaces/ns/tables", json={"name": "t+1", "schema": SCHEMA, "stage-create": True}),
        client.post(f"{p}/namespaces/ns/register", json={"name": "t+2", "metadata-location": "file:///nowhere.json"}),
        client.post(f"{p}/tables/rename", json={"source": {"namespace": ["ns"], "name": "t"},
                                                "destination": {"namespace": ["ns"], "name": "t+3"}}),
        client.post(f"{p}/namespaces/ns/views",
                    json={"name": "v+1", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}),
        client.post(f"{p}/views/rename", json={"source": {"namespace": ["ns"], "name": "v"},
                                               "destination": {"namespace": ["ns"], "name": "v+2"}}),
    ]
    for r in refused:
        assert r.status_code == 400, (r.request.url, r.text)
        error = r.json()["error"]
        assert error["code"] == 400 and "'+'" in error["message"], error
    assert log_length() == before
    # `%2B` is a `+`, and so reaches no new name: a name with `+` cannot have been created
    _ok(client.get(f"{p}/namespaces/a%2Bb"), 404)
