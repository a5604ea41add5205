"""The read side's hot queries are index lookups or index range walks whatever the catalog's size: on a catalog
seeded through the services (bench/seed.py) and rebuilt, every one is EXPLAINed with real parameters and its plan
holds no sequential scan of the events table or of a read-model table that grows with the catalog. The SQL is the
code's own (imported where it is a constant, built by the same function where it is built per request); the event
store's statements are the eventsourcing library's.

At the test's small size Postgres would rightly read a few pages whole, so each query is planned with sequential
scans priced out (``enable_seqscan = off``): a sequential scan left in the plan then means that no index can serve
the query, which is what would read the whole table at 1,000,000 events. ``make bench``'s scale section measures the
same requests at that size."""

import uuid

import psycopg
import pytest
from psycopg.rows import dict_row
from support import create_database
from test_read_model import _rebuild

from bench.seed import Plan, namespace_name, seed, table_name
from lakeledger.eventstore import append_time
from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.settings import PostgresSettings
from lakeledger.projections import appended
from lakeledger.projections import catalog_queries as live
from lakeledger.projections import catalog_versions_queries as past
from lakeledger.projections.events_queries import EventFilters
from lakeledger.projections.events_queries import page_query as events_page
from lakeledger.projections.history_queries import Filters, page_query
from lakeledger.projections.statistics_queries import ENDPOINT_STATISTICS, NO_WAREHOUSE, WAREHOUSE_STATISTICS

PLAN = Plan(namespaces=5, tables=200, views=5, events=2_000, workers=2, threads=2, batch=20)
# tables that grow with the catalog or its log
GROWING = {"lakeledger_events", "ll_tabulars", "ll_namespaces", "ll_history", "ll_history_entities",
           "ll_tabular_placements", "ll_namespace_versions", "ll_tabular_metadata_versions", "ll_access_ranges",
           "ll_expiry_schedule"}
INDEX_SCANS = ("Index Scan", "Index Only Scan", "Bitmap Index Scan")


@pytest.fixture(scope="module")
def seeded(pg_url, tmp_path_factory, server):
    """(database URL, warehouse id, facts to query with): the catalog seeded, its read models rebuilt, analysed."""
    url = create_database(pg_url, f"plans_{uuid.uuid4().hex[:8]}")
    data_dir = tmp_path_factory.mktemp("plans")
    done = seed(url, PLAN, data_dir / "seed")
    _rebuild(url, data_dir)  # the read models a seed leaves behind (history, versions, access history)
    with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("ANALYZE")
        namespace = conn.execute("SELECT id, path FROM ll_namespaces WHERE path = %s",
                                 ([namespace_name(0)],)).fetchone()
        table = conn.execute("SELECT id FROM ll_tabulars WHERE namespace_id = %s AND name = %s",
                             (namespace["id"], table_name(0))).fetchone()
        middle = conn.execute("SELECT notification_id, appended_at FROM lakeledger_events WHERE notification_id >= %s"
                              " ORDER BY notification_id LIMIT 1", (done.events // 2,)).fetchone()
        event = conn.execute("SELECT originator_id, originator_version FROM lakeledger_events"
                             " WHERE notification_id = %s", (middle["notification_id"],)).fetchone()
    facts = {"warehouse_id": uuid.UUID(done.warehouse_id), "namespace_id": namespace["id"],
             "namespace": namespace["path"], "table_id": table["id"], "position": middle["notification_id"],
             "instant": middle["appended_at"], "event": event}
    return url, facts


def _plan(url: str, sql, params) -> dict:
    """The plan Postgres picks for ``sql`` with ``params`` when a sequential scan is its last resort."""
    with psycopg.connect(url) as conn:
        if not isinstance(sql, str):
            sql = sql.as_string(conn)
        conn.execute("SET LOCAL enable_seqscan = off")
        plan = conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()[0][0]["Plan"]
        conn.rollback()
    return plan


def _scans(plan: dict) -> list[tuple[str, str, bool]]:
    """(node type, relation or index, whether it has an index condition) of every scan in the plan tree."""
    found = []
    if "Relation Name" in plan or "Index Name" in plan:
        found.append((plan["Node Type"], plan.get("Relation Name") or plan["Index Name"], "Index Cond" in plan))
    for child in plan.get("Plans", []):
        found += _scans(child)
    return found


def _assert_indexed(url: str, sql, params, walk_ok: bool = False) -> list[tuple[str, str, bool]]:
    """No sequential scan of a growing table, and (unless ``walk_ok``: a max() read off the index's end) no index
    walked whole either: every index scan has a condition."""
    scans = _scans(_plan(url, sql, params))
    assert scans, "the plan reads no table"
    sequential = [(kind, name) for kind, name, _ in scans if kind == "Seq Scan" and name in GROWING]
    assert sequential == [], f"{sequential} in {scans}"
    if not walk_ok:
        walked = [(kind, name) for kind, name, cond in scans if kind in INDEX_SCANS and not cond]
        assert walked == [], f"indexes walked whole: {walked} in {scans}"
    return scans


def _queries(facts: dict) -> dict[str, tuple]:
    w, ns, ns_id, p = facts["warehouse_id"], facts["namespace"], facts["namespace_id"], facts["position"]
    page = {"limit": 101}
    return {
        "list tables, first page": (live.TABULARS, {"namespace_id": ns_id, "typ": "table", "after": None, **page}),
        "list tables, a later page": (live.TABULARS, {"namespace_id": ns_id, "typ": "table",
                                                      "after": table_name(1000), **page}),
        "list namespaces": (live.TOP_NAMESPACES, {"warehouse_id": w, "after": [namespace_name(5)], **page}),
        "load table": (live.ACTIVE_TABULAR, {"warehouse_id": w, "namespace": ns, "name": table_name(0),
                                             "typ": "table"}),
        "load table in another case": (live.ACTIVE_TABULAR_BY_KEY, {
            "warehouse_id": w, **live.keyed("namespace", ns), **live.keyed("name", table_name(0).upper()),
            "typ": "table"}),
        "a commit's lookups": (live.WAREHOUSE_AND_TABULAR, {"warehouse_id": w, **live.keyed("namespace", ns),
                                                            **live.keyed("name", table_name(0))}),
        "an append's read-model check": ("SELECT count(*) FROM (SELECT 1 FROM lakeledger_events"
                                         " WHERE notification_id > %(p)s ORDER BY notification_id LIMIT 3) AS beyond",
                                         {"p": p - 2}),
        "load namespace": (live.NAMESPACE, {"warehouse_id": w, **live.keyed("path", ns)}),
        "search by name prefix": (live.TABULARS_BY_NAME_PREFIX, {"warehouse_id": w, "from": "t", "to": "u", **page}),
        "search by name prefix, a later page": (live.TABULARS_BY_NAME_PREFIX_AFTER, {
            "warehouse_id": w, "from": "t", "to": "u", "after_key": table_name(1000).lower(),
            "after_id": uuid.UUID(int=0), **page}),
        "recycle bin": (live.DELETED_TABULARS, {"warehouse_id": w, "namespace_id": None, "after_time": None,
                                                "after_id": None, "limit": 100}),
        "as of: list tables": (past.TABULAR_NAMES.format(after=" AND name > %(after)s"),
                               {"namespace_id": ns_id, "typ": "table", "p": p, "after": table_name(1000), **page}),
        "as of: load table": (past.TABULAR, {"w": w, "p": p, "namespace": ns, "name": table_name(0),
                                             "typ": "table"}),
        "as of: list namespaces": (past.CHILD_NAMESPACES.format(after=""), {"w": w, "p": p, "parent": [], **page}),
        "history of a table": page_query(w, Filters(tabular_id=facts["table_id"]), None, 101),
        "warehouse history, first page": page_query(w, Filters(), None, 101),
        "warehouse history, mid-log page": page_query(w, Filters(since=facts["instant"]), None, 101),
        "warehouse history, until": page_query(w, Filters(until=facts["instant"]), p // 2, 101),
        "server history": page_query(None, Filters(), p, 101),
        # the Events API: a page is one range walk of (warehouse_id, sequence), its request counts index lookups
        "events, first page": events_page(w, EventFilters(), 0, 101),
        "events, mid-log page": events_page(w, EventFilters(), p // 2, 101),
        "events of a table": events_page(w, EventFilters(entity_ids=[facts["table_id"]]), 0, 101),
        "instant to position": (append_time._RESOLVE, {"t": facts["instant"]}),
        "an event's position": (appended.LOOKUP, (facts["event"]["originator_id"],
                                                  facts["event"]["originator_version"])),
    }


def test_every_hot_read_is_an_index_lookup(seeded):
    url, facts = seeded
    assert facts["position"] > 500
    failures = {}
    for name, (sql, params) in _queries(facts).items():
        try:
            _assert_indexed(url, sql, params)
        except AssertionError as e:
            failures[name] = str(e)
    assert failures == {}


def test_statistics_read_only_what_they_count(seeded):
    """A warehouse's counts read its creations, registrations, drops and expiries, not its commits; the endpoint
    counts one project's buckets of the window."""
    url, facts = seeded
    scans = _assert_indexed(url, WAREHOUSE_STATISTICS, {"warehouse": facts["warehouse_id"], "before": None,
                                                        "limit": 101})
    assert {name for kind, name, _ in scans if kind in INDEX_SCANS} == {"ll_history_counted"}, scans
    # the warehouses' names are joined in: a table of a few rows, which the planner may read through its index whole
    scans = _assert_indexed(url, ENDPOINT_STATISTICS, {
        "none": NO_WAREHOUSE, "project": uuid.UUID(int=0), "all": True, "warehouse": None, "statuses": None,
        "start": facts["instant"], "end": facts["instant"]}, walk_ok=True)
    assert [cond for kind, name, cond in scans if name.startswith("ll_endpoint_statistics")] == [True], scans


def test_the_event_stores_own_reads_use_its_indexes(seeded):
    url, facts = seeded
    log = EventLog(PostgresSettings.from_url(url), pool_size=1)
    try:
        recorder = log._recorder
        aggregate = facts["event"]["originator_id"]
        _assert_indexed(url, recorder.select_events_statement + psycopg.sql.SQL(" ORDER BY originator_version"),
                                (aggregate,))
        _assert_indexed(url, recorder.max_notification_id_statement, None, walk_ok=True)
    finally:
        log.close()
    # the workers' and the rebuild's read: after a position, up to another, by topic (the library's statement shape)
    _assert_indexed(url, "SELECT * FROM lakeledger_events WHERE notification_id > %s AND notification_id <= %s"
                         " AND topic = ANY(%s) ORDER BY notification_id LIMIT %s",
                    (facts["position"], facts["position"] + 5000, ["lakeledger.domain.table:Table.Created"], 1000))


def test_a_plan_that_reads_a_whole_table_is_caught(seeded):
    """The check itself can fail: a filter no index serves reads the whole events table, and an order no condition
    bounds walks a whole index."""
    url, _ = seeded
    with pytest.raises(AssertionError, match="Seq Scan"):
        _assert_indexed(url, "SELECT notification_id FROM lakeledger_events WHERE length(topic) = %s LIMIT 1", (3,))
    with pytest.raises(AssertionError, match="walked whole"):
        _assert_indexed(url, "SELECT id FROM ll_tabulars WHERE name LIKE %s ORDER BY id LIMIT 1", ("%x%",))


def test_bytes_per_event_stay_linear_in_the_payload(seeded, client, warehouse, db):
    """A commit carrying ten times the properties takes about ten times the bytes in the events table, not more:
    the event is stored once, as it came (no per-field rows, no copies in indexes)."""
    prefix = warehouse["prefix"]
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["bytes"]}).status_code == 200
    schema = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
    assert client.post(f"{prefix}/namespaces/bytes/tables", json={"name": "t", "schema": schema}).status_code == 200

    def commit_bytes(fields: int) -> int:
        props = {f"key-{uuid.uuid4().hex}": "v" * 40 for _ in range(fields)}
        r = client.post(f"{prefix}/namespaces/bytes/tables/t", json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": props}]})
        assert r.status_code == 200, r.text
        return db.execute("SELECT pg_column_size(state) FROM lakeledger_events ORDER BY notification_id DESC"
                          " LIMIT 1").fetchone()[0]

    small, large = commit_bytes(100), commit_bytes(1000)
    per_field_small, per_field_large = small / 100, large / 1000
    assert large > 5 * small
    assert per_field_large <= 1.2 * per_field_small, (small, large)
