"""Prometheus metrics at /metrics (issue 15, point 3), read from the session's server as Prometheus would, parsed
by the client library's own parser: requests per route template and status with latency histograms (the loadTable
fast path included), events appended per type counted from the log, each log consumer's lag, the expiry timers,
failed purges and the connection pools. Labels name route templates, never a table or a raw path."""

import uuid

from prometheus_client.parser import text_string_to_metric_families

LOAD_TABLE = "/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}"


def _samples(client) -> dict[tuple[str, tuple], float]:
    r = client.get("/metrics")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    out = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_requests_are_counted_and_timed_per_route_template(client, table_factory):
    table = table_factory("metrics_ns", f"t_{uuid.uuid4().hex[:8]}")
    before = _samples(client)
    for _ in range(5):
        assert client.get(table).status_code == 200  # the fast path (lakeledger/api/fast_load.py) answers these
    assert client.get(table + "_missing").status_code == 404
    assert client.get("/no/such/route").status_code == 404
    after = _samples(client)

    def delta(name, **labels):
        return _value(after, name, **labels) - _value(before, name, **labels)

    assert delta("lakeledger_http_requests_total", method="GET", route=LOAD_TABLE, status="200") == 5
    assert delta("lakeledger_http_requests_total", method="GET", route=LOAD_TABLE, status="404") == 1
    assert delta("lakeledger_http_requests_total", method="GET", route="<unmatched>", status="404") == 1
    assert delta("lakeledger_http_request_duration_seconds_count", method="GET", route=LOAD_TABLE) == 6
    assert delta("lakeledger_http_request_duration_seconds_bucket", method="GET", route=LOAD_TABLE, le="+Inf") == 6
    assert delta("lakeledger_http_request_duration_seconds_sum", method="GET", route=LOAD_TABLE) > 0
    text = client.get("/metrics").text
    assert "metrics_ns" not in text and "/no/such/route" not in text  # templates only


def test_events_appended_are_counted_per_type_from_the_log(client, warehouse, db):
    before = _samples(client)
    for n in range(3):
        assert client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [f"m{n}"]}).status_code == 200
    after = _samples(client)
    assert _value(after, "lakeledger_events_appended_total", type="namespace.created") \
        - _value(before, "lakeledger_events_appended_total", type="namespace.created") == 3
    counted = sum(v for (name, _), v in after.items() if name == "lakeledger_events_appended_total")
    head = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    log_length = db.execute("SELECT count(*) FROM lakeledger_events WHERE notification_id <= %s",
                            (int(_value(after, "lakeledger_log_head_position")),)).fetchone()[0]
    assert counted == log_length
    assert _value(after, "lakeledger_log_head_position") <= head


def test_consumer_lags_timers_purges_and_pools_are_reported(client, db):
    samples = _samples(client)
    consumers = {dict(labels)["consumer"] for (name, labels) in samples if name == "lakeledger_consumer_lag_events"}
    assert {"catalog", "history", "expiry-schedule", "catalog-versions", "purger"} <= consumers
    assert "authz-tuples" not in consumers  # allowall: nobody follows that position, it would lag for ever
    for consumer in consumers:
        assert _value(samples, "lakeledger_consumer_lag_events", consumer=consumer) >= 0
        assert _value(samples, "lakeledger_consumer_lag_seconds", consumer=consumer) >= 0
    scheduled = db.execute("SELECT count(*) FROM ll_expiry_schedule").fetchone()[0]
    assert _value(samples, "lakeledger_expiry_timers", state="scheduled") == scheduled
    waiting = db.execute("SELECT count(*) FROM ll_purge_retries").fetchone()[0]
    assert _value(samples, "lakeledger_purge_retries", state="waiting") == waiting
    idle = _value(samples, "lakeledger_pg_pool_connections", pool="api", state="idle")
    in_use = _value(samples, "lakeledger_pg_pool_connections", pool="api", state="in_use")
    assert idle + in_use >= 1
    assert ("lakeledger_pg_pool_waiting", (("pool", "background"),)) in samples


def test_a_lagging_read_model_shows_its_lag(client, warehouse, db):
    """The history position held back by a lock on its row: the appends behind it are counted as its lag."""
    with db.transaction():
        db.execute("SELECT position FROM ll_projection_positions WHERE name = 'history' FOR UPDATE")
        for n in range(4):
            client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [f"lag{n}"]})
        samples = _samples(client)
        assert _value(samples, "lakeledger_consumer_lag_events", consumer="history") >= 4
        assert _value(samples, "lakeledger_consumer_lag_seconds", consumer="history") > 0
