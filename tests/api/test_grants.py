"""Lakekeeper 0.14's authorization surface (issue 29 point 7): "what may I do here" (``…/actions``,
``…/authorizer-actions``), many checks in one call (``/action/batch-check``), the grants API (``…/grants``), and
the roles' transitive listings, metadata and source system.

Two servers: the session's (allowall: every decision is yes, grants are recorded all the same) and one of this
module's with a real OpenID provider and a real OpenFGA, where `spark` (the operator) owns everything and `bob`
starts with nothing. A grant given through the grants API is the same assignment the permission endpoints write
(one event, one tuple), decides real requests, and shows through both APIs; bad input is a 4xx ErrorModel that
appends nothing."""

import uuid

import pytest
from support import SCHEMA, create_database, event_count, openfga_server, signed_in

BOB = "oidc~bob"


# ---- allowall (the session's server) ----------------------------------------------------------------------------

def _namespace_and_table(client, warehouse) -> tuple[str, str]:
    p = warehouse["prefix"]
    ns = client.post(f"{p}/namespaces", json={"namespace": ["ns"]})
    assert ns.status_code == 200, ns.text
    t = client.post(f"{p}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert t.status_code == 200, t.text
    return ns.json()["namespace-uuid"], t.json()["metadata"]["table-uuid"]


def test_actions_under_allowall_are_every_action_lakekeeper_names_that_we_decide(client, warehouse):
    _, table = _namespace_and_table(client, warehouse)
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/table/{table}/actions")
    assert r.status_code == 200, r.text
    actions = [a["action"] for a in r.json()["allowed-actions"]]
    assert actions == ["drop", "write_data", "read_data", "get_metadata", "commit", "rename", "include_in_list",
                       "undrop", "set_protection", "read_grants"]
    server = client.get("/management/v1/server/actions").json()["allowed-actions"]
    assert {"action": "create_project"} in server and {"action": "read_grants"} in server
    r = client.get(f"/management/v1/warehouse/{warehouse['id']}/table/{uuid.uuid4()}/actions")
    assert r.status_code == 404 and r.json()["error"]["code"] == 404
    authorizer = client.get(f"/management/v1/permissions/warehouse/{warehouse['id']}/authorizer-actions").json()
    assert authorizer["allowed-actions"][0] == "read_assignments" and "change_ownership" in authorizer[
        "allowed-actions"]


def test_batch_check_answers_in_order_with_ids_and_missing_objects_denied(client, warehouse, log_length):
    ns, table = _namespace_and_table(client, warehouse)
    w = warehouse["id"]
    checks = [
        {"operation": {"table": {"action": "read_data", "warehouse-id": w, "table-id": table}}},
        {"id": "by-name", "operation": {"table": {"action": "commit", "warehouse-id": w, "namespace": ["ns"],
                                                  "table": "t"}}},
        {"operation": {"namespace": {"action": "create_table", "warehouse-id": w, "namespace-id": ns}}},
        {"id": "gone", "operation": {"table": {"action": "drop", "warehouse-id": w, "table-id": str(uuid.uuid4())}}},
        {"operation": {"server": {"action": "create_project"}}},
    ]
    before = log_length()
    r = client.post("/management/v1/action/batch-check", json={"checks": checks})
    assert r.status_code == 200, r.text
    assert r.json()["results"] == [{"id": "0", "allowed": True}, {"id": "by-name", "allowed": True},
                                   {"id": "2", "allowed": True}, {"id": "gone", "allowed": False},
                                   {"id": "4", "allowed": True}]
    r = client.post("/management/v1/action/batch-check", json={"checks": checks, "error-on-not-found": True})
    assert r.status_code == 404, r.text
    for bad in ({"checks": [{"operation": {"table": {"action": "fly", "warehouse-id": w, "table-id": table}}}]},
                {"checks": [{"operation": {"moon": {"action": "drop"}}}]},
                {"checks": [{"operation": {"server": {"action": "create_project"}}, "identity": {}}]},
                {"checks": [], "unknown": 1}):
        r = client.post("/management/v1/action/batch-check", json=bad)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["type"]
    assert log_length() == before


def test_a_grant_through_the_grants_api_is_an_assignment_and_lists_with_its_resource(client, warehouse,
                                                                                     log_length):
    ns, table = _namespace_and_table(client, warehouse)
    w = warehouse["id"]
    base = f"/management/v1/warehouse/{w}/table/{table}"
    someone = f"oidc~g-{uuid.uuid4().hex[:8]}"
    r = client.post(f"{base}/grants", json={"writes": [{"privilege": "select", "principal": {"user": someone}}]})
    assert r.status_code == 204, r.text
    assigned = client.get(f"/management/v1/permissions/warehouse/{w}/table/{table}/assignments").json()
    assert {"type": "select", "user": someone} in assigned["assignments"]
    listed = client.get(f"{base}/grants", params={"principalUser": someone})
    assert listed.status_code == 200, listed.text
    [grant] = listed.json()["grants"]
    assert grant["principal"] == {"user": someone} and grant["privilege"] == "select" and grant["recognized"]
    assert grant["resource"] == {"type": "table", "warehouse-id": w, "table-id": table}
    project = client.get("/management/v1/grants", params={"principalUser": someone})
    assert project.status_code == 200, project.text
    assert [g["resource"] for g in project.json()["grants"]] == [grant["resource"]]
    # pages: one grant a page, each token leading on
    client.post(f"/management/v1/warehouse/{w}/namespace/{ns}/grants",
                json={"writes": [{"privilege": "modify", "principal": {"user": someone}}]})
    first = client.get("/management/v1/grants", params={"principalUser": someone, "pageSize": 1}).json()
    assert len(first["grants"]) == 1 and first["next-page-token"]
    second = client.get("/management/v1/grants", params={"principalUser": someone, "pageSize": 1,
                                                         "pageToken": first["next-page-token"]}).json()
    assert [g["privilege"] for g in first["grants"] + second["grants"]] == ["select", "modify"]
    # revoking through the grants API removes the assignment
    r = client.post(f"{base}/grants", json={"deletes": [{"privilege": "select", "principal": {"user": someone}}]})
    assert r.status_code == 204, r.text
    assert client.get(f"{base}/grants", params={"principalUser": someone}).json()["grants"] == []
    vocabulary = client.get("/management/v1/grants/grantable-privileges").json()["privileges"]
    assert [p["name"] for p in vocabulary["table"]] == ["ownership", "pass_grants", "manage_grants", "describe",
                                                        "select", "modify", "manage_tags", "manage_maintenance"]
    assert "manage_maintenance" not in [p["name"] for p in vocabulary["view"]]  # only tables are maintained
    assert [p["name"] for p in vocabulary["tag-definition"]] == ["ownership", "apply"]
    assert "tag_creator" in [p["name"] for p in vocabulary["project"]]
    assert vocabulary["server"][0]["category"] == "administration"
    mine = client.get(f"{base}/grants/grantable-privileges").json()["privileges"]
    assert all(p["allowed"] for p in mine) and mine[0]["privilege"]["name"] == "ownership"


def test_bad_grant_requests_are_4xx_error_models_that_append_nothing(client, warehouse, log_length):
    _, table = _namespace_and_table(client, warehouse)
    base = f"/management/v1/warehouse/{warehouse['id']}/table/{table}/grants"
    entry = {"privilege": "select", "principal": {"user": "oidc~x"}}
    before = log_length()
    for body, error_type in (
            ({}, "EmptyGrantDiff"),
            ({"writes": [entry] * 101}, "GrantDiffTooLarge"),
            ({"writes": [entry], "deletes": [entry]}, "ContradictoryGrantDiff"),
            ({"writes": [entry, entry]}, "DuplicateGrantEntry"),
            ({"writes": [{"privilege": "create", "principal": {"user": "oidc~x"}}]}, "UnknownGrantPrivilege"),
            ({"writes": [{"privilege": "select", "principal": {"user": "oidc~x", "role": str(uuid.uuid4())}}]},
             "BadRequestException"),
            ({"writes": [{**entry, "resource": {"type": "server"}}]}, "BadRequestException"),
            ({"writes": [{"privilege": "select", "principal": {"role": str(uuid.uuid4())}}]}, "NoSuchRoleException"),
    ):
        r = client.post(base, json=body)
        assert 400 <= r.status_code < 500, (body, r.text)
        assert r.json()["error"]["type"] == error_type, (body, r.text)
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/table/{uuid.uuid4()}/grants", json={"writes": [entry]})
    assert r.status_code == 404, r.text
    # the table under another warehouse's id is no table of that warehouse
    other = client.post("/management/v1/warehouse", json={"warehouse-name": f"o-{uuid.uuid4().hex[:8]}",
                                                          "storage-profile": {"type": "file", "location":
                                                                              f"{warehouse['location']}-other"}})
    assert other.status_code == 201, other.text
    for path in (f"/warehouse/{other.json()['warehouse-id']}/table/{table}/grants",
                 f"/warehouse/{other.json()['warehouse-id']}/table/{table}/actions",
                 f"/permissions/warehouse/{other.json()['warehouse-id']}/table/{table}/assignments"):
        r = client.get(f"/management/v1{path}")
        assert r.status_code == 404, (path, r.text)
    r = client.post(f"/management/v1/warehouse/{other.json()['warehouse-id']}/table/{table}/grants",
                    json={"writes": [entry]})
    assert r.status_code == 404, r.text
    before = log_length()
    r = client.get("/management/v1/grants")
    assert r.status_code == 400 and r.json()["error"]["type"] == "MissingGrantPrincipal"
    r = client.get(base, params={"principalUser": "oidc~x", "principalRole": str(uuid.uuid4())})
    assert r.status_code == 400 and r.json()["error"]["type"] == "AmbiguousGrantPrincipal"
    # an empty principalUser is an absent one (a 500 the fuzzer found): every grant on the object, and still none
    # named for the project's listing
    assert client.get(base, params={"principalUser": ""}).json() == client.get(base).json()
    r = client.get("/management/v1/grants", params={"principalUser": "", "principalRole": ""})
    assert r.status_code == 400 and r.json()["error"]["type"] == "MissingGrantPrincipal"
    assert log_length() == before


def _tag_definition(client, name: str, headers: dict | None = None) -> str:
    r = client.post("/management/v1/tag-definition", headers=headers or {},
                    json={"name": name, "scope": ["table"], "value-kind": "marker"})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_grants_on_a_tag_definition_are_its_assignments(client, log_length):
    tag = _tag_definition(client, f"steward-{uuid.uuid4().hex[:8]}")
    base = f"/management/v1/tag-definition/{tag}/grants"
    assignments = f"/management/v1/permissions/tag/{tag}/assignments"
    someone, other = (f"oidc~t-{uuid.uuid4().hex[:8]}" for _ in range(2))
    r = client.post(base, json={"writes": [{"privilege": "apply", "principal": {"user": someone}}]})
    assert r.status_code == 204, r.text
    assert {"type": "apply", "user": someone} in client.get(assignments).json()["assignments"]
    # and the other way round: an assignment written there is a grant here
    r = client.post(assignments, json={"writes": [{"type": "ownership", "user": other}]})
    assert r.status_code == 204, r.text
    listed = client.get(base)
    assert listed.status_code == 200, listed.text
    held = {(g["principal"]["user"], g["privilege"]) for g in listed.json()["grants"] if "user" in g["principal"]}
    assert {(someone, "apply"), (other, "ownership")} <= held
    [grant] = client.get(base, params={"principalUser": someone}).json()["grants"]
    assert grant["resource"] == {"type": "tag-definition", "tag-definition-id": tag} and grant["recognized"]
    held = client.get("/management/v1/grants", params={"principalUser": someone}).json()["grants"]
    assert [(g["resource"], g["privilege"]) for g in held] == [(grant["resource"], "apply")]
    grantable = client.get(f"{base}/grantable-privileges")
    assert grantable.status_code == 200, grantable.text
    assert [(p["privilege"]["name"], p["privilege"]["resource-type"], p["allowed"])
            for p in grantable.json()["privileges"]] == [("ownership", "tag-definition", True),
                                                          ("apply", "tag-definition", True)]
    r = client.post(base, json={"deletes": [{"privilege": "apply", "principal": {"user": someone}}]})
    assert r.status_code == 204, r.text
    assert {"type": "apply", "user": someone} not in client.get(assignments).json()["assignments"]
    assert client.get(base, params={"principalUser": someone}).json()["grants"] == []

    # bad input: a 4xx ErrorModel, nothing appended
    elsewhere = {"x-project-id": client.post("/management/v1/project", json={"project-name": "tg"}).json()[
        "project-id"]}
    entry = {"privilege": "apply", "principal": {"user": someone}}
    before = log_length()
    for path, body, status, error_type in (
            (base, {"writes": [{"privilege": "select", "principal": {"user": someone}}]}, 400,
             "UnknownGrantPrivilege"),
            (base, {"writes": [{"privilege": "manage_tags", "principal": {"user": someone}}]}, 400,
             "UnknownGrantPrivilege"),
            (base, {}, 400, "EmptyGrantDiff"),
            (base, {"writes": [entry], "deletes": [entry]}, 400, "ContradictoryGrantDiff"),
            (base, {"writes": [{"privilege": "apply", "principal": {"role": str(uuid.uuid4())}}]}, 404,
             "NoSuchRoleException"),
            (f"/management/v1/tag-definition/{uuid.uuid4()}/grants", {"writes": [entry]}, 404, None),
            ("/management/v1/tag-definition/not-a-uuid/grants", {"writes": [entry]}, 400, None)):
        r = client.post(path, json=body)
        assert r.status_code == status, (path, body, r.text)
        assert r.json()["error"]["code"] == status and (error_type is None or r.json()["error"]["type"] == error_type)
    # another project's definition is missing here, as on its own endpoints
    for r in (client.post(base, headers=elsewhere, json={"writes": [entry]}), client.get(base, headers=elsewhere),
              client.get(f"{base}/grantable-privileges", headers=elsewhere),
              client.get(f"/management/v1/tag-definition/{tag}", headers=elsewhere),
              client.get(f"/management/v1/permissions/tag/{tag}/assignments", headers=elsewhere),
              client.post(f"/management/v1/permissions/tag/{tag}/assignments", headers=elsewhere,
                          json={"writes": [{"type": "apply", "user": someone}]})):
        assert r.status_code == 404, r.text
    assert log_length() == before


# ---- with OpenFGA ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def own_database(pg_url) -> str:
    return create_database(pg_url, f"grants_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module")
def fga_api(oidc, openfga, own_database, tmp_path_factory):
    s = openfga_server(own_database, tmp_path_factory.mktemp("grants-serve"), oidc, openfga, "grants")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def place(fga_api, oidc, tmp_path_factory):
    """Spark (the operator, owner of what it makes) builds a project with a warehouse, a namespace and a table;
    bob has a user and nothing else."""
    with signed_in(fga_api, oidc, "spark") as spark:
        r = spark.post("/management/v1/bootstrap", json={"accept-terms-of-use": True, "is-operator": True})
        assert r.status_code == 204, r.text
        project = spark.post("/management/v1/project", json={"project-name": "grants"}).json()["project-id"]
        location = tmp_path_factory.mktemp("grants-wh")
        r = spark.post("/management/v1/warehouse", json={
            "warehouse-name": "wh", "project-id": project,
            "storage-profile": {"type": "file", "location": f"file://{location}"}})
        assert r.status_code == 201, r.text
        w = r.json()["warehouse-id"]
        ns = spark.post(f"/catalog/v1/{w}/namespaces", json={"namespace": ["ns"]}).json()["namespace-uuid"]
        r = spark.post(f"/catalog/v1/{w}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
        assert r.status_code == 200, r.text
        table = r.json()["metadata"]["table-uuid"]
    with signed_in(fga_api, oidc, "bob") as bob:
        assert bob.get("/management/v1/whoami").status_code == 200
    return {"project": project, "warehouse": w, "namespace": ns, "table": table,
            "grants": f"/management/v1/warehouse/{w}/table/{table}/grants",
            "load": f"/catalog/v1/{w}/namespaces/ns/tables/t"}


def test_a_grant_given_through_the_grants_api_decides_real_requests_and_shows_as_an_assignment(
        fga_api, oidc, place, own_database):
    select = {"privilege": "select", "principal": {"user": BOB}}
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        assert bob.get(place["load"]).status_code == 404  # not even visible
        before = event_count(own_database)
        r = bob.post(place["grants"], json={"writes": [select]})  # bob may not hand on what he lacks
        assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException", r.text
        assert bob.get(place["grants"]).status_code in (403, 404)
        assert event_count(own_database) == before
        grantable = bob.get(f"{place['grants']}/grantable-privileges").json()["privileges"]
        assert not any(p["allowed"] for p in grantable)
        assert all(p["allowed"] for p in spark.get(f"{place['grants']}/grantable-privileges").json()["privileges"])

        r = spark.post(place["grants"], json={"writes": [select]})
        assert r.status_code == 204, r.text
        assert event_count(own_database) == before + 1  # one Grant event, the assignments' own
        assignments = spark.get(f"/management/v1/permissions/warehouse/{place['warehouse']}/table/"
                                f"{place['table']}/assignments").json()["assignments"]
        assert {"type": "select", "user": BOB} in assignments
        assert bob.get(place["load"]).status_code == 200
        assert bob.post(place["load"], json={"updates": [{"action": "set-properties", "updates": {"a": "b"}}]}
                        ).status_code == 403
        # bob reads his own grants without the right to read the table's
        mine = bob.get(place["grants"], params={"principalUser": BOB})
        assert mine.status_code == 200, mine.text
        assert [g["privilege"] for g in mine.json()["grants"]] == ["select"]
        assert bob.get(place["grants"]).status_code == 403
        assert bob.get(place["grants"], params={"principalUser": "oidc~spark"}).status_code == 403
        actions = [a["action"] for a in bob.get(f"/management/v1/warehouse/{place['warehouse']}/table/"
                                                f"{place['table']}/actions").json()["allowed-actions"]]
        assert "read_data" in actions and "get_metadata" in actions
        assert "write_data" not in actions and "drop" not in actions and "read_grants" not in actions

        # revoked through the older API: gone from the grants listing, and from bob's reach
        r = spark.post(f"/management/v1/permissions/warehouse/{place['warehouse']}/table/{place['table']}"
                       "/assignments", json={"deletes": [{"type": "select", "user": BOB}]})
        assert r.status_code == 204, r.text
        assert spark.get(place["grants"], params={"principalUser": BOB}).json()["grants"] == []
        assert bob.get(place["load"]).status_code == 404


def test_batch_check_answers_as_single_checks_do(fga_api, oidc, place, own_database):
    w, table, ns = place["warehouse"], place["table"], place["namespace"]
    asked = [("table", {"table-id": table, "warehouse-id": w}, "read_data"),
             ("table", {"table-id": table, "warehouse-id": w}, "write_data"),
             ("namespace", {"namespace-id": ns, "warehouse-id": w}, "create_table"),
             ("warehouse", {"warehouse-id": w}, "get_metadata"),
             ("server", {}, "create_project")]
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        r = spark.post(f"/management/v1/warehouse/{w}/namespace/{ns}/grants",
                       json={"writes": [{"privilege": "select", "principal": {"user": BOB}}]})
        assert r.status_code == 204, r.text
        try:
            checks = [{"operation": {kind: {"action": action, **ids}}} for kind, ids, action in asked]
            batch = bob.post("/management/v1/action/batch-check", json={"checks": checks})
            assert batch.status_code == 200, batch.text
            singles = [bob.post("/management/v1/permissions/check", json=c).json()["allowed"] for c in checks]
            assert [res["allowed"] for res in batch.json()["results"]] == singles == [True, False, False, True,
                                                                                      False]
            # spark asks the same for bob (spark may read the assignments everywhere)
            for_bob = spark.post("/management/v1/action/batch-check", json={"checks": [
                {**c, "identity": {"user": BOB}} for c in checks]})
            assert [res["allowed"] for res in for_bob.json()["results"]] == singles
            # bob may not ask on spark's behalf; asking appended nothing
            before = event_count(own_database)
            refused = bob.post("/management/v1/action/batch-check",
                               json={"checks": [{**checks[0], "identity": {"user": "oidc~spark"}}]})
            assert refused.status_code == 403, refused.text
            assert event_count(own_database) == before
        finally:
            spark.post(f"/management/v1/warehouse/{w}/namespace/{ns}/grants",
                       json={"deletes": [{"privilege": "select", "principal": {"user": BOB}}]})


# ---- roles: transitive listings, metadata, source system (allowall) ---------------------------------------------

def test_transitive_memberships_follow_nested_roles_both_ways(client):
    project = {"x-project-id": client.post("/management/v1/project", json={"project-name": "roles"}).json()[
        "project-id"]}
    someone = f"oidc~t-{uuid.uuid4().hex[:8]}"
    assert client.post("/management/v1/user", json={"id": someone, "name": "T", "user-type": "human"}
                       ).status_code == 201
    outer, middle, inner = (client.post("/management/v1/role", headers=project, json={"name": n}).json()["id"]
                            for n in ("outer", "middle", "inner"))
    for role, member in ((outer, {"type": "role", "id": middle}), (middle, {"type": "role", "id": inner}),
                         (inner, {"type": "user", "id": someone}), (outer, {"type": "user", "id": someone})):
        r = client.post(f"/management/v1/role/{role}/members", headers=project, json={"members": [member]})
        assert r.status_code == 200, r.text
    members = client.get(f"/management/v1/role/{outer}/members/transitive", headers=project).json()["members"]
    assert sorted((m["type"], m["id"]) for m in members) == sorted(
        [("role", middle), ("role", inner), ("user", someone)])  # the user reached twice is listed once
    users = client.get(f"/management/v1/role/{outer}/members/transitive", headers=project,
                       params={"type": "user"}).json()["members"]
    assert [(m["id"], m["name"]) for m in users] == [(someone, "T")]
    above = client.get(f"/management/v1/role/{inner}/member-of/transitive", headers=project).json()["roles"]
    assert [r["id"] for r in above] == [outer, middle]  # in creation order
    direct = client.get(f"/management/v1/role/{inner}/member-of", headers=project).json()["roles"]
    assert [r["id"] for r in direct] == [middle]
    held = client.get(f"/management/v1/user/{someone}/roles/transitive", headers=project,
                      params={"pageSize": 2}).json()
    assert [r["id"] for r in held["roles"]] == [outer, middle] and held["next-page-token"]
    rest = client.get(f"/management/v1/user/{someone}/roles/transitive", headers=project,
                      params={"pageSize": 2, "pageToken": held["next-page-token"]}).json()
    assert [r["id"] for r in rest["roles"]] == [inner] and rest["next-page-token"] is None


def test_role_metadata_and_source_system(client, log_length):
    project = {"x-project-id": client.post("/management/v1/project", json={"project-name": "src"}).json()[
        "project-id"]}
    role = client.post("/management/v1/role", headers=project, json={"name": "mirrored"}).json()
    other = client.post("/management/v1/role", headers=project, json={
        "name": "taken", "provider-id": "oidc", "source-id": "group-2"}).json()
    # metadata needs no project: a role of another project is named the same
    meta = client.get(f"/management/v1/role/{role['id']}/metadata")
    assert meta.status_code == 200, meta.text
    assert meta.json() == {"id": role["id"], "ident": role["ident"], "provider-id": "lakekeeper",
                           "source-id": role["id"], "name": "mirrored", "project-id": project["x-project-id"]}
    assert client.get(f"/management/v1/role/{uuid.uuid4()}/metadata").status_code == 404

    before = log_length()
    path = f"/management/v1/role/{role['id']}/source-system"
    r = client.put(path, headers=project, json={"provider-id": "oidc", "source-id": "group-1"})
    assert r.status_code == 200, r.text
    assert r.json()["ident"] == "oidc~group-1" and r.json()["updated-at"]
    assert log_length() > before
    assert client.get(f"/management/v1/role/{role['id']}", headers=project).json()["ident"] == "oidc~group-1"
    # the old ident is free again, the new one taken
    again = client.post("/management/v1/role", headers=project, json={
        "name": "reuse", "provider-id": "lakekeeper", "source-id": role["id"]})
    assert again.status_code == 201, again.text
    assert client.post("/management/v1/role", headers=project, json={
        "name": "clash", "provider-id": "oidc", "source-id": "group-1"}).status_code == 409
    before = log_length()
    for body, status in (({"provider-id": "oidc", "source-id": "group-2"}, 409),  # the other role's ident
                         ({"provider-id": "a~b", "source-id": "x"}, 400),
                         ({"provider-id": "oidc"}, 400),
                         ({"provider-id": "oidc", "source-id": "group-1"}, 200)):  # unchanged: nothing recorded
        r = client.put(path, headers=project, json=body)
        assert r.status_code == status, (body, r.text)
        if status != 200:
            assert r.json()["error"]["code"] == status
    assert client.put(f"/management/v1/role/{uuid.uuid4()}/source-system", headers=project,
                      json={"provider-id": "p", "source-id": "s"}).status_code == 404
    assert log_length() == before
    assert other["ident"] == "oidc~group-2"


def test_a_grant_to_a_role_reaches_its_members_and_actions_answer_per_principal(fga_api, oidc, place):
    w, table = place["warehouse"], place["table"]
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        role = spark.post("/management/v1/role", json={"name": f"readers-{uuid.uuid4().hex[:6]}"}).json()["id"]
        r = spark.post(f"/management/v1/role/{role}/members", json={"members": [{"type": "user", "id": BOB}]})
        assert r.status_code == 200, r.text
        reader = {"privilege": "select", "principal": {"role": role}}
        assert bob.get(place["load"]).status_code == 404
        assert spark.post(place["grants"], json={"writes": [reader]}).status_code == 204
        try:
            assert bob.get(place["load"]).status_code == 200  # through the role
            listed = spark.get(place["grants"], params={"principalRole": role}).json()["grants"]
            assert [(g["principal"], g["privilege"]) for g in listed] == [({"role": role}, "select")]
            held = spark.get("/management/v1/grants", params={"principalRole": role}).json()["grants"]
            assert [g["resource"] for g in held] == [{"type": "table", "warehouse-id": w, "table-id": table}]
            # the role's actions on the table, asked by spark; bob may not ask on the role's behalf
            as_role = spark.get(f"/management/v1/warehouse/{w}/table/{table}/actions",
                                params={"principalRole": role}).json()["allowed-actions"]
            assert {"action": "read_data"} in as_role and {"action": "write_data"} not in as_role
            assert bob.get(f"/management/v1/warehouse/{w}/table/{table}/actions",
                           params={"principalRole": role}).status_code == 403
        finally:
            assert spark.post(place["grants"], json={"deletes": [reader]}).status_code == 204
        assert bob.get(place["load"]).status_code == 404
        # users: everything to oneself, to another only what the server grants
        mine = bob.get(f"/management/v1/user/{BOB}/actions").json()["allowed-actions"]
        assert [a["action"] for a in mine] == ["read", "update", "delete", "read_role_assignments"]
        assert bob.get("/management/v1/user/oidc~spark/actions").json()["allowed-actions"] == []
        assert len(spark.get(f"/management/v1/user/{BOB}/actions").json()["allowed-actions"]) == 4
        # who may hand on what on the warehouse: spark everything; bob, who may not see it, learns not even that
        spark_hands = spark.get(f"/management/v1/permissions/warehouse/{w}/authorizer-actions").json()
        assert "grant_select" in spark_hands["allowed-actions"]
        hidden = bob.get(f"/management/v1/permissions/warehouse/{w}/authorizer-actions")
        assert hidden.status_code == 404 and hidden.json()["error"]["type"] == "NoSuchWarehouseException"


def test_apply_granted_on_a_tag_lets_its_holder_tag_what_they_may_modify(fga_api, oidc, place, own_database):
    w, table, ns = place["warehouse"], place["table"], place["namespace"]
    table_tags = f"/management/v1/warehouse/{w}/table/{table}/tags"
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        name = f"certified-{uuid.uuid4().hex[:6]}"
        tag = _tag_definition(spark, name)
        tag_grants = f"/management/v1/tag-definition/{tag}/grants"
        apply = {"privilege": "apply", "principal": {"user": BOB}}
        modify = {"privilege": "modify", "principal": {"user": BOB}}
        assert spark.post(place["grants"], json={"writes": [modify]}).status_code == 204
        try:
            before = event_count(own_database)
            r = bob.put(f"{table_tags}/{name}", json={})  # modify on the table, no apply on the tag
            assert r.status_code in (403, 404), r.text
            assert bob.post(tag_grants, json={"writes": [apply]}).status_code == 403  # nor may he give it himself
            assert not any(p["allowed"] for p in bob.get(f"{tag_grants}/grantable-privileges").json()["privileges"])
            assert event_count(own_database) == before

            r = spark.post(tag_grants, json={"writes": [apply]})
            assert r.status_code == 204, r.text
            assert event_count(own_database) == before + 1
            assigned = spark.get(f"/management/v1/permissions/tag/{tag}/assignments").json()["assignments"]
            assert {"type": "apply", "user": BOB} in assigned
            r = bob.put(f"{table_tags}/{name}", json={})
            assert r.status_code == 200, r.text
            assert [t["name"] for t in bob.get(table_tags).json()["tags"]] == [name]
            # bob reads his own grants on the tag, not everyone's
            mine = bob.get(tag_grants, params={"principalUser": BOB})
            assert mine.status_code == 200, mine.text
            assert [g["privilege"] for g in mine.json()["grants"]] == ["apply"]
            assert bob.get(tag_grants).status_code == 403
            # apply without the right to tag the target: the namespace is not his to modify
            assert bob.put(f"/management/v1/warehouse/{w}/namespace/{ns}/tags/{name}", json={}).status_code in (
                400, 403, 404)
            # revoked through the older API: bob may no longer take it off
            r = spark.post(f"/management/v1/permissions/tag/{tag}/assignments",
                           json={"deletes": [{"type": "apply", "user": BOB}]})
            assert r.status_code == 204, r.text
            assert spark.get(tag_grants, params={"principalUser": BOB}).json()["grants"] == []
            assert bob.delete(f"{table_tags}/{name}").status_code in (403, 404)
        finally:
            spark.post(place["grants"], json={"deletes": [modify]})
            spark.post(tag_grants, json={"deletes": [apply]})


def test_manage_tags_and_tag_creator_are_lakekeepers_privileges_in_our_model(fga_api, oidc, place):
    """``manage_tags`` tags an object (and what it holds) without ``modify``; ``tag_creator`` makes definitions."""
    w, table, ns = place["warehouse"], place["table"], place["namespace"]
    project_grants = "/management/v1/project/grants"
    namespace_grants = f"/management/v1/warehouse/{w}/namespace/{ns}/grants"
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        name = f"reviewed-{uuid.uuid4().hex[:6]}"
        tag = _tag_definition(spark, name)
        grants = [(place["grants"], {"privilege": "select", "principal": {"user": BOB}}),
                  (namespace_grants, {"privilege": "manage_tags", "principal": {"user": BOB}}),
                  (f"/management/v1/tag-definition/{tag}/grants", {"privilege": "apply", "principal": {"user": BOB}})]
        try:
            for path, entry in grants:
                assert spark.post(path, json={"writes": [entry]}).status_code == 204, path
            refused = bob.post("/management/v1/tag-definition", json={"name": f"x-{name}", "scope": ["table"],
                                                                      "value-kind": "marker"})
            assert refused.status_code == 403, refused.text  # he sees the project now, but may not make tags
            r = bob.put(f"/management/v1/warehouse/{w}/table/{table}/tags/{name}", json={})
            assert r.status_code == 200, r.text  # manage_tags from the namespace, though bob may not modify
            assert bob.post(place["load"], json={"updates": [{"action": "set-properties", "updates": {"a": "b"}}]}
                            ).status_code == 403
            assert bob.delete(f"/management/v1/warehouse/{w}/table/{table}/tags/{name}").status_code == 204
            hands = spark.get(f"/management/v1/permissions/namespace/{ns}/authorizer-actions")
            assert "grant_manage_tags" in hands.json()["allowed-actions"], hands.text

            creator = {"privilege": "tag_creator", "principal": {"user": BOB}}
            assert spark.post(project_grants, json={"writes": [creator]}).status_code == 204
            grants.append((project_grants, creator))
            made = bob.post("/management/v1/tag-definition", json={"name": f"x-{name}", "scope": ["table"],
                                                                   "value-kind": "marker"})
            assert made.status_code == 201, made.text
            assert spark.get(project_grants, params={"principalUser": BOB}).json()["grants"][0]["privilege"] == (
                "tag_creator")
        finally:
            for path, entry in grants:
                spark.post(path, json={"deletes": [entry]})


def test_manage_maintenance_granted_on_a_namespace_lets_its_holder_set_policies_below_it(fga_api, oidc, place,
                                                                                       own_database):
    """Our extension of Lakekeeper's vocabulary: ``manage_maintenance`` sets maintenance policies (which ``modify``
    does not), granted by an owner through either API, listed in the assignments and the grants, revoked again."""
    w, table, ns = place["warehouse"], place["table"], place["namespace"]
    namespace_grants = f"/management/v1/warehouse/{w}/namespace/{ns}/grants"
    table_policy = f"/management/v1/warehouse/{w}/table/{table}/maintenance-policies/system.snapshot-expiry"
    namespace_policy = f"/management/v1/warehouse/{w}/namespace/{ns}/maintenance-policies/system.snapshot-expiry"
    select = {"privilege": "select", "principal": {"user": BOB}}
    maintain = {"privilege": "manage_maintenance", "principal": {"user": BOB}}
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        assert spark.post(place["grants"], json={"writes": [select]}).status_code == 204
        try:
            before = event_count(own_database)
            refused = bob.put(table_policy, json={"min-snapshots-to-keep": 3})
            assert refused.status_code == 403, refused.text  # he sees the table, but may not decide its upkeep
            assert event_count(own_database) == before
            r = bob.post(namespace_grants, json={"writes": [maintain]})  # not his to hand on
            assert r.status_code == 403, r.text
            offered = {p["privilege"]["name"]: p["allowed"]
                       for p in spark.get(f"{namespace_grants}/grantable-privileges").json()["privileges"]}
            assert offered["manage_maintenance"] is True

            assert spark.post(namespace_grants, json={"writes": [maintain]}).status_code == 204
            assignments = spark.get(f"/management/v1/permissions/namespace/{ns}/assignments").json()["assignments"]
            assert {"type": "manage_maintenance", "user": BOB} in assignments
            [listed] = spark.get(namespace_grants, params={"principalUser": BOB}).json()["grants"]
            assert (listed["privilege"], listed["recognized"]) == ("manage_maintenance", True)
            set_ = bob.put(table_policy, json={"min-snapshots-to-keep": 3})  # inherited from the namespace
            assert set_.status_code == 200 and set_.json()["set-by"] == BOB, set_.text
            assert bob.put(namespace_policy, json={"enabled": True}).status_code == 200
            assert bob.delete(namespace_policy).status_code == 204
            # modify is still not his: the grant gives upkeep, not writes
            assert bob.post(place["load"], json={"updates": [{"action": "set-properties", "updates": {"a": "b"}}]}
                            ).status_code == 403

            # revoked through the older API: refused again
            r = spark.post(f"/management/v1/permissions/namespace/{ns}/assignments",
                           json={"deletes": [{"type": "manage_maintenance", "user": BOB}]})
            assert r.status_code == 204, r.text
            assert spark.get(namespace_grants, params={"principalUser": BOB}).json()["grants"] == []
            assert bob.delete(table_policy).status_code == 403
            # and given on the table alone, through the older API
            r = spark.post(f"/management/v1/permissions/warehouse/{w}/table/{table}/assignments",
                           json={"writes": [{"type": "manage_maintenance", "user": BOB}]})
            assert r.status_code == 204, r.text
            assert bob.delete(table_policy).status_code == 204
            assert bob.put(namespace_policy, json={"enabled": True}).status_code == 403  # the table's only
        finally:
            spark.post(place["grants"], json={"deletes": [select, maintain]})
            spark.post(namespace_grants, json={"deletes": [maintain]})
