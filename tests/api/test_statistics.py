"""Lakekeeper's statistics: GET /management/v1/warehouse/{id}/statistics (tables and views per hour, from the history
read model) and POST /management/v1/endpoint-statistics (calls per endpoint, status and hour, counted by the API
process and added in batches), in Lakekeeper's shapes (validated against its newest management document)."""

from datetime import UTC, datetime, timedelta

from lakekeeper_spec import check
from support import SCHEMA, VIEW_VERSION

HOUR = {"type": "soft", "expiration-seconds": 3600}


def _stats(client, warehouse: dict, **params) -> dict:
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/statistics", params=params)
    assert r.status_code == 200, r.text
    return check(r)


def _make(client, warehouse: dict, tables: int, views: int) -> list[str]:
    p = warehouse["prefix"]
    assert client.post(f"{p}/namespaces", json={"namespace": ["s"]}).status_code == 200
    ids = []
    for i in range(tables):
        r = client.post(f"{p}/namespaces/s/tables", json={"name": f"t{i}", "schema": SCHEMA})
        assert r.status_code == 200, r.text
        ids.append(r.json()["metadata"]["table-uuid"])
    for i in range(views):
        r = client.post(f"{p}/namespaces/s/views",
                        json={"name": f"v{i}", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}})
        assert r.status_code == 200, r.text
    return ids


def test_a_warehouse_counts_its_tables_and_views(client, warehouse, log_length):
    fresh = _stats(client, warehouse)
    assert fresh["warehouse-ident"] == warehouse["id"]
    # the warehouse's creation opens the series at zero
    assert [(s["number-of-tables"], s["number-of-views"]) for s in fresh["stats"]][:1] == [(0, 0)]

    _make(client, warehouse, tables=3, views=2)
    assert client.delete(f"{warehouse['prefix']}/namespaces/s/tables/t0").status_code == 204
    assert client.delete(f"{warehouse['prefix']}/namespaces/s/views/v0").status_code == 204
    before = log_length()
    latest = _stats(client, warehouse)["stats"][0]
    assert (latest["number-of-tables"], latest["number-of-views"]) == (2, 1)
    assert latest["timestamp"] > latest["updated-at"]  # a bucket is named by the end of its hour
    assert log_length() == before  # reading statistics appends nothing


def test_a_soft_dropped_table_counts_until_it_expires_as_lakekeepers_do(client, warehouse):
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/delete-profile", json={"delete-profile": HOUR})
    assert r.status_code == 200, r.text
    [first, _] = _make(client, warehouse, tables=2, views=0)
    assert client.delete(f"{warehouse['prefix']}/namespaces/s/tables/t0").status_code == 204
    assert _stats(client, warehouse)["stats"][0]["number-of-tables"] == 2
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars/undrop",
                    json={"targets": [{"type": "table", "id": first}]})
    assert r.status_code == 204, r.text
    assert _stats(client, warehouse)["stats"][0]["number-of-tables"] == 2


def test_warehouse_statistics_are_paged_newest_first(client, warehouse):
    _make(client, warehouse, tables=1, views=0)
    everything = _stats(client, warehouse)["stats"]
    served, token = [], ""
    while True:
        page = _stats(client, warehouse, page_size=1, **({"page_token": token} if token else {}))
        assert len(page["stats"]) <= 1
        served += page["stats"]
        token = page["next-page-token"]
        if not token:
            break
    assert served == everything
    assert [s["timestamp"] for s in served] == sorted((s["timestamp"] for s in served), reverse=True)


def test_warehouse_statistics_refuse_what_they_cannot_answer(client, warehouse):
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/statistics", params={"page_token": "nonsense"})
    assert r.status_code == 400 and r.json()["error"]["code"] == 400, r.text
    r = client.get("/management/v1/warehouse/00000000-0000-0000-0000-00000000abcd/statistics")
    assert r.status_code == 404, r.text
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/statistics", params={"page_size": "0"})
    assert r.status_code == 400, r.text


def _endpoints(client, body: dict) -> dict:
    r = client.post("/management/v1/endpoint-statistics", json=body)
    assert r.status_code == 200, r.text
    return check(r)


def _by_route(answer: dict) -> dict[tuple[str, int], int]:
    counts: dict[tuple[str, int], int] = {}
    for bucket in answer["called-endpoints"]:
        for e in bucket:
            key = (e["http-route"], e["status-code"])
            counts[key] = counts.get(key, 0) + e["count"]
    return counts


def test_calls_are_counted_per_endpoint_status_and_warehouse(client, warehouse, log_length):
    p = warehouse["prefix"]
    # other tests of the session call with prefixes that name no warehouse: those calls are unmapped; ours never
    unmapped_before = _by_route(_endpoints(client, {"warehouse": {"type": "unmapped"}}))
    assert client.post(f"{p}/namespaces", json={"namespace": ["calls"]}).status_code == 200
    for _ in range(3):
        assert client.get(f"{p}/namespaces").status_code == 200
    for _ in range(2):
        assert client.get(f"{p}/namespaces/calls/tables/nothing").status_code == 404
    before = log_length()
    mine = {"type": "warehouse-id", "id": warehouse["id"]}
    answer = _endpoints(client, {"warehouse": mine})
    assert answer["timestamps"] and len(answer["timestamps"]) == len(answer["called-endpoints"])
    counts = _by_route(answer)
    assert counts[("GET /catalog/v1/{prefix}/namespaces", 200)] == 3
    assert counts[("GET /catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}", 404)] == 2
    assert counts[("POST /catalog/v1/{prefix}/namespaces", 200)] == 1
    entry = next(e for e in answer["called-endpoints"][0] if e["http-route"] == "GET /catalog/v1/{prefix}/namespaces")
    assert entry["warehouse-id"] == warehouse["id"] and entry["warehouse-name"] == warehouse["name"]
    assert entry["updated-at"] is not None and entry["created-at"] <= entry["updated-at"]
    assert log_length() == before  # counting and reading appends nothing

    only_404 = _by_route(_endpoints(client, {"warehouse": mine, "status-codes": [404]}))
    assert only_404 == {("GET /catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}", 404): 2}

    # the warehouse's creation is a call on no warehouse, counted for the project
    unmapped = _by_route(_endpoints(client, {"warehouse": {"type": "unmapped"}}))
    assert unmapped[("POST /management/v1/warehouse", 201)] >= 1
    for key in (("GET /catalog/v1/{prefix}/namespaces", 200), ("POST /catalog/v1/{prefix}/namespaces", 200),
                ("GET /catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}", 404)):
        assert unmapped.get(key, 0) == unmapped_before.get(key, 0)
    everything = _by_route(_endpoints(client, {"warehouse": {"type": "all"}}))
    assert everything[("GET /catalog/v1/{prefix}/namespaces", 200)] >= 3
    assert everything[("POST /management/v1/warehouse", 201)] >= 1


def test_endpoint_statistics_step_through_time_windows(client, warehouse):
    assert client.get(f"{warehouse['prefix']}/namespaces").status_code == 200
    mine = {"type": "warehouse-id", "id": warehouse["id"]}
    now = datetime.now(UTC)
    window = {"type": "window", "end": (now + timedelta(minutes=1)).isoformat(), "interval": "PT2H"}
    current = _endpoints(client, {"warehouse": mine, "range-specifier": window})
    assert _by_route(current)[("GET /catalog/v1/{prefix}/namespaces", 200)] == 1
    # the window before holds nothing of a warehouse created in this one
    earlier = _endpoints(client, {"warehouse": mine, "range-specifier": {
        "type": "page-token", "token": current["previous-page-token"]}})
    assert earlier["timestamps"] == [] and earlier["called-endpoints"] == []
    back = _endpoints(client, {"warehouse": mine, "range-specifier": {
        "type": "page-token", "token": earlier["next-page-token"]}})
    assert _by_route(back) == _by_route(current)
    long_ago = {"type": "window", "end": (now - timedelta(days=2)).isoformat(), "interval": "P1D"}
    assert _endpoints(client, {"warehouse": mine, "range-specifier": long_ago})["timestamps"] == []


def test_endpoint_statistics_refuse_bad_requests(client, warehouse):
    for body in ({"warehouse": {"type": "warehouse-id"}},
                 {"warehouse": {"type": "somewhere"}},
                 {"warehouse": {"type": "all"}, "range-specifier": {"type": "window", "end": "2026-01-01T00:00:00Z",
                                                                    "interval": "P1M"}},
                 {"warehouse": {"type": "all"}, "range-specifier": {"type": "window", "end": "2026-01-01T00:00:00Z",
                                                                    "interval": "soon"}},
                 {"warehouse": {"type": "all"}, "range-specifier": {"type": "page-token", "token": "forged"}},
                 {"warehouse": {"type": "all"}, "status-codes": [-1]}):
        r = client.post("/management/v1/endpoint-statistics", json=body)
        assert r.status_code == 400, (body, r.text)
        check(r)
    r = client.post("/management/v1/endpoint-statistics",
                    json={"warehouse": {"type": "warehouse-id", "id": "00000000-0000-0000-0000-00000000abcd"}})
    assert r.status_code == 404, r.text
