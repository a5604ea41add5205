"""How deep namespaces nest (LAKELEDGER__MAX_NAMESPACE_DEPTH): 5 levels by default, Lakekeeper's limit, refused
beyond it as Lakekeeper refuses (400 NamespaceDepthExceeded, "Namespace exceeds maximum depth of 5") with nothing
appended. The setting bounds new namespaces only: those created under a higher setting (up to 16, the most any path
may name) stay reachable, usable and droppable after it is lowered."""

import httpx
import pytest
from support import SCHEMA, Server

from lakeledger.domain.names import DEFAULT_NAMESPACE_DEPTH, MAX_NAMESPACE_DEPTH

ENCRYPTION_KEY = "lakeledger-tests-encryption-key"


def _too_deep(r, limit: int) -> None:
    assert r.status_code == 400, r.text
    assert r.json()["error"] == {"type": "NamespaceDepthExceeded", "code": 400,
                                 "message": f"Namespace exceeds maximum depth of {limit}"}


@pytest.fixture
def deep_server(pg_url, data_dir, server):
    """An API process on the session's database that lets new namespaces nest as deep as any path may name."""
    s = Server(pg_url, data_dir, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY,
               LAKELEDGER__MAX_NAMESPACE_DEPTH=str(MAX_NAMESPACE_DEPTH))
    yield s
    s.stop()


def test_a_sixth_level_is_refused_as_lakekeeper_refuses_it(client, warehouse, log_length):
    p = warehouse["prefix"]
    assert DEFAULT_NAMESPACE_DEPTH == 5
    levels = [f"n{i}" for i in range(6)]
    for depth in range(1, 6):
        assert client.post(f"{p}/namespaces", json={"namespace": levels[:depth]}).status_code == 200
    before = log_length()
    _too_deep(client.post(f"{p}/namespaces", json={"namespace": levels}), 5)
    # refused before the parent is looked for: a missing parent does not change the answer
    _too_deep(client.post(f"{p}/namespaces", json={"namespace": [f"x{i}" for i in range(7)]}), 5)
    assert log_length() == before
    # a six-level path names nothing: not found, as a table in it (Lakekeeper's loadTable answers that too)
    deeper = "%1F".join(levels)
    assert client.get(f"{p}/namespaces/{deeper}").status_code == 404
    assert client.get(f"{p}/namespaces/{deeper}/tables/t").status_code == 404


def test_namespaces_made_under_a_higher_limit_stay_usable(client, warehouse, deep_server, log_length):
    p = warehouse["prefix"]
    levels = [f"d{i}" for i in range(MAX_NAMESPACE_DEPTH)]
    deepest = "%1F".join(levels)
    with httpx.Client(base_url=deep_server.url, timeout=60) as deep:
        for depth in range(1, MAX_NAMESPACE_DEPTH + 1):
            r = deep.post(f"{p}/namespaces", json={"namespace": levels[:depth]})
            assert r.status_code == 200, r.text
        # the most any path may name is a bound of its own, whatever the setting
        r = deep.post(f"{p}/namespaces", json={"namespace": [*levels, "one-too-many"]})
        assert r.status_code == 400 and "deeper than 16" in r.json()["error"]["message"], r.text
    # the default server (limit 5) reaches every level, holds tables in the deepest and drops them
    assert client.get(f"{p}/namespaces/{deepest}").json()["namespace"] == levels
    listed = client.get(f"{p}/namespaces", params={"parent": "\x1f".join(levels[:-1])}).json()["namespaces"]
    assert listed == [levels]
    r = client.post(f"{p}/namespaces/{deepest}/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code == 200, r.text
    assert client.get(f"{p}/namespaces/{deepest}/tables/t").status_code == 200
    assert client.delete(f"{p}/namespaces/{deepest}/tables/t").status_code == 204
    # but makes no new namespace below the limit's level, beside or under the old ones
    before = log_length()
    _too_deep(client.post(f"{p}/namespaces", json={"namespace": [*levels[:6], "sibling"]}), 5)
    _too_deep(client.post(f"{p}/namespaces", json={"namespace": [*levels[:10], "child"]}), 5)
    assert log_length() == before
    assert client.post(f"{p}/namespaces", json={"namespace": [*levels[:4], "sibling"]}).status_code == 200
    assert client.delete(f"{p}/namespaces/{deepest}").status_code == 204
    assert client.get(f"{p}/namespaces/{deepest}").status_code == 404
