"""Every pair of conflicting operations on one object, raced, and the log checked afterwards.

Each race releases its requests at once (a thread barrier) over two API processes on one database (the session's
``server`` and ``second_server``), so a lost race is decided in the event store, not by one process's locks. Each
request carries a request id of its own, recorded in every event it appends; after each round the events appended
since the round began are read back and attributed to their requests:

- a request answered 4xx appended nothing;
- every event a request appended names the object the request named (its ids and names), never another one;
- the outcome is one that some order of the same requests, one after the other, would have given.

A race that goes wrong one time in three goes unseen in ROUNDS rounds with probability (2/3)**ROUNDS: 24 rounds
miss it with probability 6e-5, and the eight-client rename race of the issue 27 report, run with 8 clients, is
seen far sooner."""

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import orjson
import pytest
from support import SCHEMA, VIEW_VERSION

ROUNDS = 24
RENAMERS = 8
HOUR = {"type": "soft", "expiration-seconds": 3600}


@dataclass
class Answer:
    request_id: str
    status: int
    body: bytes


@dataclass
class Event:
    position: int
    kind: str  # the class, as "Table.Renamed"
    originator: str
    payload: dict

    def is_(self, what: str) -> bool:
        """Whether this is a table's event of that name ("Renamed"), wherever the class declares it (a table's
        rename is declared on Tabular, its creation on Table)."""
        return self.kind in (f"Table.{what}", f"Tabular.{what}")


def _plain(value):
    """A stored event's JSON, with the transcoder's typed values (UUIDs) as plain strings."""
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            data = value["_data_"]
            return str(uuid.UUID(data)) if value["_type_"].startswith("uuid") else _plain(data)
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class Racer:
    """Releases requests at once over both API processes, and reads back what each of them appended."""

    def __init__(self, urls: list[str], db):
        self.urls = urls
        self.db = db
        self.outcomes: Counter = Counter()  # the answers' statuses per round, shown with -s: which orders happened

    def head(self) -> int:
        return self.db.execute("SELECT coalesce(max(notification_id), 0) FROM lakeledger_events").fetchone()[0]

    def race(self, calls) -> list[Answer]:
        """``calls``: functions (client, headers) -> response, each run at once on its own connection, the i-th on
        API process i mod 2."""
        barrier = threading.Barrier(len(calls))

        def run(i: int) -> Answer:
            request_id = f"race-{uuid.uuid4()}"
            with httpx.Client(base_url=self.urls[i % len(self.urls)], timeout=60) as c:
                c.get("/health")  # the connection is open before the barrier: the requests leave together
                barrier.wait()
                r = calls[i](c, {"x-request-id": request_id})
            return Answer(request_id, r.status_code, r.content)

        with ThreadPoolExecutor(len(calls)) as pool:
            answers = list(pool.map(run, range(len(calls))))
        self.outcomes[tuple(a.status for a in answers)] += 1
        return answers

    def events_since(self, position: int) -> list[Event]:
        rows = self.db.execute("SELECT notification_id, topic, originator_id, state FROM lakeledger_events"
                               " WHERE notification_id > %s ORDER BY notification_id", (position,)).fetchall()
        return [Event(n, topic.rsplit(":", 1)[-1], str(originator), _plain(orjson.loads(bytes(state))))
                for n, topic, originator, state in rows]

    def of(self, events: list[Event], answer: Answer) -> list[Event]:
        return [e for e in events if e.payload.get("request_id") == answer.request_id]

    def check_losers_appended_nothing(self, events: list[Event], answers: list[Answer]) -> None:
        for a in answers:
            assert a.status < 500, a.body
            if a.status >= 400:
                assert self.of(events, a) == [], (a.status, a.body)


@pytest.fixture
def racer(server, second_server, db, request):
    r = Racer([server.url, second_server.url], db)
    yield r
    print(f"\n{request.node.name}: {dict(r.outcomes)}")


@pytest.fixture
def ns(client, warehouse):
    """A namespace of the test's warehouse, with helpers for its tables."""
    r = client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["race"]})
    assert r.status_code == 200, r.text
    return Tables(client, warehouse, "race")


class Tables:
    def __init__(self, client, warehouse, namespace: str):
        self.client, self.wh, self.ns = client, warehouse, namespace
        self.p = warehouse["prefix"]
        self.url = f"{self.p}/namespaces/{namespace}/tables"
        self.namespace_id = client.get(f"{self.p}/namespaces/{namespace}").json().get("namespace-uuid")

    def create(self, name: str) -> str:
        r = self.client.post(self.url, json={"name": name, "schema": SCHEMA})
        assert r.status_code == 200, r.text
        return r.json()["metadata"]["table-uuid"]

    def exists(self, name: str) -> bool:
        status = self.client.get(f"{self.url}/{name}").status_code
        assert status in (200, 404)
        return status == 200

    def id_of(self, name: str) -> str:
        r = self.client.get(f"{self.url}/{name}")
        assert r.status_code == 200, r.text
        return r.json()["metadata"]["table-uuid"]

    def rename(self, source: str, destination: str):
        return lambda c, h: c.post(f"{self.p}/tables/rename", headers=h, json={
            "source": {"namespace": [self.ns], "name": source},
            "destination": {"namespace": [self.ns], "name": destination}})

    def drop(self, name: str):
        return lambda c, h: c.delete(f"{self.url}/{name}", headers=h)

    def create_call(self, name: str):
        return lambda c, h: c.post(self.url, headers=h, json={"name": name, "schema": SCHEMA})

    def undrop(self, table_id: str):
        return lambda c, h: c.post(f"/management/v1/warehouse/{self.wh['id']}/deleted-tabulars/undrop", headers=h,
                                   json={"targets": [{"type": "table", "id": table_id}]})

    def soft(self) -> None:
        r = self.client.post(f"/management/v1/warehouse/{self.wh['id']}/delete-profile",
                             json={"delete-profile": HOUR})
        assert r.status_code == 200, r.text


def _names_in(events: list[Event]) -> set[str]:
    """Every table name the events name (claims, creations, renames)."""
    names = set()
    for e in events:
        for field in ("name", "from_name", "to_name"):
            if isinstance(e.payload.get(field), str):
                names.add(e.payload[field])
    return names


def _ids_in(events: list[Event]) -> set[str]:
    """Every table the events are about: their originators, less name claims (whose holders are named instead)."""
    return {e.payload["holder_id"] if e.kind.startswith("NameClaim") else e.originator for e in events}


def test_rename_x_rename(racer, ns):
    """The issue 27 report: 8 clients renaming one table to 8 names at once. One wins; the others are refused
    (the table is gone from the name they named) and append nothing; the winner's rename starts from the name it
    named."""
    for i in range(ROUNDS):
        name = f"rr{i}"
        table_id = ns.create(name)
        start = racer.head()
        answers = racer.race([ns.rename(name, f"{name}_to{k}") for k in range(RENAMERS)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, answers)
        won = [k for k, a in enumerate(answers) if a.status == 204]
        assert len(won) == 1, [a.status for a in answers]
        assert {a.status for a in answers if a.status != 204} <= {404, 409}
        mine = racer.of(events, answers[won[0]])
        renames = [e for e in mine if e.is_("Renamed")]
        assert len(renames) == 1 and renames[0].originator == table_id, [(e.kind, e.payload) for e in events]
        assert (renames[0].payload["from_name"], renames[0].payload["to_name"]) == (name, f"{name}_to{won[0]}")
        assert _ids_in(mine) == {table_id} and _names_in(mine) == {name, f"{name}_to{won[0]}"}
        assert [e for e in events if e.is_("Renamed") and e.originator == table_id] == renames
        assert [ns.exists(f"{name}_to{k}") for k in range(RENAMERS)] == [k == won[0] for k in range(RENAMERS)]
        assert not ns.exists(name)


def test_view_rename_x_view_rename(racer, client, ns):
    """Views resolve their names as tables do: the same race, on a view."""
    for i in range(ROUNDS):
        name = f"vr{i}"
        r = client.post(f"{ns.p}/namespaces/{ns.ns}/views", json={
            "name": name, "schema": SCHEMA, "view-version": {**VIEW_VERSION, "default-namespace": [ns.ns]},
            "properties": {}})
        assert r.status_code == 200, r.text
        view_id = r.json()["metadata"]["view-uuid"]
        start = racer.head()
        answers = racer.race([
            lambda c, h, k=k: c.post(f"{ns.p}/views/rename", headers=h, json={
                "source": {"namespace": [ns.ns], "name": name},
                "destination": {"namespace": [ns.ns], "name": f"{name}_to{k}"}}) for k in range(RENAMERS)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, answers)
        won = [k for k, a in enumerate(answers) if a.status == 204]
        assert len(won) == 1, [a.status for a in answers]
        renames = [e for e in events if e.kind.endswith(".Renamed") and e.originator == view_id]
        assert len(renames) == 1 and renames[0].payload["request_id"] == answers[won[0]].request_id
        assert (renames[0].payload["from_name"], renames[0].payload["to_name"]) == (name, f"{name}_to{won[0]}")
        assert _names_in(racer.of(events, answers[won[0]])) == {name, f"{name}_to{won[0]}"}


def test_rename_x_drop(racer, ns):
    for i in range(ROUNDS):
        name, target = f"rd{i}", f"rd{i}_new"
        table_id = ns.create(name)
        start = racer.head()
        rename, drop = racer.race([ns.rename(name, target), ns.drop(name)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, [rename, drop])
        # one of them found the table at its name; the other found it gone
        assert sorted([rename.status, drop.status]) == [204, 404], (rename.status, drop.status)
        for a in (rename, drop):
            assert _ids_in(racer.of(events, a)) <= {table_id}
        if rename.status == 204:
            assert _names_in(racer.of(events, rename)) == {name, target}
            assert ns.id_of(target) == table_id
        else:
            assert _names_in(racer.of(events, drop)) == {name}
            assert not ns.exists(target)
        assert not ns.exists(name)


def test_rename_x_create_of_the_target_name(racer, ns):
    for i in range(ROUNDS):
        name, target = f"rc{i}", f"rc{i}_new"
        table_id = ns.create(name)
        start = racer.head()
        rename, create = racer.race([ns.rename(name, target), ns.create_call(target)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, [rename, create])
        assert sorted([rename.status, create.status]) in ([200, 409], [204, 409]), (rename.status, create.status)
        holder = ns.id_of(target)
        if rename.status == 204:
            assert holder == table_id and ns.exists(name) is False
            assert _ids_in(racer.of(events, rename)) == {table_id}
        else:
            assert holder != table_id and ns.id_of(name) == table_id
            assert _ids_in(racer.of(events, create)) == {holder}
            assert _names_in(racer.of(events, create)) == {target}


def test_drop_x_commit(racer, ns):
    for i in range(ROUNDS):
        name = f"dc{i}"
        table_id = ns.create(name)
        start = racer.head()
        commit_body = {"requirements": [{"type": "assert-table-uuid", "uuid": table_id}],
                       "updates": [{"action": "set-properties", "updates": {"round": str(i)}}]}
        drop, commit = racer.race([ns.drop(name),
                                   lambda c, h: c.post(f"{ns.url}/{name}", headers=h, json=commit_body)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, [drop, commit])
        assert drop.status == 204
        assert commit.status in (200, 404), commit.body
        dropped = [e for e in racer.of(events, drop) if e.is_("Dropped")]
        assert len(dropped) == 1 and dropped[0].originator == table_id
        committed = racer.of(events, commit)
        assert _ids_in(committed) <= {table_id}
        # a commit that was answered 200 came before the drop in the log: nothing is applied to a dropped table
        assert all(e.position < dropped[0].position for e in committed)
        assert (commit.status == 200) == bool(committed)
        assert not ns.exists(name)


def test_drop_x_undrop(racer, ns):
    """A soft-dropped table, brought back while its name is dropped again: either the undrop comes first and the
    drop then drops it again (both 204), or the drop finds nothing at the name (404)."""
    ns.soft()
    for i in range(ROUNDS):
        name = f"du{i}"
        table_id = ns.create(name)
        assert ns.drop(name)(ns.client, {}).status_code == 204
        start = racer.head()
        undrop, drop = racer.race([ns.undrop(table_id), ns.drop(name)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, [undrop, drop])
        assert undrop.status == 204, undrop.body
        assert drop.status in (204, 404), drop.body
        undropped = [e for e in racer.of(events, undrop) if e.is_("Undropped")]
        assert len(undropped) == 1 and undropped[0].originator == table_id
        dropped = [e for e in racer.of(events, drop) if e.is_("Dropped")]
        assert _ids_in(racer.of(events, drop)) <= {table_id}
        if drop.status == 204:
            assert len(dropped) == 1 and dropped[0].position > undropped[0].position
        assert ns.exists(name) == (drop.status == 404)


def test_undrop_x_create_of_the_same_name(racer, ns):
    ns.soft()
    for i in range(ROUNDS):
        name = f"uc{i}"
        table_id = ns.create(name)
        assert ns.drop(name)(ns.client, {}).status_code == 204
        start = racer.head()
        undrop, create = racer.race([ns.undrop(table_id), ns.create_call(name)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, [undrop, create])
        assert sorted([undrop.status, create.status]) in ([200, 409], [204, 409]), (undrop.status, create.status)
        holder = ns.id_of(name)
        assert (holder == table_id) == (undrop.status == 204)
        winner = undrop if undrop.status == 204 else create
        assert _ids_in(racer.of(events, winner)) == {holder}
        assert _names_in(racer.of(events, winner)) == {name}


def test_namespace_drop_x_table_create(racer, client, warehouse):
    p = warehouse["prefix"]
    for i in range(ROUNDS):
        namespace = f"nd{i}"
        r = client.post(f"{p}/namespaces", json={"namespace": [namespace]})
        assert r.status_code == 200, r.text
        namespace_id = r.json()["namespace-uuid"]
        start = racer.head()
        drop, create = racer.race([
            lambda c, h: c.delete(f"{p}/namespaces/{namespace}", headers=h),
            lambda c, h: c.post(f"{p}/namespaces/{namespace}/tables", headers=h,
                                json={"name": "t", "schema": SCHEMA})])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, [drop, create])
        # either the namespace was dropped empty, or the table went in and the namespace is not empty
        assert (drop.status, create.status) in ((204, 404), (409, 200)), (drop.status, create.status)
        if create.status == 200:
            created = [e for e in racer.of(events, create) if e.is_("Created")]
            assert len(created) == 1 and created[0].payload["namespace_id"] == namespace_id
            assert client.get(f"{p}/namespaces/{namespace}/tables/t").status_code == 200
        else:
            assert [e.originator for e in racer.of(events, drop) if e.kind == "Namespace.Dropped"] == [namespace_id]
            assert client.get(f"{p}/namespaces/{namespace}").status_code == 404


def test_grant_x_revoke(racer, client, warehouse, ns):
    """Permissions in the allow-all mode (no OpenFGA): grants are recorded in the log all the same, and that is
    what is raced here. Both requests succeed whatever the order; the log holds them in one order, and what the
    assignments endpoint answers afterwards is what the last of them left."""
    table_id = ns.create("granted")
    base = f"/management/v1/permissions/warehouse/{warehouse['id']}/table/{table_id}/assignments"
    grantee = f"oidc~racer-{uuid.uuid4().hex[:8]}"
    assignment = {"type": "select", "user": grantee}

    def held() -> bool:
        r = client.get(base)
        assert r.status_code == 200, r.text
        return assignment in r.json()["assignments"]

    for i in range(ROUNDS):
        if i % 2 == 0:  # start from both states: granted and not granted
            assert client.post(base, json={"writes": [assignment]}).status_code == 204
        else:
            assert client.post(base, json={"deletes": [assignment]}).status_code == 204
        before = held()
        start = racer.head()
        grant, revoke = racer.race([lambda c, h: c.post(base, headers=h, json={"writes": [assignment]}),
                                    lambda c, h: c.post(base, headers=h, json={"deletes": [assignment]})])
        assert (grant.status, revoke.status) == (204, 204), (grant.body, revoke.body)
        events = [e for e in racer.events_since(start) if e.kind.startswith("Grant.")]
        for e in events:
            assert (e.payload["object"], e.payload["relation"]) == (f"table:{table_id}", "select")
            assert e.payload["grantee"] == f"user:{grantee}"
            assert e.payload["request_id"] in (grant.request_id, revoke.request_id)
            assert (e.kind == "Grant.Added") == (e.payload["request_id"] == grant.request_id)
        # each request changed the state at most once, and only where it was not in its state already
        assert len(events) <= 2
        kinds = [e.kind for e in events]
        assert kinds in (["Grant.Added"], ["Grant.Removed"], ["Grant.Added", "Grant.Removed"],
                         ["Grant.Removed", "Grant.Added"]), kinds
        assert kinds[0] == ("Grant.Removed" if before else "Grant.Added")
        assert held() == (kinds[-1] == "Grant.Added")


def test_register_x_create(racer, client, warehouse, ns):
    for i in range(ROUNDS):
        name = f"rg{i}"
        # a metadata file to register: a table's, left behind by a drop without purge
        source_id = ns.create(f"{name}_src")
        metadata_location = client.get(f"{ns.url}/{name}_src").json()["metadata-location"]
        assert client.delete(f"{ns.url}/{name}_src", params={"purgeRequested": "false"}).status_code == 204
        start = racer.head()
        register, create = racer.race([
            lambda c, h: c.post(f"{ns.p}/namespaces/{ns.ns}/register", headers=h,
                                json={"name": name, "metadata-location": metadata_location}),
            ns.create_call(name)])
        events = racer.events_since(start)
        racer.check_losers_appended_nothing(events, [register, create])
        assert sorted([register.status, create.status]) == [200, 409], (register.body, create.body)
        holder = ns.id_of(name)
        assert (holder == source_id) == (register.status == 200)
        winner = register if register.status == 200 else create
        assert _ids_in(racer.of(events, winner)) == {holder}
        assert _names_in(racer.of(events, winner)) == {name}
