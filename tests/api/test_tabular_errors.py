"""What tables and views answer when a create, register, rename or drop is refused: the error's HTTP code, type and
exact message, and which refusal wins when several things are wrong at once (an unknown warehouse, an unknown
namespace, a name held by a table or by a view, an invalid name, a protected object). Clients read these words
(Iceberg's Java client maps the types to exceptions, the REST compatibility kit compares messages), so they are
pinned here, kind by kind, with every refusal appending nothing to the log."""

import json
import uuid

import pytest
from support import SCHEMA, VIEW_VERSION

HOUR = {"type": "soft", "expiration-seconds": 3600}
PLUS = "a+b"  # a valid name once, refused for new names
LONG = "x" * 513


class Kind:
    """How a test reaches one kind of tabular over the REST API."""

    def __init__(self, word: str, collection: str, register: str):
        self.word = word  # "Table" or "View", as messages spell it
        self.collection = collection
        self.register = register

    def body(self, name: str) -> dict:
        if self.word == "Table":
            return {"name": name, "schema": SCHEMA}
        return {"name": name, "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}


TABLE = Kind("Table", "tables", "register")
VIEW = Kind("View", "views", "register-view")


class World:
    """A warehouse with namespaces ns and other, a live table ns.t and view ns.v, a table ns.dt and a view ns.dv
    dropped (their files kept), a protected table ns.pt and view ns.pv, and metadata files of a table and of a view
    the catalog has never seen."""

    def __init__(self, client, warehouse):
        self.client, self.wh = client, warehouse
        self.p = warehouse["prefix"]
        self.unknown_id = str(uuid.uuid4())
        self.unknown = f"/catalog/v1/{self.unknown_id}"
        for ns in ("ns", "other"):
            assert client.post(f"{self.p}/namespaces", json={"namespace": [ns]}).status_code == 200
        self.created = {}
        for kind, name in ((TABLE, "t"), (VIEW, "v"), (TABLE, "dt"), (VIEW, "dv"), (TABLE, "pt"), (VIEW, "pv"),
                           (TABLE, "x"), (TABLE, "source"), (VIEW, "vsource")):
            self.created[name] = self.create(kind, "ns" if name != "x" else "other", name)
        self.uuid = {name: body["metadata"]["table-uuid" if "table-uuid" in body["metadata"] else "view-uuid"]
                     for name, body in self.created.items()}
        assert client.delete(self.path(TABLE, "ns", "dt"), params={"purgeRequested": "false"}).status_code == 204
        assert client.delete(self.path(VIEW, "ns", "dv")).status_code == 204
        for kind, name in (("table", "pt"), ("view", "pv")):
            r = client.post(f"/management/v1/warehouse/{warehouse['id']}/{kind}/{self.uuid[name]}/protection",
                            json={"protected": True})
            assert r.status_code == 200, r.text
        self.fresh = {TABLE.word: self.copy("source", "table-uuid"), VIEW.word: self.copy("vsource", "view-uuid")}

    def create(self, kind: Kind, ns: str, name: str) -> dict:
        r = self.client.post(f"{self.p}/namespaces/{ns}/{kind.collection}", json=kind.body(name))
        assert r.status_code == 200, r.text
        return r.json()

    def copy(self, name: str, uuid_field: str) -> str:
        """A metadata file like ``name``'s under a new uuid, inside the warehouse."""
        meta = self.created[name]["metadata"] | {uuid_field: str(uuid.uuid4()),
                                                 "location": f"{self.wh['location']}/fresh-{name}"}
        target = self.wh["path"] / f"fresh-{name}" / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
        target.parent.mkdir(parents=True)
        target.write_text(json.dumps(meta))
        return f"file://{target}"

    def path(self, kind: Kind, ns: str, name: str, prefix: str | None = None) -> str:
        return f"{prefix or self.p}/namespaces/{ns}/{kind.collection}/{name}"

    def file_of(self, name: str) -> str:
        return self.created[name]["metadata-location"]


@pytest.fixture
def world(client, warehouse):
    return World(client, warehouse)


def answer(r) -> tuple[int, str, str]:
    if r.status_code >= 400:
        body = r.json()
        assert set(body) == {"error"} and body["error"]["code"] == r.status_code, body
        return r.status_code, body["error"]["type"], body["error"]["message"]
    return r.status_code, "", ""


def refused(world: World, log_length, request, expected: tuple[int, str, str]) -> None:
    before = log_length()
    assert answer(request()) == expected
    assert log_length() == before


# -- create -------------------------------------------------------------------------------------------------------

def _create(world, kind, ns, name, prefix=None):
    return lambda: world.client.post(f"{prefix or world.p}/namespaces/{ns}/{kind.collection}", json=kind.body(name))


@pytest.mark.parametrize("kind", [TABLE, VIEW], ids=["table", "view"])
def test_create_refusals_in_order(world, log_length, kind):
    w = kind.word
    plus = (400, "IllegalArgumentException", f"{w} name must not contain '+' (a '+' in a request path means a space)")
    # an invalid name first, before the warehouse and the namespace are looked up
    refused(world, log_length, _create(world, kind, "nope", PLUS, world.unknown), plus)
    refused(world, log_length, _create(world, kind, "ns", LONG, world.unknown),
            (400, "IllegalArgumentException", f"{w} name is longer than 512 characters"))
    # an invalid namespace before an invalid name
    refused(world, log_length, _create(world, kind, "%01", PLUS, world.unknown),
            (400, "IllegalArgumentException", "Namespace name must not contain control characters"))
    # then the warehouse, before the namespace and the name
    refused(world, log_length, _create(world, kind, "nope", "t", world.unknown),
            (404, "NoSuchWarehouseException", f"Warehouse does not exist: {world.unknown_id}"))
    refused(world, log_length, _create(world, kind, "nope", "t", "/catalog/v1/not-a-uuid"),
            (404, "NoSuchWarehouseException", "Warehouse does not exist: not-a-uuid"))
    # then the namespace, before the name
    refused(world, log_length, _create(world, kind, "nope", "t"),
            (404, "NoSuchNamespaceException", "Namespace does not exist: nope"))
    refused(world, log_length, _create(world, kind, "ns%1Fnope", "v"),
            (404, "NoSuchNamespaceException", "Namespace does not exist: ns.nope"))
    # a name held by a table, by a view (protected or not): each kind words it as Iceberg's catalogs do
    by_table = "Table already exists: ns.{}" if kind is TABLE else "Table with same name already exists: ns.{}"
    by_view = "View with same name already exists: ns.{}" if kind is TABLE else "View already exists: ns.{}"
    for name, message in (("t", by_table), ("pt", by_table), ("v", by_view), ("pv", by_view)):
        refused(world, log_length, _create(world, kind, "ns", name),
                (409, "AlreadyExistsException", message.format(name)))
    # the name of a dropped table or view is free again, for either kind
    for name in ("dt", "dv"):
        assert answer(_create(world, kind, "ns", name)())[0] == 200


# -- register -----------------------------------------------------------------------------------------------------

def _register(world, kind, ns, name, location, prefix=None, **extra):
    return lambda: world.client.post(f"{prefix or world.p}/namespaces/{ns}/{kind.register}",
                                     json={"name": name, "metadata-location": location, **extra})


@pytest.mark.parametrize("kind", [TABLE, VIEW], ids=["table", "view"])
def test_register_refusals_in_order(world, log_length, kind):
    w = kind.word
    fresh = world.fresh[w]
    plus = (400, "IllegalArgumentException", f"{w} name must not contain '+' (a '+' in a request path means a space)")
    refused(world, log_length, _register(world, kind, "nope", PLUS, "file:///nowhere/x.json", world.unknown), plus)
    refused(world, log_length, _register(world, kind, "nope", "t", fresh, world.unknown),
            (404, "NoSuchWarehouseException", f"Warehouse does not exist: {world.unknown_id}"))
    refused(world, log_length, _register(world, kind, "nope", "t", "file:///etc/passwd"),
            (404, "NoSuchNamespaceException", "Namespace does not exist: nope"))
    # the file is checked and read before the name: a taken name with a bad file is a bad file
    refused(world, log_length, _register(world, kind, "ns", "t", "file:///etc/passwd"),
            (400, "BadRequestException", "Metadata location file:///etc/passwd is not inside the warehouse"))
    missing = f"{world.wh['location']}/none.metadata.json"
    refused(world, log_length, _register(world, kind, "ns", "v", missing),
            (404, "NotFoundException", f"File does not exist: {missing}"))
    by_table = "Table already exists: ns.{}" if kind is TABLE else "Table with same name already exists: ns.{}"
    by_view = "View with same name already exists: ns.{}" if kind is TABLE else "View already exists: ns.{}"
    for name, message in (("t", by_table), ("pt", by_table), ("v", by_view), ("pv", by_view)):
        refused(world, log_length, _register(world, kind, "ns", name, fresh),
                (409, "AlreadyExistsException", message.format(name)))
    # a file whose uuid the catalog knows, under a free name
    own = world.file_of("t" if kind is TABLE else "v")
    known = (f"A table with uuid {world.uuid['t']} is already registered: ns.t" if kind is TABLE
             else f"A view with uuid {world.uuid['v']} is already registered: ns.v")
    refused(world, log_length, _register(world, kind, "ns", "free", own), (409, "AlreadyExistsException", known))
    if kind is TABLE:
        # overwrite: of a view's name still refused; of a table with another table's file refused
        refused(world, log_length, _register(world, kind, "ns", "v", fresh, overwrite=True),
                (409, "AlreadyExistsException", "View with same name already exists: ns.v"))
        refused(world, log_length, _register(world, kind, "ns", "t", fresh, overwrite=True),
                (409, "AlreadyExistsException",
                 "Cannot overwrite a table with metadata of another table (uuid differs)"))
    # a dropped table or view comes back from its own file, under its old name (Iceberg 1.11's
    # ViewCatalogTests.registerView asks it of views)
    dropped = "dt" if kind is TABLE else "dv"
    assert answer(_register(world, kind, "ns", dropped, world.file_of(dropped))())[0] == 200
    # the other kind's name that was dropped is free
    assert answer(_register(world, kind, "ns", "dv" if kind is TABLE else "dt", fresh)())[0] == 200


# -- rename -------------------------------------------------------------------------------------------------------

def _rename(world, kind, source, destination, prefix=None):
    def identifier(dotted: str) -> dict:
        *levels, name = dotted.split(".")
        return {"namespace": levels, "name": name}
    return lambda: world.client.post(f"{prefix or world.p}/{kind.collection}/rename",
                                     json={"source": identifier(source), "destination": identifier(destination)})


@pytest.mark.parametrize("kind", [TABLE, VIEW], ids=["table", "view"])
def test_rename_refusals_in_order(world, log_length, kind):
    w = kind.word
    me = "t" if kind is TABLE else "v"
    plus = (400, "IllegalArgumentException", f"{w} name must not contain '+' (a '+' in a request path means a space)")
    refused(world, log_length, _rename(world, kind, "nosrc.missing", f"nodst.{PLUS}", world.unknown), plus)
    refused(world, log_length, _rename(world, kind, f"nosrc.{LONG}", f"nodst.{PLUS}", world.unknown),
            (400, "IllegalArgumentException", f"{w} name is longer than 512 characters"))
    # the source's name rules are those of existing names: '+' passes them
    refused(world, log_length, _rename(world, kind, f"nosrc.{PLUS}", "nodst.y", world.unknown),
            (404, "NoSuchWarehouseException", f"Warehouse does not exist: {world.unknown_id}"))
    missing_source = {TABLE: (404, "NoSuchTableException", "Table does not exist: {}"),
                      VIEW: (404, "NoSuchViewException", "View does not exist: {}")}[kind]
    # both namespaces missing: a table names its source's, a view its destination's (Iceberg's reference order)
    refused(world, log_length, _rename(world, kind, f"nosrc.{me}", "nodst.y"),
            (404, "NoSuchNamespaceException", "Namespace does not exist: nosrc" if kind is TABLE
             else "Namespace does not exist: nodst"))
    # source missing, destination namespace missing
    refused(world, log_length, _rename(world, kind, "ns.missing", "nodst.y"),
            (404, "NoSuchTableException", "Table does not exist: ns.missing") if kind is TABLE
            else (404, "NoSuchNamespaceException", "Namespace does not exist: nodst"))
    # source namespace missing, destination fine: a view in a missing namespace is a missing view
    refused(world, log_length, _rename(world, kind, f"nosrc.{me}", "ns.y"),
            (404, "NoSuchNamespaceException", "Namespace does not exist: nosrc") if kind is TABLE
            else (404, "NoSuchViewException", "View does not exist: nosrc.v"))
    for source in ("ns.missing", f"ns.d{me}", "ns.v" if kind is TABLE else "ns.t"):  # missing, dropped, other kind
        status, type_, message = missing_source
        refused(world, log_length, _rename(world, kind, source, "ns.y"), (status, type_, message.format(source)))
    # a taken destination, in this namespace or another; the object's own name is taken by itself
    for destination, holder in (("ns.t", "Table"), ("ns.pt", "Table"), ("ns.v", "View"), ("ns.pv", "View"),
                                ("other.x", "Table"), (f"ns.{me}", w)):
        refused(world, log_length, _rename(world, kind, f"ns.{me}", destination),
                (409, "AlreadyExistsException", f"Cannot rename ns.{me} to {destination}. {holder} already exists"))
    # a protected object may be renamed; onto a dropped name of either kind; across namespaces
    assert answer(_rename(world, kind, f"ns.p{me}", "ns.dt")())[0] == 204
    assert answer(_rename(world, kind, "ns.dt", "other.dv")())[0] == 204
    assert answer(world.client.get(world.path(kind, "other", "dv")))[0] == 200
    refused(world, log_length, _rename(world, kind, "other.dv", "other.x"),
            (409, "AlreadyExistsException", "Cannot rename other.dv to other.x. Table already exists"))


# -- drop ---------------------------------------------------------------------------------------------------------

def _drop(world, kind, ns, name, prefix=None, **params):
    return lambda: world.client.delete(world.path(kind, ns, name, prefix), params=params)


@pytest.mark.parametrize("kind", [TABLE, VIEW], ids=["table", "view"])
def test_drop_refusals_in_order(world, log_length, kind):
    w = kind.word
    me = "t" if kind is TABLE else "v"
    if kind is TABLE:
        # purgeRequested is read before force
        refused(world, log_length, _drop(world, kind, "nope", me, world.unknown, purgeRequested="maybe", force="no"),
                (400, "BadRequestException", "Query parameter purgeRequested must be true or false"))
    else:
        # a view has no purgeRequested: it is not read
        assert answer(_drop(world, kind, "nope", me, world.unknown, purgeRequested="maybe")()) == (
            404, "NoSuchWarehouseException", f"Warehouse does not exist: {world.unknown_id}")
    refused(world, log_length, _drop(world, kind, "nope", me, world.unknown, force="no"),
            (400, "BadRequestException", "Query parameter force must be true or false"))
    # a name no table or view could have: a view refuses it, a table looks for it (and finds no such table)
    refused(world, log_length, _drop(world, kind, "nope", LONG, world.unknown),
            (400, "IllegalArgumentException", "View name is longer than 512 characters") if kind is VIEW
            else (404, "NoSuchWarehouseException", f"Warehouse does not exist: {world.unknown_id}"))
    if kind is TABLE:
        refused(world, log_length, _drop(world, kind, "ns", LONG),
                (404, "NoSuchTableException", f"Table does not exist: ns.{LONG}"))
    refused(world, log_length, _drop(world, kind, "%01", me, world.unknown),
            (400, "IllegalArgumentException", "Namespace name must not contain control characters"))
    refused(world, log_length, _drop(world, kind, "nope", me, world.unknown),
            (404, "NoSuchWarehouseException", f"Warehouse does not exist: {world.unknown_id}"))
    refused(world, log_length, _drop(world, kind, "nope", me, "/catalog/v1/not-a-uuid"),
            (404, "NoSuchWarehouseException", "Warehouse does not exist: not-a-uuid"))
    # a missing namespace: a table names it, a view is missing
    refused(world, log_length, _drop(world, kind, "nope", me),
            (404, "NoSuchNamespaceException", "Namespace does not exist: nope") if kind is TABLE
            else (404, "NoSuchViewException", f"View does not exist: nope.{me}"))
    not_found = "NoSuchTableException" if kind is TABLE else "NoSuchViewException"
    for name in ("missing", f"d{me}", "v" if kind is TABLE else "t"):  # missing, dropped, the other kind
        refused(world, log_length, _drop(world, kind, "ns", name, force="true"),
                (404, not_found, f"{w} does not exist: ns.{name}"))
    protected = (409, f"{w}Protected", f"{w} ns.p{me} is protected; drop it with force=true or remove the protection "
                                       "first")
    refused(world, log_length, _drop(world, kind, "ns", f"p{me}"), protected)
    refused(world, log_length, _drop(world, kind, "ns", f"p{me}", force="false"), protected)
    if kind is TABLE:
        refused(world, log_length, _drop(world, kind, "ns", "pt", purgeRequested="true"), protected)
    assert answer(_drop(world, kind, "ns", f"p{me}", force="TRUE")()) == (204, "", "")
    assert answer(_drop(world, kind, "ns", me)()) == (204, "", "")
    refused(world, log_length, _drop(world, kind, "ns", me), (404, not_found, f"{w} does not exist: ns.{me}"))


@pytest.mark.parametrize("kind", [TABLE, VIEW], ids=["table", "view"])
def test_soft_drops_refuse_alike_and_free_the_name(world, log_length, kind):
    """In a warehouse with a soft delete profile a dropped object is gone just the same: a second drop, a rename
    of it, a protected one without force are refused with the same words; its name is free for a create, a rename
    or a register."""
    client, w = world.client, kind.word
    me = "t" if kind is TABLE else "v"
    r = client.post(f"/management/v1/warehouse/{world.wh['id']}/delete-profile", json={"delete-profile": HOUR})
    assert r.status_code == 200, r.text
    not_found = "NoSuchTableException" if kind is TABLE else "NoSuchViewException"
    refused(world, log_length, _drop(world, kind, "ns", f"p{me}"),
            (409, f"{w}Protected", f"{w} ns.p{me} is protected; drop it with force=true or remove the protection "
                                   "first"))
    params = {"purgeRequested": "true"} if kind is TABLE else {}
    assert answer(_drop(world, kind, "ns", me, **params)()) == (204, "", "")
    assert answer(_drop(world, kind, "ns", f"p{me}", force="true")()) == (204, "", "")
    refused(world, log_length, _drop(world, kind, "ns", me), (404, not_found, f"{w} does not exist: ns.{me}"))
    refused(world, log_length, _rename(world, kind, f"ns.{me}", "ns.y"),
            (404, not_found, f"{w} does not exist: ns.{me}"))
    deleted = client.get(f"/management/v1/warehouse/{world.wh['id']}/deleted-tabulars").json()["tabulars"]
    assert {d["name"] for d in deleted} >= {me, f"p{me}"}
    # the freed names take a create, a rename and a register of either kind
    assert answer(_create(world, kind, "ns", me)())[0] == 200
    assert answer(_rename(world, kind, f"ns.{me}", f"ns.p{me}")())[0] == 204
    other = VIEW if kind is TABLE else TABLE
    assert answer(_register(world, other, "ns", me, world.fresh[other.word])())[0] == 200
    refused(world, log_length, _create(world, kind, "ns", me),
            (409, "AlreadyExistsException",
             {TABLE: "View with same name already exists: ns.t",
              VIEW: "Table with same name already exists: ns.v"}[kind]))
