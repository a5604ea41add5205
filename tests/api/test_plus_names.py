"""A `+` in a request path is a space, as Iceberg's Java client (Spark, Trino) sends it and as Lakekeeper reads it;
`%20` keeps working, and no new namespace, table or view name may hold a `+` (it could only be reached as `%2B`)."""

import os

import httpx
import pytest
from support import SCHEMA, VIEW_VERSION, Server


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



# A server of the time before the rule, which took names with `+`: its sitecustomize runs before lakeledger is
# imported, so every module takes the old check (check_name's alone).
_BEFORE_THE_RULE = """
import lakeledger.domain.names as names
names.check_new_name = names.check_name
"""
ENCRYPTION_KEY = "lakeledger-tests-encryption-key"  # the session server's (tests/conftest.py)


def test_names_with_a_plus_from_an_older_log_are_reached_as_percent_2b(client, warehouse, pg_url, data_dir,
                                                                        tmp_path):
    p = warehouse["prefix"]
    site = tmp_path / "old-rules"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_BEFORE_THE_RULE)
    old = Server(pg_url, data_dir, LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY, LAKELEDGER__WORKERS="off",
                 PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    try:
        with httpx.Client(base_url=old.url, timeout=60) as then:
            _ok(then.post(f"{p}/namespaces", json={"namespace": ["a+b"]}))
            _ok(then.post(f"{p}/namespaces/a%2Bb/tables", json={"name": "t+1", "schema": SCHEMA}))
            _ok(then.post(f"{p}/namespaces/a%2Bb/views",
                          json={"name": "v+1", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}))
    finally:
        assert old.stop() == 0

    # today's server: `%2B` is the `+`, and `+` the space (which names nothing here)
    assert _ok(client.get(f"{p}/namespaces/a%2Bb")).json()["namespace"] == ["a+b"]
    _ok(client.get(f"{p}/namespaces/a+b"), 404)
    assert _ok(client.get(f"{p}/namespaces")).json()["namespaces"] == [["a+b"]]
    table = f"{p}/namespaces/a%2Bb/tables/t%2B1"
    _ok(client.get(table))
    _ok(client.get(f"{p}/namespaces/a%2Bb/tables/t+1"), 404)
    _ok(client.post(table, json={"requirements": [], "updates": [{"action": "set-properties", "updates": {"p": "1"}}]}))
    _ok(client.get(f"{p}/namespaces/a%2Bb/views/v%2B1"))
    # they can be renamed away from the `+`, and dropped
    _ok(client.post(f"{p}/tables/rename", json={"source": {"namespace": ["a+b"], "name": "t+1"},
                                                "destination": {"namespace": ["a+b"], "name": "t 1"}}), 204)
    _ok(client.get(f"{p}/namespaces/a%2Bb/tables/t+1"))
    _ok(client.delete(f"{p}/namespaces/a%2Bb/tables/t+1"), 204)
    _ok(client.delete(f"{p}/namespaces/a%2Bb/views/v%2B1"), 204)
    _ok(client.delete(f"{p}/namespaces/a%2Bb"), 204)
