"""Users and roles over HTTP against a real server and Postgres: every endpoint in Lakekeeper's shapes, paging,
search, bad input refused without touching the log, membership loops refused (also when two requests race),
deletions that take their memberships along, the events in the history, implicit provisioning of one principal
from many threads and processes recording one user, and a rebuild of the read model giving identical rows."""

import os
import subprocess
import sys
import threading
import uuid
from datetime import UTC, datetime, timedelta

from lakeledger.bootstrap import Container
from lakeledger.identity.principal import Principal
from lakeledger.settings import Settings

READ_MODEL = {"ll_users": "id", "ll_roles": "id", "ll_role_members": "role_id, member_type, member_id"}


def _uid(prefix: str = "u") -> str:
    return f"oidc~{prefix}-{uuid.uuid4().hex[:10]}"


def _user(client, name="Ana Example", user_type="human", **extra) -> dict:
    body = {"id": _uid(), "name": name, "user-type": user_type, **extra}
    r = client.post("/management/v1/user", json=body)
    assert r.status_code == 201, r.text
    return r.json()


def _role(client, name=None, headers=None, **extra) -> dict:
    r = client.post("/management/v1/role", json={"name": name or f"role-{uuid.uuid4().hex[:8]}", **extra},
                    headers=headers or {})
    assert r.status_code == 201, r.text
    return r.json()


def _add(client, role_id, *members, headers=None):
    return client.post(f"/management/v1/role/{role_id}/members", headers=headers or {},
                       json={"members": [{"type": t, "id": i} for t, i in members]})


def _members(client, role_id, **params) -> list[tuple[str, str]]:
    r = client.get(f"/management/v1/role/{role_id}/members", params=params)
    assert r.status_code == 200, r.text
    return [(m["type"], m["id"]) for m in r.json()["members"]]


def _refused(response, status: int, words: str = "") -> None:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) >= {"message", "type", "code"} and error["code"] == status
    assert words.lower() in error["message"].lower(), error["message"]


def _project(client) -> dict:
    r = client.post("/management/v1/project", json={"project-name": f"p-{uuid.uuid4().hex[:8]}"})
    assert r.status_code == 201, r.text
    return {"x-project-id": r.json()["project-id"]}


# --- users -------------------------------------------------------------------------------------------------------

def test_a_user_is_created_read_replaced_and_deleted(client, log_length):
    user = _user(client, email="ana@example.com")
    assert user["id"].startswith("oidc~u-") and user["name"] == "Ana Example"
    assert user["email"] == "ana@example.com" and user["user-type"] == "human"
    assert user["last-updated-with"] == "create-endpoint" and user["created-at"] and user["updated-at"] is None
    path = f"/management/v1/user/{user['id']}"
    assert client.get(path).json() == user

    before = log_length()
    again = client.post("/management/v1/user", json={"id": user["id"], "name": "Other", "user-type": "human"})
    _refused(again, 409, "already exists")
    assert log_length() == before and client.get(path).json() == user

    updated = client.post("/management/v1/user", json={"id": user["id"], "name": "Ana E.", "user-type": "human",
                                                       "update-if-exists": True})
    assert updated.status_code == 200 and updated.json()["name"] == "Ana E."

    replaced = client.put(path, json={"name": "Ana Replaced", "user-type": "application"})
    assert replaced.status_code == 200, replaced.text
    body = replaced.json()
    # PUT replaces: the email it did not send is gone
    assert (body["name"], body["email"], body["user-type"]) == ("Ana Replaced", None, "application")
    assert body["last-updated-with"] == "update-endpoint" and body["updated-at"] is not None
    posted = client.post(path, json={"name": "Ana Posted", "email": "a@x.org", "user-type": "human"})
    assert posted.status_code == 200 and posted.json()["email"] == "a@x.org"
    before = log_length()
    assert client.put(path, json={"name": "Ana Posted", "email": "a@x.org", "user-type": "human"}).status_code == 200
    assert log_length() == before  # nothing changed, nothing recorded

    assert client.delete(path).status_code == 204
    _refused(client.get(path), 404, user["id"])
    before = log_length()
    _refused(client.delete(path), 404)
    _refused(client.put(path, json={"name": "x", "user-type": "human"}), 404)
    assert log_length() == before

    # created again after its deletion: the same id, a fresh user
    back = client.post("/management/v1/user", json={"id": user["id"], "name": "Back", "user-type": "human"})
    assert back.status_code == 201 and back.json()["name"] == "Back"


def test_bad_user_input_is_refused_and_records_nothing(client, log_length):
    existing = _user(client)
    path = f"/management/v1/user/{existing['id']}"
    before = log_length()
    cases = [
        ({"name": "No Id", "user-type": "human"}, "User ID could not be extracted"),  # anonymous: the id is needed
        ({"id": "no-idp-separator", "name": "x", "user-type": "human"}, "<idp-id>~<subject>"),
        ({"id": "oidc~", "name": "x", "user-type": "human"}, "<idp-id>~<subject>"),
        ({"id": "oidc~" + "s" * 128, "name": "x", "user-type": "human"}, "shorter than 128"),
        ({"id": "oidc~a\u0001b", "name": "x", "user-type": "human"}, "control characters"),
        ({"id": _uid(), "user-type": "human"}, "Name must be provided"),
        ({"id": _uid(), "name": "x"}, "user-type must be provided"),
        ({"id": _uid(), "name": "x", "user-type": "robot"}, "user-type"),
        ({"id": _uid(), "name": "   ", "user-type": "human"}, "Name cannot be empty"),
        ({"id": _uid(), "name": "x\ny", "user-type": "human"}, "control characters"),
        ({"id": _uid(), "name": "x", "user-type": "human", "nmae": "typo"}, "nmae"),
        ({"id": 42, "name": "x", "user-type": "human"}, ""),
    ]
    for body, words in cases:
        _refused(client.post("/management/v1/user", json=body), 400, words)
    _refused(client.post("/management/v1/user", content=b"{not json", headers={"content-type": "application/json"}),
             400)
    _refused(client.put(path, json={"name": "", "user-type": "human"}), 400, "Name cannot be empty")
    _refused(client.put(path, json={"name": "x"}), 400, "user-type")
    _refused(client.post("/management/v1/search/user", json={}), 400, "search")
    for params in ({"pageToken": "not-a-token"}, {"pageToken": "", "pageSize": "0"}, {"pageSize": "many"}):
        _refused(client.get("/management/v1/user", params=params), 400, "page")
    assert log_length() == before


def test_users_are_listed_in_pages_and_filtered_by_name(client):
    tag = uuid.uuid4().hex[:8]
    made = [_user(client, name=f"Pager {tag} {i}")["id"] for i in range(5)]
    _user(client, name="Someone Else")
    seen, token, pages = [], "", 0
    while token is not None:
        r = client.get("/management/v1/user", params={"name": f"pager {tag.upper()}", "pageToken": token,
                                                      "pageSize": "2"})
        assert r.status_code == 200, r.text
        body = r.json()
        assert set(body) == {"users", "next-page-token"} and len(body["users"]) <= 2
        seen += [u["id"] for u in body["users"]]
        token, pages = body["next-page-token"], pages + 1
    assert seen == made and pages == 3  # in creation order, the last page without a token
    # no pageToken: the first page of the default size, as Lakekeeper answers
    everyone = client.get("/management/v1/user").json()["users"]
    assert 0 < len(everyone) <= 100
    # a name filter's LIKE wildcards are literal
    assert client.get("/management/v1/user", params={"name": f"pager%{tag}"}).json()["users"] == []


def test_search_finds_users_by_id_name_and_email(client):
    tag = uuid.uuid4().hex[:8]
    exact = _user(client, name=f"Zed {tag}")
    by_name = _user(client, name=f"Bea {tag}son")
    by_mail = _user(client, name="Carl", email=f"carl.{tag}@example.com")
    r = client.post("/management/v1/search/user", json={"search": tag})
    assert r.status_code == 200, r.text
    found = [u["id"] for u in r.json()["users"]]
    assert set(found) == {exact["id"], by_name["id"], by_mail["id"]}
    assert set(r.json()["users"][0]) == {"id", "name", "email", "user-type"}
    assert client.post("/management/v1/search/user", json={"search": by_mail["id"]}).json()["users"][0]["id"] == \
        by_mail["id"]
    assert client.post("/management/v1/search/user", json={"search": f"nobody-{tag}"}).json() == {"users": []}


def test_whoami_without_a_token_is_401(client):
    # authentication is off on this server: every caller is anonymous, which has no user (as in Lakekeeper)
    _refused(client.get("/management/v1/whoami"), 401, "anonymous")


# --- roles -------------------------------------------------------------------------------------------------------

def test_a_role_is_created_read_updated_listed_and_deleted(client, log_length):
    role = _role(client, name="analysts", description="read everything")
    assert role["provider-id"] == "lakekeeper" and role["source-id"] == role["id"]
    assert role["ident"] == f"lakekeeper~{role['id']}" and role["project-id"] == str(uuid.UUID(int=0))
    assert role["description"] == "read everything" and role["updated-at"] is None
    path = f"/management/v1/role/{role['id']}"
    assert client.get(path).json() == role

    updated = client.post(path, json={"name": "analysts-eu"})
    assert updated.status_code == 200, updated.text
    # Lakekeeper's update: an absent description is removed
    assert updated.json()["name"] == "analysts-eu" and updated.json()["description"] is None

    source = uuid.uuid4().hex
    external = _role(client, name="from-idp", **{"provider-id": "oidc", "source-id": source})
    assert external["ident"] == f"oidc~{source}"
    before = log_length()
    _refused(client.post("/management/v1/role", json={"name": "dup", "provider-id": "oidc", "source-id": source}),
             409, f"oidc~{source}")
    assert log_length() == before

    listed = client.get("/management/v1/role", params={"roleIds": [role["id"], external["id"]]}).json()
    assert [r["id"] for r in listed["roles"]] == [role["id"], external["id"]] and listed["next-page-token"] is None
    assert [r["id"] for r in client.get("/management/v1/role", params={"sourceIds": source}).json()["roles"]] == \
        [external["id"]]

    # roles belong to a project: another project neither sees nor touches it
    other = _project(client)
    _refused(client.get(path, headers=other), 404)
    _refused(client.delete(path, headers=other), 404)
    assert client.get("/management/v1/role", headers=other).json()["roles"] == []
    mine = _role(client, name="theirs", headers=other)
    assert mine["project-id"] == other["x-project-id"]
    assert [r["id"] for r in client.get("/management/v1/role", headers=other).json()["roles"]] == [mine["id"]]

    assert client.delete(path).status_code == 204
    _refused(client.get(path), 404)
    _refused(client.delete(path), 404)
    # its ident is free again once it is deleted
    assert client.delete(f"/management/v1/role/{external['id']}").status_code == 204
    _role(client, name="again", **{"provider-id": "oidc", "source-id": source})


def test_roles_are_paged_and_searched(client):
    project = _project(client)
    tag = uuid.uuid4().hex[:6]
    made = [_role(client, name=f"team-{tag}-{i}", headers=project)["id"] for i in range(5)]
    seen, token = [], ""
    while token is not None:
        body = client.get("/management/v1/role", params={"pageToken": token, "pageSize": "2"},
                          headers=project).json()
        seen += [r["id"] for r in body["roles"]]
        token = body["next-page-token"]
    assert seen == made
    found = client.post("/management/v1/search/role", json={"search": f"team-{tag}-3"}, headers=project).json()
    assert found["roles"][0]["id"] == made[3]
    assert client.post("/management/v1/search/role", json={"search": made[1]}, headers=project).json()["roles"][0][
        "id"] == made[1]
    # the deprecated project-id of the body works as the header does
    deprecated = client.post("/management/v1/search/role",
                             json={"search": f"team-{tag}", "project-id": project["x-project-id"]}).json()
    assert {r["id"] for r in deprecated["roles"]} == set(made)


def test_bad_role_input_is_refused_and_records_nothing(client, log_length):
    role = _role(client)
    path = f"/management/v1/role/{role['id']}"
    user = _user(client)
    before = log_length()
    for body, words in [({"name": ""}, "Role name cannot be empty"), ({}, "name"),
                        ({"name": "x", "provider-id": "oidc"}, "provided together"),
                        ({"name": "x", "provider-id": "a~b", "source-id": "s"}, "'~'"),
                        ({"name": "x", "description": 7}, ""), ({"name": "x", "colour": "red"}, "colour")]:
        _refused(client.post("/management/v1/role", json=body), 400, words)
    _refused(client.post("/management/v1/role", json={"name": "x"}, headers={"x-project-id": "not-a-uuid"}), 400,
             "x-project-id")
    _refused(client.post("/management/v1/role", json={"name": "x"}, headers={"x-project-id": str(uuid.uuid4())}),
             404, "Project")
    _refused(client.post(path, json={"name": " "}), 400, "Role name cannot be empty")
    _refused(client.get("/management/v1/role/not-a-uuid"), 400)
    _refused(client.get(f"/management/v1/role/{uuid.uuid4()}"), 404)
    for members, status, words in [
        ([{"type": "group", "id": "x"}], 400, ""),
        ([{"type": "user", "id": "no-separator"}], 400, "<idp-id>~<subject>"),
        ([{"type": "role", "id": "not-a-uuid"}], 400, "UUID"),
        ([{"type": "user", "id": user["id"], "extra": 1}], 400, "extra"),
        ([{"type": "user", "id": _uid()}], 404, "create it"),  # not a user (yet)
        ([{"type": "role", "id": str(uuid.uuid4())}], 404, "Role does not exist"),
        ([{"type": "user", "id": user["id"]}, {"type": "role", "id": role["id"]}], 400, "itself"),
    ]:
        _refused(client.post(f"{path}/members", json={"members": members}), status, words)
    _refused(client.delete(f"{path}/members/group/x"), 400)
    _refused(client.get(f"{path}/members", params={"type": "group"}), 400)
    _refused(client.get(f"{path}/members", params={"pageToken": "bogus"}), 400, "pageToken")
    assert _members(client, role["id"]) == []  # the batch with a bad member added none of it
    assert log_length() == before


# --- membership --------------------------------------------------------------------------------------------------

def test_members_are_added_listed_paged_and_removed(client, log_length):
    parent, child = _role(client, name="parent"), _role(client, name="child")
    ana, bo = _user(client, name="Ana", email="ana@x.org"), _user(client, name="Bo", user_type="application")
    r = _add(client, parent["id"], ("user", ana["id"]), ("user", bo["id"]), ("role", child["id"]))
    assert r.status_code == 200, r.text
    assert r.json() == {"members": [{"type": "user", "id": ana["id"]}, {"type": "user", "id": bo["id"]},
                                    {"type": "role", "id": child["id"]}]}
    body = client.get(f"/management/v1/role/{parent['id']}/members").json()
    assert body["next-page-token"] is None
    by_id = {m["id"]: m for m in body["members"]}
    assert by_id[ana["id"]] == {"type": "user", "id": ana["id"], "name": "Ana", "email": "ana@x.org",
                                "user-type": "human"}
    assert by_id[child["id"]] == {"type": "role", "id": child["id"], "ident": child["ident"], "name": "child"}
    assert _members(client, parent["id"], type="role") == [("role", child["id"])]
    page1 = client.get(f"/management/v1/role/{parent['id']}/members", params={"pageToken": "", "pageSize": "2"}).json()
    page2 = client.get(f"/management/v1/role/{parent['id']}/members",
                       params={"pageToken": page1["next-page-token"], "pageSize": "2"}).json()
    assert len(page1["members"]) == 2 and len(page2["members"]) == 1 and page2["next-page-token"] is None
    assert {m["id"] for m in page1["members"] + page2["members"]} == set(by_id)

    member_of = client.get(f"/management/v1/role/{child['id']}/member-of").json()
    assert member_of == {"roles": [{"id": parent["id"], "ident": parent["ident"], "name": "parent"}],
                         "next-page-token": None}
    assert [r["id"] for r in client.get(f"/management/v1/user/{ana['id']}/roles").json()["roles"]] == [parent["id"]]

    before = log_length()
    assert _add(client, parent["id"], ("user", ana["id"])).status_code == 200  # already there: accepted
    assert log_length() == before
    assert client.delete(f"/management/v1/role/{parent['id']}/members/user/{ana['id']}").status_code == 204
    assert log_length() == before + 1
    assert client.delete(f"/management/v1/role/{parent['id']}/members/user/{ana['id']}").status_code == 204
    assert log_length() == before + 1  # removing an absent member records nothing
    assert ("user", ana["id"]) not in _members(client, parent["id"])


def test_a_membership_loop_is_refused_and_records_nothing(client, log_length):
    a, b, c = (_role(client, name=n) for n in ("a", "b", "c"))
    assert _add(client, a["id"], ("role", b["id"])).status_code == 200
    assert _add(client, b["id"], ("role", c["id"])).status_code == 200
    before = log_length()
    _refused(_add(client, c["id"], ("role", a["id"])), 400, "loop")  # c would contain a, which contains c
    _refused(_add(client, b["id"], ("role", a["id"])), 400, "loop")
    _refused(_add(client, a["id"], ("role", a["id"])), 400, "itself")
    assert log_length() == before
    assert _members(client, c["id"]) == []
    # a diamond is no loop
    d = _role(client, name="d")
    assert _add(client, a["id"], ("role", d["id"])).status_code == 200
    assert _add(client, c["id"], ("role", d["id"])).status_code == 200


def test_two_roles_added_to_each_other_at_once_make_no_loop(client):
    for _ in range(5):
        x, y = _role(client, name="x"), _role(client, name="y")
        answers = []
        barrier = threading.Barrier(2)

        def add(outer, inner):
            barrier.wait()
            answers.append(_add(client, outer["id"], ("role", inner["id"])).status_code)

        threads = [threading.Thread(target=add, args=pair) for pair in ((x, y), (y, x))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(answers) == [200, 400]
        assert len(_members(client, x["id"])) + len(_members(client, y["id"])) == 1


def test_deletions_take_their_memberships_along(client):
    outer, middle, inner = _role(client, name="outer"), _role(client, name="middle"), _role(client, name="inner")
    ana = _user(client, name="Ana")
    assert _add(client, outer["id"], ("role", middle["id"]), ("user", ana["id"])).status_code == 200
    assert _add(client, middle["id"], ("role", inner["id"]), ("user", ana["id"])).status_code == 200
    assert client.delete(f"/management/v1/role/{middle['id']}").status_code == 204
    assert _members(client, outer["id"]) == [("user", ana["id"])]
    assert client.get(f"/management/v1/role/{inner['id']}/member-of").json()["roles"] == []
    assert client.delete(f"/management/v1/user/{ana['id']}").status_code == 204
    assert _members(client, outer["id"]) == []
    _refused(client.get(f"/management/v1/user/{ana['id']}/roles"), 404)


def test_the_history_tells_who_changed_users_and_roles(client):
    # only this test's window: other tests (the OpenAPI fuzzing) record many users and roles of their own
    since = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    role, user = _role(client, name="auditors"), _user(client, name="Dee")
    assert _add(client, role["id"], ("user", user["id"])).status_code == 200
    assert client.delete(f"/management/v1/role/{role['id']}/members/user/{user['id']}",
                         headers={"x-request-id": "req-remove-dee"}).status_code == 204
    assert client.delete(f"/management/v1/user/{user['id']}").status_code == 204
    events = []
    for typ in ("user.created", "role.created", "role.member-added", "role.member-removed", "user.deleted"):
        r = client.get("/management/v1/history", params={"type": typ, "since": since, "pageSize": 1000})
        assert r.status_code == 200, r.text
        events += [e for e in r.json()["events"] if user["id"] in e["summary"] or e["entity"]["id"] == role["id"]]
    summaries = [e["summary"] for e in events]
    assert summaries == [f"created user {user['id']} (Dee, human)", f"created role auditors ({role['ident']})",
                         f"added user {user['id']} to role auditors", f"removed user {user['id']} from role auditors",
                         f"deleted user {user['id']}"]
    removed = events[3]
    assert removed["entity"] == {"type": "role", "id": role["id"], "name": ["auditors"]}
    assert removed["actor"] == "anonymous" and removed["request-id"] == "req-remove-dee"
    assert removed["change"] == {"project_id": role["project-id"], "member_type": "user", "member_id": user["id"]}


# --- implicit provisioning ---------------------------------------------------------------------------------------

def test_one_principal_provisioned_from_many_threads_and_processes_is_one_user(pg_url, data_dir, db, client):
    principal = Principal(id=_uid("sso"), subject="s", issuer="https://idp", name="Sam Sso", email="sam@x.org",
                          kind="human")
    containers = [Container(Settings(pg_url=pg_url, data_dir=data_dir, pg_pool_size=4)) for _ in range(2)]
    try:
        barrier = threading.Barrier(8)
        failures = []

        def provision(container):
            barrier.wait()
            try:
                container.users.provision(principal, "req-first")
            except Exception as e:  # noqa: BLE001 - every thread must come back clean
                failures.append(e)

        threads = [threading.Thread(target=provision, args=(containers[i % 2],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        count = db.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE '%%:User.%%'"
                           " AND convert_from(state, 'UTF8')::jsonb ->> 'user_id' = %s", (principal.id,)).fetchone()[0]
        assert count == 1
        # known now: further calls record nothing and do not even look
        for container in containers:
            assert container.users.is_known(principal)
            container.users.provision(principal, "req-later")
        assert not containers[0].users.is_known(Principal(id=_uid("never-seen")))
        user = client.get(f"/management/v1/user/{principal.id}").json()
        assert (user["name"], user["email"], user["user-type"]) == ("Sam Sso", "sam@x.org", "human")
        assert user["last-updated-with"] == "config-call-creation"
        history = client.get("/management/v1/history", params={"actor": principal.id}).json()["events"]
        assert [e["summary"] for e in history] == [f"provisioned user {principal.id} (Sam Sso, human) on its first "
                                                   "request"]
        # the anonymous caller is never a user
        containers[0].users.provision(Principal(id="anonymous"))
        assert client.get("/management/v1/user/anonymous").status_code == 404
    finally:
        for container in containers:
            container.close()


# --- rebuild -----------------------------------------------------------------------------------------------------

def _snapshot(db):
    return {t: db.execute(f"SELECT * FROM {t} ORDER BY {key}").fetchall() for t, key in READ_MODEL.items()}


def _rebuild(pg_url, data_dir):
    env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    out = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "rebuilt the users-roles read model" in out.stdout


def test_rebuilding_gives_identical_rows(client, db, pg_url, data_dir):
    a, b = _role(client, name="rebuild-a"), _role(client, name="rebuild-b", description="d")
    ana, bo = _user(client, name="Ana"), _user(client, name="Bo")
    assert _add(client, a["id"], ("role", b["id"]), ("user", ana["id"]), ("user", bo["id"])).status_code == 200
    client.put(f"/management/v1/user/{bo['id']}", json={"name": "Bo Renamed", "user-type": "application"})
    client.post(f"/management/v1/role/{b['id']}", json={"name": "rebuild-b2"})
    client.delete(f"/management/v1/role/{a['id']}/members/user/{bo['id']}")
    client.delete(f"/management/v1/user/{ana['id']}")
    before = _snapshot(db)
    assert before["ll_users"] and before["ll_roles"] and before["ll_role_members"]

    _rebuild(pg_url, data_dir)
    assert _snapshot(db) == before

    with db.transaction():
        for table in READ_MODEL:
            db.execute(f"DELETE FROM {table}")
        db.execute("UPDATE ll_projection_positions SET position = 0 WHERE name = 'users-roles'")
    # the next append of a user or role event first applies everything missing, inside its own transaction
    carl = _user(client, name="Carl")
    after = _snapshot(db)
    assert [r for r in after["ll_users"] if r[0] != carl["id"]] == before["ll_users"]
    assert after["ll_roles"] == before["ll_roles"] and after["ll_role_members"] == before["ll_role_members"]
