"""Moving and renaming namespaces (``POST /management/v1/warehouse/{id}/namespace/{namespace_id}/move``, Lakekeeper
0.14's endpoint) over HTTP against a real server and Postgres: renames, moves under another parent and to the root,
refusals that append nothing, soft-dropped contents brought back under the new path, races against a create in the
destination, a drop of the source and a create inside it (two API processes, threads released together), time travel
before and after, the history, a rebuild of every read model, and pyiceberg finding the moved tables."""

import json
import os
import subprocess
import sys
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import orjson
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField
from support import SCHEMA, VIEW_VERSION
from test_rebuild import _caught_up, _rebuild, _snapshot

from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.settings import PostgresSettings
from lakeledger.sinks.cloudevent_messages import WAREHOUSES_OF, CloudEventMessages

ROUNDS = 16
SOFT = {"type": "soft", "expiration-seconds": 3600}


def _ok(r, status=200):
    assert r.status_code == status, r.text
    return r.json() if r.content else None


def _error(r, status, type_):
    assert r.status_code == status, r.text
    body = r.json()["error"]
    assert (body["code"], body["type"]) == (status, type_), body
    return body["message"]


def _path(*levels: str) -> str:
    return "%1F".join(levels)


class Tree:
    """Shorthands for one warehouse's namespaces, tables and views."""

    def __init__(self, client, warehouse):
        self.client, self.wh, self.p = client, warehouse, warehouse["prefix"]

    def namespace(self, *levels: str, **properties: str) -> str:
        return _ok(self.client.post(f"{self.p}/namespaces", json={"namespace": list(levels),
                                                                 "properties": properties}))["namespace-uuid"]

    def namespace_id(self, *levels: str) -> str:
        return _ok(self.client.get(f"{self.p}/namespaces/{_path(*levels)}"))["namespace-uuid"]

    def table(self, levels: tuple[str, ...], name: str) -> dict:
        return _ok(self.client.post(f"{self.p}/namespaces/{_path(*levels)}/tables",
                                    json={"name": name, "schema": SCHEMA}))

    def view(self, levels: tuple[str, ...], name: str) -> dict:
        return _ok(self.client.post(f"{self.p}/namespaces/{_path(*levels)}/views", json={
            "name": name, "schema": SCHEMA, "view-version": {**VIEW_VERSION, "default-namespace": list(levels)}}))

    def move(self, namespace_id: str, destination, client=None, headers=None, **extra) -> httpx.Response:
        return (client or self.client).post(
            f"/management/v1/warehouse/{self.wh['id']}/namespace/{namespace_id}/move",
            json={"destination": destination, **extra}, headers=headers)

    def children(self, *parent: str) -> list[list[str]]:
        params = {"parent": "\x1f".join(parent)} if parent else {}
        return _ok(self.client.get(f"{self.p}/namespaces", params=params))["namespaces"]

    def names(self, levels: tuple[str, ...], kind: str = "tables") -> list[str]:
        return [i["name"] for i in _ok(self.client.get(f"{self.p}/namespaces/{_path(*levels)}/{kind}"))["identifiers"]]

    def load(self, levels: tuple[str, ...], name: str, kind: str = "tables") -> httpx.Response:
        return self.client.get(f"{self.p}/namespaces/{_path(*levels)}/{kind}/{name}")


@pytest.fixture
def tree(client, warehouse) -> Tree:
    return Tree(client, warehouse)


def _head(db) -> int:
    return db.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]


def _kind(topic: str) -> str:
    """An event's class as "Tabular.Moved", whether a table's or a view's event is recorded under its own class or
    under Tabular's (where the method that makes it lives)."""
    kind = topic.rsplit(":", 1)[-1]
    return "Tabular." + kind.partition(".")[2] if kind.startswith(("Table.", "View.")) and "Moved" in kind else kind


def _appended_by(db, position: int, request_id: str) -> list[tuple[str, str]]:
    """(kind, transaction) of each event the request ``request_id`` appended after ``position``: the log is shared,
    and a worker may append for another test meanwhile (a purge's Tabular.Purged once did)."""
    return [(_kind(t), xmin) for t, xmin in db.execute(
        "SELECT topic, xmin::text FROM lakeledger_events WHERE notification_id > %s"
        " AND position(convert_to(%s, 'UTF8') IN state) > 0 ORDER BY notification_id", (position, request_id))]


def test_a_rename_keeps_ids_locations_and_contents(tree, db):
    ns_id = tree.namespace("sales", owner="ann")
    table = tree.table(("sales",), "orders")
    view = tree.view(("sales",), "recent")
    start = _head(db)
    request_id = f"move-{uuid.uuid4()}"

    moved = _ok(tree.move(ns_id, ["revenue"], headers={"x-request-id": request_id}))

    assert moved == {"namespace": ["revenue"], "namespace-id": ns_id, "parent-namespace-id": None}
    assert tree.children() == [["revenue"]]
    loaded = _ok(tree.client.get(f"{tree.p}/namespaces/revenue"))
    assert loaded["namespace-uuid"] == ns_id and loaded["properties"]["owner"] == "ann"
    assert tree.names(("revenue",)) == ["orders"] and tree.names(("revenue",), "views") == ["recent"]
    after = _ok(tree.load(("revenue",), "orders"))
    assert after["metadata"]["table-uuid"] == table["metadata"]["table-uuid"]
    assert (after["metadata-location"], after["metadata"]["location"]) == (table["metadata-location"],
                                                                           table["metadata"]["location"])
    assert _ok(tree.load(("revenue",), "recent", "views"))["metadata"]["view-uuid"] == view["metadata"]["view-uuid"]
    _error(tree.load(("sales",), "orders"), 404, "NoSuchTableException")
    _error(tree.client.get(f"{tree.p}/namespaces/sales"), 404, "NoSuchNamespaceException")
    # one append: the two claims, the namespace, the table and the view, written by one transaction
    appended = _appended_by(db, start, request_id)
    assert sorted(kind for kind, _ in appended) == ["NameClaim.Created", "NameClaim.Released", "Namespace.Moved",
                                                    "Tabular.Moved", "Tabular.Moved"]
    assert len({transaction for _, transaction in appended}) == 1
    # commits go on under the new name; the old name is free for a new namespace
    _ok(tree.client.post(f"{tree.p}/namespaces/revenue/tables/orders", json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}))
    assert tree.namespace("sales") != ns_id


def test_a_move_under_another_parent_and_back_to_the_root(tree):
    tree.namespace("a")
    tree.namespace("x")
    b = tree.namespace("a", "b")
    tree.namespace("a", "b", "c")
    t = tree.table(("a", "b", "c"), "t")["metadata"]["table-uuid"]

    moved = _ok(tree.move(b, ["x", "y"]))

    assert moved == {"namespace": ["x", "y"], "namespace-id": b, "parent-namespace-id": tree.namespace_id("x")}
    assert tree.children("a") == [] and tree.children("x") == [["x", "y"]]
    assert tree.children("x", "y") == [["x", "y", "c"]]
    assert _ok(tree.load(("x", "y", "c"), "t"))["metadata"]["table-uuid"] == t

    root = _ok(tree.move(b, ["y"]))
    assert root == {"namespace": ["y"], "namespace-id": b, "parent-namespace-id": None}
    assert tree.children() == [["a"], ["x"], ["y"]] and tree.children("y") == [["y", "c"]]
    assert _ok(tree.load(("y", "c"), "t"))["metadata"]["table-uuid"] == t
    assert _ok(tree.move(b, ["y"])) == root  # where it is: nothing appended, the same answer


def test_refusals_are_clear_and_append_nothing(tree, log_length):
    a = tree.namespace("a")
    tree.namespace("a", "b")
    tree.namespace("taken")
    before = log_length()

    assert "non-empty" in _error(tree.move(a, []), 400, "IllegalArgumentException")
    assert "inside it" in _error(tree.move(a, ["a", "b", "a"]), 400, "BadRequestException")
    _error(tree.move(a, ["taken"]), 409, "AlreadyExistsException")
    _error(tree.move(a, ["missing", "a"]), 404, "NoSuchNamespaceException")
    _error(tree.move(str(uuid.uuid4()), ["z"]), 404, "NoSuchNamespaceException")
    _error(tree.move(a, ["z"], unknown=1), 400, "BadRequestException")
    _error(tree.move(a, "z"), 400, "BadRequestException")
    _error(tree.move(a, ["z+1"]), 400, "IllegalArgumentException")
    r = tree.client.post(f"/management/v1/warehouse/{uuid.uuid4()}/namespace/{a}/move", json={"destination": ["z"]})
    _error(r, 404, "NoSuchWarehouseException")
    assert log_length() == before


def test_a_protected_namespace_moves_only_with_force(tree, log_length):
    a = tree.namespace("a")
    _ok(tree.client.post(f"/management/v1/warehouse/{tree.wh['id']}/namespace/{a}/protection",
                         json={"protected": True}))
    before = log_length()
    assert "force=true" in _error(tree.move(a, ["b"]), 409, "NamespaceProtected")
    assert log_length() == before
    assert _ok(tree.move(a, ["b"], force=True))["namespace"] == ["b"]
    protection = _ok(tree.client.get(f"/management/v1/warehouse/{tree.wh['id']}/namespace/{a}/protection"))
    assert protection["protected"] is True  # the protection moves with it


def test_soft_dropped_contents_come_back_under_the_new_path(client, tree):
    _ok(client.post(f"/management/v1/warehouse/{tree.wh['id']}/delete-profile", json={"delete-profile": SOFT}))
    a = tree.namespace("a")
    tree.namespace("a", "old")
    gone = tree.table(("a",), "gone")["metadata"]["table-uuid"]
    old = tree.namespace_id("a", "old")
    inner = tree.table(("a", "old"), "inner")["metadata"]["table-uuid"]
    _ok(client.delete(f"{tree.p}/namespaces/a/tables/gone"), 204)
    _ok(client.delete(f"{tree.p}/namespaces/{_path('a', 'old')}", params={"recursive": "true"}), 204)

    _ok(tree.move(a, ["z"]))

    binned = _ok(client.get(f"/management/v1/warehouse/{tree.wh['id']}/deleted-tabulars"))["tabulars"]
    assert {(t["name"], tuple(t["namespace"])) for t in binned} == {("gone", ("z",)), ("inner", ("z", "old"))}
    for target in ({"type": "table", "id": gone}, {"type": "namespace", "id": old}):
        _ok(client.post(f"/management/v1/warehouse/{tree.wh['id']}/deleted-tabulars/undrop",
                        json={"targets": [target]}), 204)
    assert tree.children("z") == [["z", "old"]]
    assert _ok(tree.load(("z",), "gone"))["metadata"]["table-uuid"] == gone
    assert _ok(tree.load(("z", "old"), "inner"))["metadata"]["table-uuid"] == inner


def test_time_travel_shows_the_tree_before_and_after_the_move(tree, db):
    b = tree.namespace("a")
    tree.namespace("x")
    t = tree.table(("a",), "t")
    before = _head(db)
    _ok(tree.move(b, ["x", "a2"]))
    after = _head(db)

    def past(position: int) -> str:
        config = _ok(tree.client.get("/catalog/v1/config", params={"warehouse": f"{tree.wh['name']}@seq:{position}"}))
        return f"/catalog/v1/{config['overrides']['prefix']}"

    then, now = past(before), past(after)
    assert _ok(tree.client.get(f"{then}/namespaces"))["namespaces"] == [["a"], ["x"]]
    assert _ok(tree.client.get(f"{then}/namespaces", params={"parent": "x"}))["namespaces"] == []
    assert _ok(tree.client.get(f"{then}/namespaces/a/tables/t"))["metadata-location"] == t["metadata-location"]
    assert _ok(tree.client.get(f"{now}/namespaces"))["namespaces"] == [["x"]]
    assert _ok(tree.client.get(f"{now}/namespaces", params={"parent": "x"}))["namespaces"] == [["x", "a2"]]
    moved = _ok(tree.client.get(f"{now}/namespaces/{_path('x', 'a2')}/tables/t"))
    assert moved["metadata-location"] == t["metadata-location"]
    assert tree.client.get(f"{now}/namespaces/a/tables/t").status_code == 404
    # a position inside the move's append (its Namespace.Moved, before its Tabular.Moved) reads the whole move: the
    # half-moved tree never existed for any reader
    assert after - before >= 2
    for inside in range(before + 1, after + 1):
        assert past(inside) == now
    direct = f"/catalog/v1/{tree.wh['id']}@seq:{before + 1}"
    assert _ok(tree.client.get(f"{direct}/namespaces/{_path('x', 'a2')}/tables/t"))["metadata-location"] == \
        t["metadata-location"]


def test_an_append_has_one_append_time(tree, db):
    b = tree.namespace("m")
    tree.table(("m",), "t1")
    tree.table(("m",), "t2")
    before = _head(db)
    _ok(tree.move(b, ["m2"]))
    times = db.execute("SELECT DISTINCT appended_at FROM lakeledger_events WHERE notification_id > %s",
                       (before,)).fetchall()
    assert len(times) == 1  # the move, its two tables' moves (and the request's idempotency record if any)
    later = tree.namespace("other")
    assert later
    assert db.execute("SELECT count(DISTINCT appended_at) FROM lakeledger_events WHERE notification_id > %s",
                      (before,)).fetchone()[0] == 2


def test_the_history_says_what_moved_where(tree):
    a = tree.namespace("a")
    tree.namespace("a", "b")
    table = tree.table(("a", "b"), "t")["metadata"]["table-uuid"]
    tree.namespace("x")
    headers = {"x-request-id": f"move-{uuid.uuid4()}"}
    _ok(tree.move(a, ["x", "a"], headers=headers))

    events = _ok(tree.client.get(f"/management/v1/warehouse/{tree.wh['id']}/history",
                                 params={"since": "2000-01-01T00:00:00Z", "pageSize": 100}))["events"]
    moves = [e for e in events if e["type"].endswith(".moved")]
    assert [(e["type"], e["entity"]["name"], e["summary"]) for e in moves] == [
        ("namespace.moved", ["x", "a"], "moved namespace a to x.a"),
        ("namespace.moved", ["x", "a", "b"], "moved namespace a.b to x.a.b (a namespace above it moved)"),
        ("table.moved", ["x", "a", "b", "t"], "moved table a.b.t to x.a.b.t (its namespace moved)")]
    assert {e["request-id"] for e in moves} == {headers["x-request-id"]}
    assert moves[2]["entity"]["id"] == table
    # listed under the namespace it left and the one it entered
    for levels in (["a", "b"], ["x", "a", "b"]):
        found = _ok(tree.client.get(f"/management/v1/warehouse/{tree.wh['id']}/history",
                                    params={"namespace": "\x1f".join(levels), "type": "table.moved"}))["events"]
        assert [e["entity"]["id"] for e in found] == [table]


def test_pyiceberg_lists_and_loads_the_moved_tables_by_their_new_names(server, tree):
    catalog = RestCatalog("moves", uri=f"{server.url}/catalog", warehouse=tree.wh["name"])
    catalog.create_namespace(("raw",))
    catalog.create_namespace(("raw", "daily"))
    catalog.create_namespace(("curated",))
    created = catalog.create_table(("raw", "daily", "events"),
                                   schema=Schema(NestedField(1, "id", LongType(), required=True)))
    with created.transaction() as tx:
        tx.set_properties(owner="ana")

    _ok(tree.move(tree.namespace_id("raw"), ["curated", "from_raw"]))

    assert catalog.list_namespaces(("curated",)) == [("curated", "from_raw")]
    assert catalog.list_tables(("curated", "from_raw", "daily")) == [("curated", "from_raw", "daily", "events")]
    loaded = catalog.load_table(("curated", "from_raw", "daily", "events"))
    assert loaded.metadata.table_uuid == created.metadata.table_uuid
    assert loaded.properties["owner"] == "ana" and loaded.location() == created.location()
    with loaded.transaction() as tx:
        tx.set_properties(moved="yes")
    assert catalog.load_table(("curated", "from_raw", "daily", "events")).properties["moved"] == "yes"
    assert not catalog.table_exists(("raw", "daily", "events"))


def test_a_rebuild_after_moves_gives_the_same_read_models(client, tree, db, pg_url, data_dir):
    """Moves of a tree with soft-dropped parts, a rename, an undrop after the move: the read models the projections
    wrote event by event equal what a rebuild from the log writes."""
    _ok(client.post(f"/management/v1/warehouse/{tree.wh['id']}/delete-profile", json={"delete-profile": SOFT}))
    a = tree.namespace("a")
    tree.namespace("a", "b")
    tree.namespace("x")
    tree.table(("a", "b"), "t")
    gone = tree.table(("a", "b"), "gone")["metadata"]["table-uuid"]
    _ok(client.delete(f"{tree.p}/namespaces/{_path('a', 'b')}/tables/gone"), 204)
    _ok(tree.move(a, ["x", "a"]))
    _ok(tree.move(tree.namespace_id("x"), ["y"]))
    _ok(client.post(f"/management/v1/warehouse/{tree.wh['id']}/deleted-tabulars/undrop",
                    json={"targets": [{"type": "table", "id": gone}]}), 204)
    assert tree.names(("y", "a", "b")) == ["gone", "t"]
    _caught_up(db)
    live = _snapshot(db)
    _rebuild(pg_url, data_dir)
    rebuilt = _snapshot(db)
    assert {t: (len(live[t]), len(rebuilt[t])) for t in live if rebuilt[t] != live[t]} == {}
    assert tree.names(("y", "a", "b")) == ["gone", "t"]


def test_sinks_carry_the_move(tree, db, pg_url, data_dir, tmp_path):
    """``lakeledger replay`` (the JSON lines sink) and the CloudEvents the publishers send (NATS, Kafka) carry each
    event of a move, with its type, actor, request id and data; the CloudEvents name the warehouse."""
    a = tree.namespace("a")
    tree.namespace("x")
    table = tree.table(("a",), "t")["metadata"]["table-uuid"]
    start = _head(db)
    request_id = f"move-{uuid.uuid4()}"
    _ok(tree.move(a, ["x", "a"], headers={"x-request-id": request_id}))

    out = tmp_path / "moves.jsonl"
    env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "replay", "--sink", "jsonl", "--out", str(out),
                           "--from", f"seq:{start + 1}"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_bytes().split(b"\n")[:-1]]
    moved = [e for e in lines if e["type"].endswith(".moved")]
    assert [(e["type"], e["entity_id"]) for e in moved] == [("namespace.moved", a), ("table.moved", table)]
    assert {(e["actor"], e["request_id"]) for e in moved} == {("anonymous", request_id)}
    assert (moved[0]["data"]["from_path"], moved[0]["data"]["to_path"]) == (["a"], ["x", "a"])
    assert (moved[1]["data"]["from_namespace"], moved[1]["data"]["to_namespace"]) == (["a"], ["x", "a"])

    log = EventLog(PostgresSettings.from_url(pg_url), pool_size=1)
    try:
        batch = [n for n in log.read(start, 100) if n.event.request_id == request_id]
    finally:
        log.close()
    messages = CloudEventMessages(uuid.UUID(int=0))
    messages.learn(db.execute(WAREHOUSES_OF, (messages.unknown(batch),) * 2).fetchall())
    sent = {kind: json.loads(body) for _, kind, body in (messages.message(n) for n in batch)}
    assert set(sent) == {"name-claim.created", "name-claim.released", "namespace.moved", "table.moved"}
    for kind in ("namespace.moved", "table.moved"):
        event = sent[kind]
        assert event["type"] == f"io.lakeledger.{kind}" and event["warehouseid"] == tree.wh["id"]
        assert (event["actor"], event["requestid"]) == ("anonymous", request_id)
    assert sent["table.moved"]["data"]["to_namespace"] == ["x", "a"]


# ---- races ---------------------------------------------------------------------------------------------------------

class Racer:
    """Releases two requests at once, one on each API process, each with a request id of its own."""

    def __init__(self, urls: list[str], db):
        self.urls, self.db = urls, db
        self.outcomes: Counter = Counter()

    def race(self, *calls) -> list[tuple[str, int]]:
        barrier = threading.Barrier(len(calls))

        def run(i: int) -> tuple[str, int]:
            request_id = f"race-{uuid.uuid4()}"
            with httpx.Client(base_url=self.urls[i % len(self.urls)], timeout=60) as c:
                c.get("/health")
                barrier.wait()
                return request_id, calls[i](c, {"x-request-id": request_id}).status_code

        with ThreadPoolExecutor(len(calls)) as pool:
            answers = list(pool.map(run, range(len(calls))))
        self.outcomes[tuple(status for _, status in answers)] += 1
        return answers

    def appended_by(self, request_id: str, since: int) -> list[str]:
        """The classes of the events the request appended (each event records its request id)."""
        rows = self.db.execute("SELECT topic, state FROM lakeledger_events WHERE notification_id > %s"
                               " ORDER BY notification_id", (since,)).fetchall()
        return [_kind(topic) for topic, state in rows
                if orjson.loads(bytes(state)).get("request_id") == request_id]


@pytest.fixture
def racer(server, second_server, db, request):
    r = Racer([server.url, second_server.url], db)
    yield r
    print(f"\n{request.node.name}: {dict(r.outcomes)}")


def _read_model_paths(db, warehouse_id: str) -> dict[str, list]:
    return {str(i): p for i, p in db.execute("SELECT id, path FROM ll_namespaces WHERE warehouse_id = %s",
                                             (warehouse_id,))}


def test_a_move_raced_by_a_create_of_its_destination(tree, racer, db):
    """Exactly one of them gets x.<n>: the move (200, create 409) or the create (200, move 409)."""
    tree.namespace("x")
    for i in range(ROUNDS):
        source = tree.namespace(f"src{i}")
        tree.table((f"src{i}",), "t")
        start = _head(db)
        (move_id, moved), (create_id, created) = racer.race(
            lambda c, h: tree.move(source, ["x", f"n{i}"], client=c, headers=h),
            lambda c, h: c.post(f"{tree.p}/namespaces", json={"namespace": ["x", f"n{i}"]}, headers=h))
        assert sorted((moved, created)) == [200, 409], (moved, created)
        holder = tree.namespace_id("x", f"n{i}")
        if moved == 200:
            assert holder == source and racer.appended_by(create_id, start) == []
            assert tree.names(("x", f"n{i}")) == ["t"]
            _error(tree.client.get(f"{tree.p}/namespaces/src{i}"), 404, "NoSuchNamespaceException")
        else:
            assert holder != source and racer.appended_by(move_id, start) == []
            assert tree.namespace_id(f"src{i}") == source and tree.names((f"src{i}",)) == ["t"]
        paths = _read_model_paths(db, tree.wh["id"])
        assert sorted(map(tuple, paths.values())).count(("x", f"n{i}")) == 1


def test_a_move_raced_by_a_drop_of_its_source(tree, racer, db):
    """The move first (200, then the drop of the old name 404), or the drop first (204, then the move 404)."""
    for i in range(ROUNDS):
        source = tree.namespace(f"s{i}")
        start = _head(db)
        (move_id, moved), (drop_id, dropped) = racer.race(
            lambda c, h: tree.move(source, [f"d{i}"], client=c, headers=h),
            lambda c, h: c.delete(f"{tree.p}/namespaces/s{i}", headers=h))
        assert (moved, dropped) in ((200, 404), (404, 204)), (moved, dropped)
        if moved == 200:
            assert racer.appended_by(drop_id, start) == []
            assert tree.namespace_id(f"d{i}") == source
        else:
            assert racer.appended_by(move_id, start) == []
            _error(tree.client.get(f"{tree.p}/namespaces/d{i}"), 404, "NoSuchNamespaceException")
        assert _error(tree.client.get(f"{tree.p}/namespaces/s{i}"), 404, "NoSuchNamespaceException")
        paths = _read_model_paths(db, tree.wh["id"])
        assert [f"s{i}"] not in paths.values()


def test_a_move_raced_by_a_create_inside_it(tree, racer, db):
    """A table created at p<i>.t while p<i> moves to q<i>: created first and moved along (at q<i>.t), or the move
    first and the create 404; never a table left under a path its namespace no longer has."""
    for i in range(ROUNDS):
        source = tree.namespace(f"p{i}")
        start = _head(db)
        (move_id, moved), (create_id, created) = racer.race(
            lambda c, h: tree.move(source, [f"q{i}"], client=c, headers=h),
            lambda c, h: c.post(f"{tree.p}/namespaces/p{i}/tables", json={"name": "t", "schema": SCHEMA},
                                headers=h))
        assert moved == 200 and created in (200, 404), (moved, created)
        moves = racer.appended_by(move_id, start)
        if created == 200:
            assert "Tabular.Moved" in moves and tree.names((f"q{i}",)) == ["t"]
        else:
            assert racer.appended_by(create_id, start) == [] and "Tabular.Moved" not in moves
            assert tree.names((f"q{i}",)) == []
        stale = db.execute("SELECT count(*) FROM ll_tabulars t JOIN ll_namespaces n ON n.id = t.namespace_id"
                           " WHERE t.namespace <> n.path AND n.warehouse_id = %s", (tree.wh["id"],)).fetchone()[0]
        assert stale == 0
