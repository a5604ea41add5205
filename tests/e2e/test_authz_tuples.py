"""OpenFGA's tuples as a projection of the log (issue 13, point 6), against a real OpenFGA and a real OpenID
provider: a `lakeledger serve` with the openfga backend on a database and a store of its own. Every tuple a request
causes is in OpenFGA when its call returns; `lakeledger rebuild` fills an emptied store from the log alone with
exactly the same tuples."""

import os
import subprocess
import sys
import uuid
from datetime import UTC

import httpx
import psycopg
import pytest
from support import SCHEMA, Server, create_database, wait_until

from lakeledger.authz.objects import RelationTuple as T
from lakeledger.authz.objects import hierarchy, obj, user
from lakeledger.authz.openfga import OpenFga

SERVER_ID = uuid.UUID(int=0)
DEFAULT_PROJECT = uuid.UUID(int=0)
SPARK, BOB = "oidc~spark", "oidc~bob"


def environment(database: str, openfga, oidc, store: str) -> dict:
    return {"LAKELEDGER__AUTHZ_BACKEND": "openfga", "LAKELEDGER__OPENFGA__ENDPOINT": openfga.endpoint,
            "LAKELEDGER__OPENFGA__STORE_NAME": store, "LAKELEDGER__OPENID_PROVIDER_URI": oidc.issuer,
            "LAKELEDGER__OPENID_AUDIENCE": oidc.audience, "LAKELEDGER__PG_URL": database,
            "LAKELEDGER__WORKER_POLL_SECONDS": "0.2", "LAKELEDGER__PG_POOL_SIZE": "3"}


@pytest.fixture(scope="module")
def setup(pg_url, openfga, oidc, tmp_path_factory):
    name = f"authz_{uuid.uuid4().hex[:12]}"
    database = create_database(pg_url, name)
    env = environment(database, openfga, oidc, f"store-{name}")
    api = Server(database, tmp_path_factory.mktemp("authz-serve"), **env)
    with psycopg.connect(database) as conn:
        store_id, model_id = conn.execute("SELECT store_id, model_id FROM ll_openfga").fetchone()
    fga = OpenFga(openfga.endpoint, store_id, model_id)
    yield {"api": api, "fga": fga, "database": database, "env": env, "data_dir": tmp_path_factory.mktemp("authz-cli")}
    fga.close()
    api.stop()


@pytest.fixture(scope="module")
def spark(setup, oidc):
    with httpx.Client(base_url=setup["api"].url, timeout=60,
                      headers={"Authorization": f"Bearer {oidc.token('spark')}"}) as c:
        response = c.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
        assert response.status_code == 204, response.text
        # the server admin makes itself admin of the default project, through the permission endpoint
        response = c.post("/management/v1/permissions/project/assignments",
                          json={"writes": [{"type": "project_admin", "user": SPARK}]})
        assert response.status_code == 204, response.text
        yield c


def tuples(setup) -> set[T]:
    return set(setup["fga"].tuples())


def test_bootstrap_makes_its_caller_server_admin(setup, spark):
    assert T(user(SPARK), "admin", obj("server", SERVER_ID)) in tuples(setup)
    # the default project, created by the system at start-up, sits under the server
    assert set(hierarchy(obj("project", DEFAULT_PROJECT), obj("server", SERVER_ID))) <= tuples(setup)


def test_the_hierarchy_and_ownership_follow_creates_renames_and_drops(setup, spark, tmp_path):
    response = spark.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}", "storage-profile": {"type": "file",
                                                                            "location": f"file://{tmp_path}/wh"}})
    assert response.status_code == 201, response.text
    warehouse_id = response.json()["warehouse-id"]
    warehouse = obj("warehouse", warehouse_id)
    # read-your-writes: the tuples are there when the call returns, nothing waited for
    assert set(hierarchy(warehouse, obj("project", DEFAULT_PROJECT))) <= tuples(setup)
    assert T(user(SPARK), "ownership", warehouse) in tuples(setup)

    prefix = f"/catalog/v1/{warehouse_id}"
    for ns in (["a"], ["a", "inner"], ["b"]):
        assert spark.post(f"{prefix}/namespaces", json={"namespace": ns}).status_code == 200
    ids = {}
    with psycopg.connect(setup["database"]) as conn:
        for path, id_ in conn.execute("SELECT path, id FROM ll_namespaces WHERE warehouse_id = %s", (warehouse_id,)):
            ids[".".join(path)] = obj("namespace", id_)
    assert set(hierarchy(ids["a"], warehouse)) | set(hierarchy(ids["a.inner"], ids["a"])) <= tuples(setup)
    assert T(user(SPARK), "ownership", ids["a.inner"]) in tuples(setup)

    response = spark.post(f"{prefix}/namespaces/a%1Finner/tables", json={"name": "t", "schema": SCHEMA})
    assert response.status_code == 200, response.text
    table = obj("table", response.json()["metadata"]["table-uuid"])
    assert set(hierarchy(table, ids["a.inner"])) | {T(user(SPARK), "ownership", table)} <= tuples(setup)

    response = spark.post(f"{prefix}/tables/rename", json={"source": {"namespace": ["a", "inner"], "name": "t"},
                                                          "destination": {"namespace": ["b"], "name": "t2"}})
    assert response.status_code == 204, response.text
    now = tuples(setup)
    assert set(hierarchy(table, ids["b"])) <= now
    assert not set(hierarchy(table, ids["a.inner"])) & now

    assert spark.delete(f"{prefix}/namespaces/b/tables/t2").status_code == 204
    assert not [t for t in tuples(setup) if table in (t.object, t.user)]


def client(setup, oidc, name: str) -> httpx.Client:
    return httpx.Client(base_url=setup["api"].url, timeout=60,
                        headers={"Authorization": f"Bearer {oidc.token(name)}"})


def events(setup) -> int:
    with psycopg.connect(setup["database"]) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


@pytest.fixture(scope="module")
def table(setup, spark, tmp_path_factory) -> dict:
    """A warehouse with namespace ns and table t, all spark's."""
    path = tmp_path_factory.mktemp("authz-wh")
    response = spark.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}", "storage-profile": {"type": "file", "location": f"file://{path}"}})
    assert response.status_code == 201, response.text
    warehouse_id = response.json()["warehouse-id"]
    prefix = f"/catalog/v1/{warehouse_id}"
    assert spark.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    response = spark.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert response.status_code == 200, response.text
    table_id = response.json()["metadata"]["table-uuid"]
    return {"warehouse": warehouse_id, "id": table_id, "path": f"{prefix}/namespaces/ns/tables/t",
            "assignments": f"/management/v1/permissions/warehouse/{warehouse_id}/table/{table_id}/assignments"}


def test_a_grant_is_a_tuple_and_effective_when_its_call_returns(setup, spark, oidc, table):
    with client(setup, oidc, "bob") as bob:
        assert bob.get(table["path"]).status_code in (403, 404)
        response = spark.post(table["assignments"], json={"writes": [{"type": "select", "user": BOB}]})
        assert response.status_code == 204, response.text
        assert T(user(BOB), "select", obj("table", table["id"])) in tuples(setup)
        assert bob.get(table["path"]).status_code == 200  # at once: no wait, no retry
        before = events(setup)
        refused = bob.post(table["path"], json={"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"by": "bob"}}]})
        assert refused.status_code == 403, refused.text
        assert events(setup) == before
    listed = spark.get(table["assignments"]).json()["assignments"]
    assert {"type": "select", "user": BOB} in listed and {"type": "ownership", "user": SPARK} in listed
    access = spark.get(table["assignments"].replace("/assignments", "/access")).json()["allowed-actions"]
    assert "read_data" in access and "commit" in access
    check = spark.post("/management/v1/permissions/check", json={
        "identity": {"user": BOB}, "operation": {"table": {"action": "read_data", "table-id": table["id"],
                                                            "warehouse-id": table["warehouse"]}}})
    assert check.json() == {"allowed": True}, check.text
    history = spark.get("/management/v1/history", params={"type": "grant.added"})
    assert history.status_code == 200, history.text
    granted = [
        e for e in history.json()["events"] if e["summary"] == f"granted select on table {table['id']} to user {BOB}"
    ]
    assert granted and granted[0]["actor"] == SPARK


def test_granting_needs_manage_grants_and_pass_grants_cannot_escalate(setup, spark, oidc, table):
    with client(setup, oidc, "bob") as bob:
        before = events(setup)
        refused = bob.post(table["assignments"], json={"writes": [{"type": "modify", "user": BOB}]})
        assert refused.status_code == 403, refused.text
        assert events(setup) == before
        # pass_grants lets bob pass on what he holds (select), nothing more
        response = spark.post(table["assignments"], json={"writes": [{"type": "select", "user": BOB},
                                                                     {"type": "pass_grants", "user": BOB}]})
        assert response.status_code == 204, response.text
        passed = bob.post(table["assignments"], json={"writes": [{"type": "select", "user": "oidc~trino"}]})
        assert passed.status_code == 204, passed.text
        before = events(setup)
        for escalation in ({"type": "modify", "user": "oidc~trino"}, {"type": "pass_grants", "user": "oidc~trino"},
                           {"type": "manage_grants", "user": BOB}, {"type": "ownership", "user": BOB}):
            refused = bob.post(table["assignments"], json={"writes": [escalation]})
            assert refused.status_code == 403, (escalation, refused.text)
        assert events(setup) == before
    assert T(user("oidc~trino"), "select", obj("table", table["id"])) in tuples(setup)
    assert T(user("oidc~trino"), "modify", obj("table", table["id"])) not in tuples(setup)


def test_a_role_loop_is_refused_through_the_permission_endpoints(setup, spark):
    roles = []
    for name in ("outer", "inner"):
        response = spark.post("/management/v1/role", json={"name": f"{name}-{uuid.uuid4().hex[:6]}"})
        assert response.status_code == 201, response.text
        roles.append(response.json()["id"])
    outer, inner = roles
    response = spark.post(f"/management/v1/permissions/role/{outer}/assignments",
                          json={"writes": [{"type": "assignee", "role": inner}]})
    assert response.status_code == 204, response.text
    assert T(f"role:{inner}#assignee", "assignee", f"role:{outer}") in tuples(setup)
    before = events(setup)
    loop = spark.post(f"/management/v1/permissions/role/{inner}/assignments",
                      json={"writes": [{"type": "assignee", "role": outer}]})
    assert loop.status_code == 400, loop.text
    assert events(setup) == before
    assert T(f"role:{outer}#assignee", "assignee", f"role:{inner}") not in tuples(setup)


def test_rebuild_fills_an_emptied_store_with_identical_tuples(setup, spark, table):
    before = tuples(setup)
    assert len(before) > 10
    setup["fga"].write(deletes=list(before))
    assert tuples(setup) == set()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], capture_output=True, text=True,
                          timeout=300, env={**env, **setup["env"], "LAKELEDGER__DATA_DIR": str(setup["data_dir"]),
                                            "LAKELEDGER__LOG_LEVEL": "warning"})
    assert done.returncode == 0, done.stderr
    assert "authz-tuples" in done.stdout
    assert tuples(setup) == before


def test_access_history_answers_who_held_what_at_each_instant_from_the_log(setup, spark, oidc, table):
    import time
    from datetime import datetime

    with client(setup, oidc, "trino") as trino:
        assert trino.get("/management/v1/whoami").status_code == 200  # provisions the user

    prefix = f"/catalog/v1/{table['warehouse']}"
    response = spark.post(f"{prefix}/namespaces/ns/tables", json={"name": f"h{uuid.uuid4().hex[:6]}",
                                                                  "schema": SCHEMA})
    assert response.status_code == 200, response.text
    table_id = response.json()["metadata"]["table-uuid"]
    assignments = f"/management/v1/permissions/warehouse/{table['warehouse']}/table/{table_id}/assignments"
    role = spark.post("/management/v1/role", json={"name": f"readers-{uuid.uuid4().hex[:6]}"}).json()["id"]
    instants = {}

    def step(name: str, method: str, path: str, body: dict) -> None:
        response = spark.request(method, path, json=body)
        assert response.status_code in (200, 204), response.text
        time.sleep(0.05)
        instants[name] = datetime.now(UTC).isoformat()
        time.sleep(0.05)

    instants["start"] = datetime.now(UTC).isoformat()
    time.sleep(0.05)
    step("granted", "POST", assignments, {"writes": [{"type": "select", "user": BOB}]})
    step("revoked", "POST", assignments, {"deletes": [{"type": "select", "user": BOB}]})
    step("role granted", "POST", assignments, {"writes": [{"type": "select", "role": role}]})
    step("member added", "POST", f"/management/v1/role/{role}/members",
         {"members": [{"type": "user", "id": "oidc~trino"}]})
    step("member removed", "DELETE", f"/management/v1/role/{role}/members/user/oidc~trino", None)

    def holders(at: str) -> dict:
        response = spark.get(f"/management/v1/warehouse/{table['warehouse']}/access-history",
                             params={"table": table_id, "at": at})
        assert response.status_code == 200, response.text
        return {h["user"]: h for h in response.json()["holders"]}

    start, granted = holders(instants["start"]), holders(instants["granted"])
    assert BOB not in start and "ownership" in start[SPARK]["rights"]
    assert granted[BOB]["rights"] == ["describe", "select"]
    [how] = granted[BOB]["through"]
    assert (how["relation"], how["source"], how["granted-by"], how["roles"]) == ("select", "grant", SPARK, [])
    assert BOB not in holders(instants["revoked"])
    assert "oidc~trino" not in holders(instants["role granted"])
    with_role = holders(instants["member added"])["oidc~trino"]
    assert with_role["rights"] == ["describe", "select"] and with_role["through"][0]["roles"] == [role]
    assert "oidc~trino" not in holders(instants["member removed"])
    # the project admin's rights flow down from the project (spark is project_admin of the default project)
    assert any(t["on"]["type"] == "project" for t in start[SPARK]["through"])


def test_a_rebuild_gives_the_access_history_the_projection_wrote(setup):
    """After the grants, revocations, role grants and memberships above: the ranges the access-history projection
    wrote one event at a time equal those the rebuild's in-memory writer makes (its ids aside: a sequence numbers
    them)."""
    columns = ('object, relation, "user", source, from_seq, from_at, from_actor, from_request, to_seq, to_at,'
               " to_actor, to_request")

    def ranges() -> list[tuple]:
        with psycopg.connect(setup["database"]) as conn:
            return conn.execute(f"SELECT {columns} FROM ll_access_ranges ORDER BY {columns}").fetchall()

    def caught_up() -> bool:
        with psycopg.connect(setup["database"]) as conn:
            return conn.execute("SELECT position >= (SELECT max(notification_id) FROM lakeledger_events)"
                                " FROM ll_projection_positions WHERE name = 'access-history'").fetchone()[0]

    wait_until(caught_up, timeout=30, what="the workers catch the access history up")
    before = ranges()
    assert any(r[3] == "grant" and r[8] is not None for r in before), "a grant that was revoked"
    assert any(r[3] == "membership" for r in before)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
    done = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], capture_output=True, text=True,
                          timeout=300, env={**env, **setup["env"], "LAKELEDGER__DATA_DIR": str(setup["data_dir"]),
                                            "LAKELEDGER__LOG_LEVEL": "warning"})
    assert done.returncode == 0, done.stderr
    assert ranges() == before
