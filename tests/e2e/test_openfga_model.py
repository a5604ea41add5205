"""What the authorization model means, asked of a real OpenFGA through our Authorizer: tuples written with
``OpenFga.write``, decisions read with ``check``/``check_many``/``list_objects``. Every test names its objects with
fresh ids, so they share one store."""

import asyncio
import uuid

import pytest
from support import create_database

from lakeledger.authz.authorizer import AuthorizationUnavailable, Check
from lakeledger.authz.objects import RelationTuple as T
from lakeledger.authz.objects import hierarchy, obj, role_members, user
from lakeledger.authz.openfga import OpenFga
from lakeledger.authz.setup import authorizer
from lakeledger.bootstrap import migrate
from lakeledger.settings import Settings

READ = ("can_get_metadata", "can_read_data")
WRITE = ("can_write_data", "can_commit", "can_drop", "can_rename")


@pytest.fixture(scope="module")
def fga(openfga, pg_url):
    """Our OpenFga backend on a store set up by migrate, in a database of this module's own."""
    name = f"own_{uuid.uuid4().hex[:12]}"
    database = create_database(pg_url, name)
    settings = Settings(pg_url=database, authz_backend="openfga",
                        openfga={"endpoint": openfga.endpoint, "store_name": f"model-{name}"})
    migrate(settings, database)
    backend = authorizer(settings, database)
    assert isinstance(backend, OpenFga)
    yield backend
    backend.close()


def ask(fga, coroutine_function, *args):
    async def run():
        try:
            return await coroutine_function(*args)
        finally:
            await fga.aclose()
    return asyncio.run(run())


def allowed(fga, who: str, object_: str, relations) -> dict[str, bool]:
    answers = ask(fga, fga.check_many, [Check(who, r, object_) for r in relations])
    return dict(zip(relations, answers, strict=True))


def _ids(*types):
    return [obj(t, uuid.uuid4()) for t in types]


def tree(fga):
    """server ← project ← warehouse ← ns ← inner ns ← table (and a view), plus a sibling namespace with a table."""
    server, project, warehouse, ns, inner, table, view, sibling, other_table = _ids(
        "server", "project", "warehouse", "namespace", "namespace", "table", "view", "namespace", "table")
    fga.write([*hierarchy(project, server), *hierarchy(warehouse, project), *hierarchy(ns, warehouse),
               *hierarchy(inner, ns), *hierarchy(table, inner), *hierarchy(view, inner),
               *hierarchy(sibling, warehouse), *hierarchy(other_table, sibling)])
    return {"server": server, "project": project, "warehouse": warehouse, "ns": ns, "inner": inner, "table": table,
            "view": view, "sibling": sibling, "other_table": other_table}


def someone() -> str:
    return user(f"oidc~{uuid.uuid4()}")


def test_warehouse_ownership_reaches_tables_in_nested_namespaces(fga):
    t, alice = tree(fga), someone()
    fga.write([T(alice, "ownership", t["warehouse"])])
    assert all(allowed(fga, alice, t["table"], (*READ, *WRITE, "describe", "select", "modify")).values())
    assert all(allowed(fga, alice, t["view"], ("can_get_metadata", "can_select", "can_commit", "can_drop")).values())
    assert all(allowed(fga, alice, t["inner"], ("can_create_table", "can_create_namespace", "can_delete")).values())
    # an owner manages grants below (Lakekeeper's default: no managed access)
    assert all(allowed(fga, alice, t["table"], ("can_grant_select", "can_grant_modify", "can_change_ownership",
                                                 "can_grant_manage_grants")).values())
    # but nothing above or beside the warehouse
    assert allowed(fga, alice, t["project"], ("can_create_warehouse", "can_delete")) == \
        {"can_create_warehouse": False, "can_delete": False}


def test_select_on_a_namespace_reads_its_tables_but_never_writes(fga):
    t, bob = tree(fga), someone()
    fga.write([T(bob, "select", t["ns"])])
    assert allowed(fga, bob, t["table"], (*READ, *WRITE)) == {
        "can_get_metadata": True, "can_read_data": True,
        "can_write_data": False, "can_commit": False, "can_drop": False, "can_rename": False}
    assert allowed(fga, bob, t["view"], ("can_select", "can_commit")) == {"can_select": True, "can_commit": False}
    assert allowed(fga, bob, t["inner"], ("can_list_tables", "can_create_table")) == \
        {"can_list_tables": True, "can_create_table": False}
    # the sibling namespace's table is out of reach, and so is granting what one merely holds
    assert allowed(fga, bob, t["other_table"], READ) == {"can_get_metadata": False, "can_read_data": False}
    assert allowed(fga, bob, t["table"], ("can_grant_select",)) == {"can_grant_select": False}
    # the way down is visible (metadata of the warehouse), the warehouse's other contents are not
    assert allowed(fga, bob, t["warehouse"], ("can_get_metadata", "can_list_everything")) == \
        {"can_get_metadata": True, "can_list_everything": False}
    assert ask(fga, fga.list_objects, bob, "can_read_data", "table") == {t["table"]}


def test_a_grant_deep_down_makes_the_way_there_visible_and_nothing_else(fga):
    t, carol = tree(fga), someone()
    fga.write([T(carol, "select", t["table"])])
    for parent in ("inner", "ns", "warehouse", "project"):
        assert allowed(fga, carol, t[parent], ("can_get_metadata",)) == {"can_get_metadata": True}, parent
    assert allowed(fga, carol, t["sibling"], ("can_get_metadata",)) == {"can_get_metadata": False}
    assert allowed(fga, carol, t["view"], ("can_get_metadata",)) == {"can_get_metadata": False}


def test_nested_roles_pass_their_rights_to_every_member(fga):
    t, dave = tree(fga), someone()
    engineers, data_team = _ids("role", "role")
    fga.write([T(dave, "assignee", engineers),
               T(role_members(engineers.partition(":")[2]), "assignee", data_team),
               T(role_members(data_team.partition(":")[2]), "modify", t["inner"])])
    assert all(allowed(fga, dave, t["table"], (*READ, *WRITE)).values())
    assert allowed(fga, dave, t["other_table"], ("can_read_data",)) == {"can_read_data": False}
    # leaving the inner role ends it
    fga.write(deletes=[T(role_members(engineers.partition(":")[2]), "assignee", data_team)])
    assert not any(allowed(fga, dave, t["table"], (*READ, *WRITE)).values())


def test_a_role_loop_grants_nothing_to_outsiders(fga):
    t, erin, outsider = tree(fga), someone(), someone()
    a, b = _ids("role", "role")
    fga.write([T(role_members(a.partition(":")[2]), "assignee", b), T(role_members(b.partition(":")[2]), "assignee", a),
               T(role_members(b.partition(":")[2]), "select", t["table"]), T(erin, "assignee", a)])
    assert allowed(fga, erin, t["table"], ("can_read_data",)) == {"can_read_data": True}
    assert allowed(fga, outsider, t["table"], ("can_read_data",)) == {"can_read_data": False}


def test_a_user_without_tuples_gets_nothing(fga):
    t, nobody = tree(fga), someone()
    checks = [Check(nobody, relation, t[name]) for name, relations in {
        "server": ("can_create_project", "can_list_all_projects"),
        "project": ("can_get_metadata", "can_create_warehouse", "can_create_role"),
        "warehouse": ("can_get_metadata", "can_create_namespace", "can_delete", "can_read_history"),
        "ns": ("can_get_metadata", "can_create_table", "can_delete"),
        "table": (*READ, *WRITE, "can_grant_select", "can_read_assignments"),
        "view": ("can_get_metadata", "can_select", "can_drop"),
    }.items() for relation in relations]
    assert ask(fga, fga.check_many, checks) == [False] * len(checks)
    for type_name in ("project", "warehouse", "namespace", "table", "view"):
        assert ask(fga, fga.list_objects, nobody, "can_get_metadata", type_name) == set()


def test_pass_grants_passes_on_only_what_one_holds_manage_grants_anything(fga):
    t, frank, grace = tree(fga), someone(), someone()
    fga.write([T(frank, "select", t["table"]), T(frank, "pass_grants", t["table"]),
               T(grace, "manage_grants", t["ns"])])
    assert allowed(fga, frank, t["table"], ("can_grant_select", "can_grant_describe", "can_grant_modify",
                                            "can_grant_pass_grants", "can_grant_manage_grants",
                                            "can_change_ownership", "can_read_assignments")) == {
        "can_grant_select": True, "can_grant_describe": True, "can_grant_modify": False,
        "can_grant_pass_grants": False, "can_grant_manage_grants": False, "can_change_ownership": False,
        "can_read_assignments": True}
    # manage_grants: grant anything below, yet it is no data right itself
    assert all(allowed(fga, grace, t["table"], ("can_grant_select", "can_grant_modify", "can_grant_pass_grants",
                                                 "can_grant_manage_grants", "can_change_ownership")).values())
    assert allowed(fga, grace, t["table"], ("can_read_data", "can_write_data")) == \
        {"can_read_data": False, "can_write_data": False}


def test_server_and_project_roles(fga):
    t, operator, admin, security = tree(fga), someone(), someone(), someone()
    fga.write([T(operator, "operator", t["server"]), T(admin, "admin", t["server"]),
               T(security, "security_admin", t["project"])])
    assert all(allowed(fga, operator, t["table"], (*READ, *WRITE)).values())
    assert allowed(fga, admin, t["project"], ("can_get_metadata", "can_grant_project_admin")) == \
        {"can_get_metadata": True, "can_grant_project_admin": True}
    assert allowed(fga, admin, t["table"], READ) == {"can_get_metadata": False, "can_read_data": False}
    assert allowed(fga, security, t["warehouse"], ("can_grant_select", "can_change_ownership", "can_get_metadata",
                                                   "can_delete")) == {
        "can_grant_select": True, "can_change_ownership": True, "can_get_metadata": True, "can_delete": False}
    assert allowed(fga, security, t["table"], ("can_read_data",)) == {"can_read_data": False}


def test_writes_are_idempotent_and_readable(fga):
    t, heidi = tree(fga), someone()
    grant = T(heidi, "select", t["table"])
    fga.write([grant])
    fga.write([grant])  # a replayed event
    fga.write(deletes=[T(heidi, "modify", t["table"])])  # never written: no error either
    assert ask(fga, fga.read, t["table"], "select") == [grant]
    assert set(ask(fga, fga.read, t["table"])) == {grant, T(t["inner"], "parent", t["table"])}
    # more than one OpenFGA write request's worth in one call
    many = [T(user(f"oidc~bulk-{i}"), "describe", t["view"]) for i in range(250)]
    fga.write(many)
    assert len(ask(fga, fga.read, t["view"], "describe")) == 250
    fga.write(deletes=many)
    assert ask(fga, fga.read, t["view"], "describe") == []
    assert ask(fga, fga.check, heidi, "can_read_data", t["table"]) is True
    fga.write(deletes=[grant])
    assert ask(fga, fga.check, heidi, "can_read_data", t["table"]) is False


def test_a_malformed_check_is_a_value_error_and_a_missing_openfga_unavailable(fga):
    with pytest.raises(ValueError):
        ask(fga, fga.check, someone(), "can_fly", obj("table", uuid.uuid4()))
    from support import free_port

    gone = OpenFga(f"http://127.0.0.1:{free_port()}", fga.store_id, fga.model_id)
    try:
        with pytest.raises(AuthorizationUnavailable):
            ask(gone, gone.check, someone(), "can_read_data", obj("table", uuid.uuid4()))
        with pytest.raises(AuthorizationUnavailable):
            gone.write([T(someone(), "select", obj("table", uuid.uuid4()))])
    finally:
        gone.close()
