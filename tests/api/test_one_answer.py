"""One request, one answer: loadTable and updateTable have fast paths in front of FastAPI (lakeledger/api/fast_load.py,
fast_commit.py) that answer what they can and leave the rest to the routes. Each request here is sent both ways and
the two answers must be the same: status, body and headers. Both fast paths take only requests without a query
string, so a request with one is the route's; ``snapshots=all`` is loadTable's default spelt out (the same request),
and updateTable reads no query parameter at all."""

import json
import re

import pytest

ROUTED = {"snapshots": "all"}
LOAD_ROUTE = "GET /catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}"
# what differs between any two answers, whoever gives them
_PER_ANSWER = {"date", "x-request-id"}


def _headers(response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k not in _PER_ANSWER}


def _alike(fast, routed) -> None:
    assert (fast.status_code, fast.content) == (routed.status_code, routed.content), (fast.text, routed.text)
    assert _headers(fast) == _headers(routed)


def _both(client, path: str, headers: dict[str, str] | None = None, **params):
    """(fast, routed): the request without a query (the fast path's, when it can answer) and with one."""
    return (client.get(path, headers=headers, params=params or None),
            client.get(path, headers=headers, params={**ROUTED, **params}))


def _append(client, path: str, snapshot_id: int, query: dict[str, str] | None = None):
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": 1_700_000_000_000,
                "manifest-list": f"file:///nowhere/snap-{snapshot_id}.avro", "summary": {"operation": "append"},
                "schema-id": 0}
    return client.post(path, params=query, json={"requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                                                                     "snapshot-id": None}],
                                                  "updates": [{"action": "add-snapshot", "snapshot": snapshot},
                                                              {"action": "set-snapshot-ref", "ref-name": "main",
                                                               "type": "branch", "snapshot-id": snapshot_id}]})


@pytest.fixture
def loaded(client, table_factory) -> str:
    """A table with a snapshot whose metadata the server holds in its cache (a load answered it)."""
    path = table_factory("one", "t")
    assert _append(client, path, 1).status_code == 200
    assert client.get(path).status_code == 200
    return path


@pytest.mark.parametrize("delegation", [None, "vended-credentials", "remote-signing", "client-managed",
                                        "vended-credentials,remote-signing", "client-managed, vended-credentials",
                                        "REMOTE-SIGNING", "carrier-pigeon", ""])
def test_a_file_table_loads_alike_whatever_delegation_is_asked_for(client, loaded, delegation):
    """A file warehouse vends nothing: every delegation header, known, Lakekeeper's client-managed or unknown, is
    answered as none (the header is a hint, docs/storage.md), and the fast path answers as the route."""
    headers = None if delegation is None else {"X-Iceberg-Access-Delegation": delegation}
    fast, routed = _both(client, loaded, headers)
    _alike(fast, routed)
    assert fast.status_code == 200 and fast.headers["content-type"] == "application/json"
    assert fast.json()["config"] == {} and "storage-credentials" not in fast.json()
    plain = client.get(loaded)
    assert (fast.content, fast.headers["etag"]) == (plain.content, plain.headers["etag"])


def test_if_none_match_is_answered_alike(client, loaded):
    tag = client.get(loaded).headers["etag"]
    for condition, status in ((tag, 304), (f'"other", {tag}', 304), ('"other"', 200), ("*", 304)):
        for delegation in ({}, {"X-Iceberg-Access-Delegation": "client-managed"}):
            fast, routed = _both(client, loaded, {"If-None-Match": condition, **delegation})
            _alike(fast, routed)
            assert fast.status_code == status, condition


def test_snapshots_refs_and_the_root_alias_are_answered_alike(client, loaded):
    refs = client.get(loaded, params={"snapshots": "refs"})
    managed = client.get(loaded, params={"snapshots": "refs"},
                         headers={"X-Iceberg-Access-Delegation": "client-managed"})
    _alike(refs, managed)
    assert refs.status_code == 200 and refs.headers["etag"] != client.get(loaded).headers["etag"]
    alias = loaded.removeprefix("/catalog")
    assert alias.startswith("/v1/")
    for delegation in ({}, {"X-Iceberg-Access-Delegation": "client-managed"}):
        fast, routed = _both(client, alias, delegation)
        _alike(fast, routed)
        _alike(fast, client.get(loaded, headers=delegation))


@pytest.mark.parametrize("path", ["{prefix}/namespaces/one/tables/missing", "{prefix}/namespaces/nowhere/tables/t",
                                  "{prefix}/namespaces/one%1F%1F/tables/t", "{prefix}/namespaces/%E2%82/tables/t",
                                  "/catalog/v1/not-a-warehouse/namespaces/one/tables/t"],
                         ids=["missing-table", "missing-namespace", "empty-level", "not-utf8", "bad-prefix"])
def test_what_is_not_there_is_refused_alike(client, warehouse, loaded, path):
    path = path.format(prefix=warehouse["prefix"])
    for delegation in ({}, {"X-Iceberg-Access-Delegation": "client-managed"}):
        fast, routed = _both(client, path, delegation)
        _alike(fast, routed)
        assert fast.status_code in (400, 404), fast.text
        assert fast.json()["error"]["code"] == fast.status_code


def test_every_load_is_counted_once_whichever_path_answers(client, warehouse, loaded):
    """Lakekeeper's endpoint statistics count loadTable calls: the fast path's too (it answers most of them)."""
    def loads() -> int:
        r = client.post("/management/v1/endpoint-statistics",
                        json={"warehouse": {"type": "warehouse-id", "id": warehouse["id"]}})
        assert r.status_code == 200, r.text
        return sum(e["count"] for bucket in r.json()["called-endpoints"] for e in bucket
                   if (e["http-route"], e["status-code"]) == (LOAD_ROUTE, 200))

    before = loads()
    for _ in range(3):
        fast, routed = _both(client, loaded)
        _alike(fast, routed)
    assert loads() == before + 6


def _comparable(answer: dict, table: dict) -> str:
    """A commit's answer without what is the committed table's own (its id, location, files, times)."""
    text = json.dumps(answer, sort_keys=True)
    text = text.replace(table["table-uuid"], "<uuid>").replace(table["location"], "<location>")
    text = re.sub(r"\d{5}-[0-9a-f-]{36}\.metadata\.json", "<metadata-file>", text)
    return re.sub(r'"(last-updated-ms|timestamp-ms)": \d{13}', r'"\1": 0', text)


def test_a_commit_is_answered_alike_by_both_paths(client, table_factory):
    fast_path, routed_path = table_factory("commits", "fast"), table_factory("commits", "routed")
    tables = {p: client.get(p).json()["metadata"] for p in (fast_path, routed_path)}
    # updateTable's fast path also declines a body sent as another type, and any query string
    fast, routed = _append(client, fast_path, 5), _append(client, routed_path, 5, {"via": "route"})
    assert fast.status_code == routed.status_code == 200, (fast.text, routed.text)
    assert _headers(fast).keys() == _headers(routed).keys()
    assert fast.headers["content-type"] == routed.headers["content-type"] == "application/json"
    assert _comparable(fast.json(), tables[fast_path]) == _comparable(routed.json(), tables[routed_path])
    for path, answer in ((fast_path, fast), (routed_path, routed)):
        assert client.get(path).headers["etag"] == answer.headers["etag"]

    # a failed requirement: the same table, the same request, changes nothing either way
    for path in (fast_path, routed_path):
        conflict = [_append(client, path, 6), _append(client, path, 6, {"via": "route"})]
        _alike(*conflict)
        assert conflict[0].status_code == 409
        assert conflict[0].json()["error"]["type"] == "CommitFailedException"
    missing = fast_path.replace("/tables/fast", "/tables/absent")
    _alike(_append(client, missing, 7), _append(client, missing, 7, {"via": "route"}))


def test_names_spelt_otherwise_are_answered_alike(client, warehouse, loaded):
    """Names match case-insensitively by default (docs/names.md): the route's lookup and the fast path's agree."""
    for path in (f"{warehouse['prefix']}/namespaces/ONE/tables/T", f"{warehouse['prefix']}/namespaces/one/tables/T"):
        fast, routed = _both(client, path, {"X-Iceberg-Access-Delegation": "client-managed"})
        _alike(fast, routed)
        _alike(fast, client.get(loaded))
