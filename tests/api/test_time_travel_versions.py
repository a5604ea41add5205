"""The catalog with validity ranges (lakeledger/projections/catalog_versions.py), which past prefixes are served from,
reads exactly as the pure fold of the log (lakeledger/projections/as_of.py, the reference) at every position of a varied
log: creates, commits, renames across namespaces, soft drops and undrops of tables, views and a namespace with its
contents, a namespace moved (with a soft-dropped table and a soft-dropped namespace in it, undropped after the move)
and moved again, namespace properties set and removed, a view replaced, a table dropped for good in one warehouse and
registered into another, and one that expired in one warehouse, was registered into the other and was dropped and
undropped there. Each position is read over HTTP (list pages followed token by token, namespaces, loads) and compared
with the fold's answer for both warehouses."""

import uuid
from uuid import UUID

import psycopg
import pytest
from support import SCHEMA, wait_until

from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.settings import PostgresSettings
from lakeledger.projections.as_of import TOPICS, WarehouseAsOf

VIEW_SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}
VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1_700_000_000_000,
                "summary": {"engine-name": "test"}, "default-namespace": ["sales"],
                "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}
SOFT = {"type": "soft", "expiration-seconds": 3600}
KEEP = {"purgeRequested": "false"}


def _ok(r, status=200):
    assert r.status_code == status, r.text
    return r.json() if r.content else None


def _warehouse(client, location, **extra) -> dict:
    name = f"wh-{uuid.uuid4().hex[:12]}"
    body = _ok(client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{location}"}, **extra}), 201)
    return {"name": name, "id": body["warehouse-id"], "prefix": f"/catalog/v1/{body['warehouse-id']}"}


@pytest.fixture
def varied(client, tmp_path, db):
    a = _warehouse(client, tmp_path / "a", **{"delete-profile": SOFT})
    pa = a["prefix"]
    first = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]

    def table(prefix, namespace, name):
        return _ok(client.post(f"{prefix}/namespaces/{namespace}/tables", json={"name": name, "schema": SCHEMA}))

    def commit(prefix, path, **props):
        _ok(client.post(f"{prefix}/namespaces/{path}", json={
            "requirements": [], "updates": [{"action": "set-properties", "updates": props}]}))

    def undrop(warehouse, typ, id_):
        _ok(client.post(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars/undrop",
                        json={"targets": [{"type": typ, "id": str(id_)}]}), 204)

    for ns in (["sales"], ["sales", "eu"], ["tmp"]):
        _ok(client.post(f"{pa}/namespaces", json={"namespace": ns, "properties": {"owner": "ann", "k": "v"}}))
    t2 = table(pa, "sales", "t2")["metadata"]["table-uuid"]
    for name in ("t1", "t3"):
        table(pa, "sales" if name == "t1" else "sales%1Feu", name)
    _ok(client.post(f"{pa}/namespaces/sales/views", json={
        "name": "v", "schema": VIEW_SCHEMA, "view-version": VIEW_VERSION, "properties": {}}))
    # a generic table: created, renamed into sales.eu, soft-dropped and undropped there
    generic = f"/lakekeeper/v1/{a['id']}"
    g = _ok(client.post(f"{generic}/namespaces/sales/generic-tables", json={"name": "g", "format": "lance"}))
    _ok(client.post(f"{generic}/generic-tables/rename", json={"source": {"namespace": ["sales"], "name": "g"},
                                                             "destination": {"namespace": ["sales", "eu"],
                                                                             "name": "g2"}}), 204)
    _ok(client.delete(f"{generic}/namespaces/sales%1Feu/generic-tables/g2", params=KEEP), 204)
    g_id = db.execute("SELECT id FROM ll_tabulars WHERE typ = 'generic-table' AND location = %s",
                      (g["table"]["base-location"],)).fetchone()[0]
    undrop(a, "generic-table", g_id)
    commit(pa, "sales/tables/t1", a="1")
    commit(pa, "sales/tables/t1", a="2")
    _ok(client.post(f"{pa}/tables/rename", json={"source": {"namespace": ["sales"], "name": "t1"},
                                                 "destination": {"namespace": ["sales", "eu"], "name": "t1b"}}), 204)
    commit(pa, "sales%1Feu/tables/t1b", a="3")
    _ok(client.post(f"{pa}/namespaces/sales/properties", json={"updates": {"owner": "bob"}, "removals": ["k"]}))
    _ok(client.post(f"{pa}/namespaces/sales/views/v", json={"updates": [
        {"action": "set-properties", "updates": {"comment": "second"}}]}))
    _ok(client.delete(f"{pa}/namespaces/sales/tables/t2", params=KEEP), 204)
    table(pa, "sales", "t2")  # the name taken by another table while the first is in the recycle bin
    _ok(client.delete(f"{pa}/namespaces/sales/tables/t2", params=KEEP), 204)
    undrop(a, "table", t2)
    _ok(client.delete(f"{pa}/namespaces/sales/views/v"), 204)
    tmp = _namespace_id(db, a["id"], ["tmp"])
    table(pa, "tmp", "x")
    _ok(client.delete(f"{pa}/namespaces/tmp", params={"recursive": "true", "purge": "false"}), 204)
    undrop(a, "namespace", tmp)

    # dropped for good in c (files kept), c deleted, b made at c's location and the table registered into it under
    # another name, dropped there and undropped
    c = _warehouse(client, tmp_path / "c", **{"drop-purge-default": "keep"})
    pc = c["prefix"]
    _ok(client.post(f"{pc}/namespaces", json={"namespace": ["sales"]}))
    r = table(pc, "sales", "r")
    commit(pc, "sales/tables/r", c="1")
    r_location = _ok(client.get(f"{pc}/namespaces/sales/tables/r"))["metadata-location"]
    _ok(client.delete(f"{pc}/namespaces/sales/tables/r"), 204)
    _ok(client.delete(f"{pc}/namespaces/sales"), 204)
    _ok(client.delete(f"/management/v1/warehouse/{c['id']}"), 204)
    b = _warehouse(client, tmp_path / "c", **{"delete-profile": SOFT})
    pb = b["prefix"]
    _ok(client.post(f"{pb}/namespaces", json={"namespace": ["sales"]}))
    _ok(client.post(f"{pb}/namespaces/sales/register", json={"name": "r2", "metadata-location": r_location}))
    _ok(client.delete(f"{pb}/namespaces/sales/tables/r2", params=KEEP), 204)
    undrop(b, "table", r["metadata"]["table-uuid"])
    commit(pb, "sales/tables/r2", b="1")

    # expired in a, registered again there under another name, dropped and undropped
    _ok(client.post(f"/management/v1/warehouse/{a['id']}/delete-profile",
                    json={"delete-profile": {"type": "soft", "expiration-seconds": 1}}))
    e = table(pa, "sales", "e")
    _ok(client.delete(f"{pa}/namespaces/sales/tables/e", params=KEEP), 204)
    wait_until(lambda: db.execute("SELECT 1 FROM lakeledger_events WHERE originator_id = %s AND topic LIKE %s",
                                  (e["metadata"]["table-uuid"], "%.Expired")).fetchone(), 30, "the expiry")
    _ok(client.post(f"/management/v1/warehouse/{a['id']}/delete-profile", json={"delete-profile": SOFT}))
    _ok(
        client.post(f"{pa}/namespaces/sales/register", json={"name": "e2", "metadata-location": e["metadata-location"]})
    )
    _ok(client.delete(f"{pa}/namespaces/sales/tables/e2", params=KEEP), 204)
    undrop(a, "table", e["metadata"]["table-uuid"])
    commit(pa, "sales/tables/e2", a="4")

    # tmp (with x, a soft-dropped y and a soft-dropped namespace sub holding z) moved under sales as arch, y and sub
    # undropped there (under the new path), x committed to, then tmp moved back to the root as arch
    _ok(client.post(f"{pa}/namespaces", json={"namespace": ["tmp", "sub"]}))
    table(pa, "tmp%1Fsub", "z")
    y = table(pa, "tmp", "y")["metadata"]["table-uuid"]
    _ok(client.delete(f"{pa}/namespaces/tmp/tables/y", params=KEEP), 204)
    sub = _namespace_id(db, a["id"], ["tmp", "sub"])
    _ok(client.delete(f"{pa}/namespaces/tmp%1Fsub", params={"recursive": "true", "purge": "false"}), 204)
    move = f"/management/v1/warehouse/{a['id']}/namespace/{tmp}/move"
    _ok(client.post(move, json={"destination": ["sales", "arch"]}))
    undrop(a, "table", y)
    undrop(a, "namespace", sub)
    commit(pa, "sales%1Farch/tables/x", a="5")
    _ok(client.post(move, json={"destination": ["arch"]}))
    last = db.execute("SELECT max(notification_id) FROM lakeledger_events").fetchone()[0]
    return {"warehouses": [a, b], "deleted": c, "first": first, "last": last}


def _namespace_id(db, warehouse_id, path) -> UUID:
    return db.execute("SELECT id FROM ll_namespaces WHERE warehouse_id = %s AND path = %s",
                      (warehouse_id, path)).fetchone()[0]


def _pages(client, url: str, key: str, **params) -> list:
    """Every item of a list, two a page, following the page tokens."""
    items, token = [], None
    while True:
        body = _ok(client.get(url, params={"pageSize": 2, **params, **({"pageToken": token} if token else {})}))
        items += body[key]
        token = body.get("next-page-token")
        if not token:
            return items


# each kind: its path under a namespace, its read model's word, and the API that serves it (by the catalog prefix)
KINDS = (("tables", "table", "/catalog/v1"), ("views", "view", "/catalog/v1"),
         ("generic-tables", "generic-table", "/lakekeeper/v1"))


def _read_over_http(client, prefix: str, paths: set, names: set) -> dict:
    """What the API shows under a past prefix: the namespace tree, each known path's properties, each namespace's
    tables, views and generic tables, and each known name's metadata file (a generic table's location)."""
    seen = {"tree": {}, "properties": {}, "lists": {}, "loads": {}}

    def walk(parent: list[str]):
        params = {"parent": "\x1f".join(parent)} if parent else {}
        children = [tuple(p) for p in _pages(client, f"/catalog/v1/{prefix}/namespaces", "namespaces", **params)]
        seen["tree"][tuple(parent)] = children
        for child in children:
            walk(list(child))

    walk([])
    for path in paths:
        r = client.get(f"/catalog/v1/{prefix}/namespaces/{'%1F'.join(path)}")
        assert r.status_code in (200, 404), r.text
        if r.status_code == 200:
            # the location every answer adds (the warehouse's default for the path) is not part of the state
            properties = {k: v for k, v in r.json()["properties"].items() if k != "location"}
            seen["properties"][path] = (r.json()["namespace-uuid"], properties)
        else:
            seen["properties"][path] = None
    for children in list(seen["tree"].values()):
        for path in children:
            for kind, _, api in KINDS:
                listed = _pages(client, f"{api}/{prefix}/namespaces/{'%1F'.join(path)}/{kind}", "identifiers")
                seen["lists"][(path, kind)] = [t["name"] for t in listed]
    for path, name, kind in names:
        api = next(api for k, _, api in KINDS if k == kind)
        r = client.get(f"{api}/{prefix}/namespaces/{'%1F'.join(path)}/{kind}/{name}")
        assert r.status_code in (200, 404), r.text
        # a generic table has no metadata file: its location is what a load shows of where it is
        body = r.json() if r.status_code == 200 else None
        where = None if body is None else body["table"]["base-location"] if kind == "generic-tables" \
            else body["metadata-location"]
        seen["loads"][(path, name, kind)] = where
    return seen


def _fold_answers(state: WarehouseAsOf, paths: set, names: set) -> dict:
    """The same questions, answered by the fold."""
    want = {"tree": {}, "properties": {}, "lists": {}, "loads": {}}

    def walk(parent: list[str]):
        children = [tuple(p) for p in state.child_namespaces(parent, None, None)]
        want["tree"][tuple(parent)] = children
        for child in children:
            walk(list(child))

    walk([])
    for path in paths:
        ns = state.namespace(list(path))
        want["properties"][path] = (str(ns["id"]), ns["properties"]) if ns else None
    for children in list(want["tree"].values()):
        for path in children:
            ns_id = state.namespace(list(path))["id"]
            for kind, typ, _ in KINDS:
                want["lists"][(path, kind)] = state.tabular_names(ns_id, typ, None, None)
    for path, name, kind in names:
        typ = next(typ for k, typ, _ in KINDS if k == kind)
        found = state.tabular(typ, list(path), name)
        want["loads"][(path, name, kind)] = (found[2] if kind == "generic-tables" else found[1]) if found else None
    return want


def _ever_held(events: list, varied: dict, names: set) -> set:
    """Of the names to load, those the fold shows at some position in some warehouse, each under every kind (so that
    a table's name loaded as a view is asked too), and one name never held: the rest are 404 at every position and
    would only repeat that answer."""
    states = [WarehouseAsOf(UUID(w["id"])) for w in varied["warehouses"]]
    held = set()
    for stored in events:
        for state in states:
            state.apply(stored.position, stored.event)
            if state.exists:
                held |= {(path, name) for path, name, kind in names
                         if state.tabular(next(t for k, t, _ in KINDS if k == kind), list(path), name)}
    assert len(held) > 10, held
    return {(path, name, kind) for path, name in held | {(("sales",), "never")} for kind, _, _ in KINDS}


def test_every_position_reads_as_the_fold_does(client, varied, pg_url):
    log = EventLog(PostgresSettings.from_url(pg_url), pool_size=1)
    try:
        states = {w["id"]: WarehouseAsOf(UUID(w["id"])) for w in varied["warehouses"]}
        events = []
        after = 0
        while batch := log.read(after=after, limit=1000, upto=varied["last"], topics=TOPICS):
            events += batch
            after = batch[-1].position
    finally:
        log.close()
    moved = (("tmp", "sub"), ("sales", "arch"), ("sales", "arch", "sub"), ("arch",), ("arch", "sub"))
    paths = {("sales",), ("sales", "eu"), ("tmp",), ("nope",), *moved}
    names = {(path, name, kind) for path in (("sales",), ("sales", "eu"), ("tmp",))
             for name in ("t1", "t1b", "t2", "t3", "v", "x", "r2", "e", "e2", "g", "g2")
             for kind in ("tables", "views", "generic-tables")}
    names |= {(path, name, "tables") for path in (("tmp",), *moved) for name in ("x", "y", "z")}
    names = _ever_held(events, varied, names)
    compared = {w["id"]: 0 for w in varied["warehouses"]}
    unchanged_since = {w["id"]: (None, 0) for w in varied["warehouses"]}
    shown = set()
    pending = iter(events)
    upcoming = next(pending, None)
    # a position reads as the end of the append that wrote it (one append time per append, migration 0028)
    with psycopg.connect(pg_url) as conn:
        ends = dict(conn.execute(
            "SELECT notification_id, max(notification_id) OVER (PARTITION BY appended_at) FROM lakeledger_events"
            " WHERE notification_id BETWEEN %s AND %s", (varied["first"], varied["last"])).fetchall())
    assert any(end > position for position, end in ends.items())  # some appends wrote several events
    for asked in range(varied["first"], varied["last"] + 1):
        position = ends.get(asked, asked)
        while upcoming is not None and upcoming.position <= position:
            for state in states.values():
                state.apply(upcoming.position, upcoming.event)
            upcoming = next(pending, None)
        for w in varied["warehouses"]:
            state = states[w["id"]]
            config = client.get("/catalog/v1/config", params={"warehouse": f"{w['name']}@seq:{asked}"})
            if not state.exists:
                assert config.status_code == 404, (asked, config.text)
                continue
            prefix = _ok(config)["overrides"]["prefix"]
            assert prefix == f"{w['id']}@seq:{position}"
            want = _fold_answers(state, paths, names)
            # a position that changed nothing of this warehouse (another's event) is read one time in four: each read
            # is some 150 requests, and the versions of an unchanged warehouse are the same rows at every position
            last_want, skipped = unchanged_since[w["id"]]
            if want == last_want and skipped < 3:
                unchanged_since[w["id"]] = (want, skipped + 1)
                continue
            unchanged_since[w["id"]] = (want, 0)
            got = _read_over_http(client, prefix, paths, names)
            assert got == want, (w["name"], position)
            compared[w["id"]] += 1
            shown |= {key for key, location in got["loads"].items() if location}
    # a deleted warehouse is not read in the past either (its row of now is gone): as with the fold before
    gone = varied["deleted"]["id"]
    assert client.get(f"/catalog/v1/{gone}@seq:{varied['last']}/namespaces").status_code == 404
    # the log really went through what the test is about: both warehouses compared at many positions, and every
    # name (views and the registered tables included) shown at some position
    assert all(n > 10 for n in compared.values()), compared
    assert {(p, n) for p, n, _ in shown} >= {(("sales",), "t1"), (("sales", "eu"), "t1b"), (("sales",), "t2"),
                                             (("sales", "eu"), "t3"), (("sales",), "v"), (("tmp",), "x"),
                                             (("sales",), "r2"), (("sales",), "e"), (("sales",), "e2"),
                                             (("sales",), "g"), (("sales", "eu"), "g2"),
                                             (("tmp", "sub"), "z"), (("sales", "arch"), "x"), (("sales", "arch"), "y"),
                                             (("sales", "arch", "sub"), "z"), (("arch",), "y"), (("arch", "sub"), "z")}


def test_a_rebuild_writes_the_versions_the_projection_wrote_event_by_event(varied, pg_url, db):
    """The rebuild's writer keeps every version in memory until it ends and writes it once by COPY
    (lakeledger/projections/catalog_versions_rebuild.py): over this varied log (renames, soft and final drops, undrops
    of tables and a namespace, properties set and removed, a view replaced, registrations across warehouses) it writes
    the rows the projection's statements wrote one event at a time."""
    from psycopg_pool import ConnectionPool

    from lakeledger.projections.catalog_versions import TABLES, CatalogVersionsProjection
    from lakeledger.projections.driver import ProjectionDriver

    def snapshot() -> dict[str, list]:
        return {table: sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr) for table in TABLES}

    log = EventLog(PostgresSettings.from_url(pg_url), pool_size=1)
    try:
        with ConnectionPool(pg_url, min_size=1, max_size=2, open=True) as pool:
            runner = ProjectionDriver(CatalogVersionsProjection(), log, pool)
            runner.caught_up()
            live = snapshot()
            assert runner.rebuild() >= varied["last"]
            rebuilt = snapshot()
    finally:
        log.close()
    assert all(live[table] for table in TABLES)
    assert [t for t in TABLES if rebuilt[t] != live[t]] == []
