"""Managed access (Lakekeeper's): a switch on a warehouse or namespace under which owning an object no longer gives
the right to grant on it; only grant authority does (``manage_grants`` on the warehouse, the namespace or above, or
granted on the object).

Two servers: the session's (allowall: the flag is recorded and answered, nothing to enforce) and one of this
module's with a real OpenID provider and a real OpenFGA, where `spark` (the operator, a project admin) makes a
warehouse and a namespace, lets `bob` create in the namespace, and bob owns the table he makes there."""

import uuid

import httpx
import pytest
from support import SCHEMA, create_database, event_count, openfga_server, signed_in
from test_rebuild import _caught_up, _rebuild, _snapshot

BOB, CAROL = "oidc~bob", "oidc~trino-reader"
SOFT = {"type": "soft", "expiration-seconds": 3600}


def _ok(r, status=200):
    assert r.status_code == status, r.text
    return r.json() if r.content else None


# ---- allowall (the session's server) ----------------------------------------------------------------------------

def _namespace(client, warehouse, *path: str) -> str:
    return _ok(client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": list(path)}))["namespace-uuid"]


def test_the_flag_is_recorded_once_and_answered_with_what_is_inherited(client, warehouse, log_length):
    w = warehouse["id"]
    outer = _namespace(client, warehouse, "outer")
    inner = _namespace(client, warehouse, "outer", "inner")
    wh_props, ns_props = f"/management/v1/permissions/warehouse/{w}", "/management/v1/permissions/namespace/{}"
    assert _ok(client.get(wh_props)) == {"managed-access": False}
    assert _ok(client.get(ns_props.format(inner))) == {"managed-access": False, "managed-access-inherited": False}

    before = log_length()
    assert client.post(f"{ns_props.format(outer)}/managed-access", json={"managed-access": True}).status_code == 200
    assert log_length() == before + 1
    # the same value again records nothing
    assert client.post(f"{ns_props.format(outer)}/managed-access", json={"managed-access": True}).status_code == 200
    assert log_length() == before + 1
    assert _ok(client.get(ns_props.format(outer))) == {"managed-access": True, "managed-access-inherited": True}
    assert _ok(client.get(ns_props.format(inner))) == {"managed-access": False, "managed-access-inherited": True}

    # a namespace moved under the managed one is under managed access there
    loose = _namespace(client, warehouse, "loose")
    assert _ok(client.get(ns_props.format(loose)))["managed-access-inherited"] is False
    _ok(client.post(f"/management/v1/warehouse/{w}/namespace/{loose}/move",
                    json={"destination": ["outer", "loose"]}))
    assert _ok(client.get(ns_props.format(loose))) == {"managed-access": False, "managed-access-inherited": True}
    before = log_length()

    _ok(client.post(f"{ns_props.format(outer)}/managed-access", json={"managed-access": False}))
    _ok(client.post(f"{wh_props}/managed-access", json={"managed-access": True}))
    assert _ok(client.get(wh_props)) == {"managed-access": True}
    assert _ok(client.get(ns_props.format(inner))) == {"managed-access": False, "managed-access-inherited": True}
    assert log_length() == before + 2


def test_bad_requests_are_4xx_error_models_that_append_nothing(client, warehouse, log_length):
    ns = _namespace(client, warehouse, "ns")
    before = log_length()
    for path, body, status in [
        (f"/management/v1/permissions/namespace/{ns}/managed-access", {"managed-access": "yes"}, 400),
        (f"/management/v1/permissions/namespace/{ns}/managed-access", {"managed-access": 1}, 400),
        (f"/management/v1/permissions/namespace/{ns}/managed-access", {}, 400),
        (f"/management/v1/permissions/namespace/{ns}/managed-access", {"managed-access": True, "x": 1}, 400),
        (f"/management/v1/permissions/namespace/{uuid.uuid4()}/managed-access", {"managed-access": True}, 404),
        (f"/management/v1/permissions/warehouse/{uuid.uuid4()}/managed-access", {"managed-access": True}, 404),
        ("/management/v1/permissions/warehouse/not-a-uuid/managed-access", {"managed-access": True}, 400),
    ]:
        r = client.post(path, json=body)
        assert r.status_code == status, (path, body, r.text)
        assert r.json()["error"]["code"] == status, r.text
    for path in (f"/management/v1/permissions/namespace/{uuid.uuid4()}",
                 f"/management/v1/permissions/warehouse/{uuid.uuid4()}"):
        r = client.get(path)
        assert r.status_code == 404 and r.json()["error"]["code"] == 404, r.text
    assert log_length() == before


def test_a_soft_dropped_namespace_keeps_its_flag_and_a_rebuild_gives_the_same_answers(
        client, warehouse, db, pg_url, data_dir):
    w = warehouse["id"]
    _ok(client.post(f"/management/v1/warehouse/{w}/delete-profile", json={"delete-profile": SOFT}))
    ns = _namespace(client, warehouse, "kept")
    props = f"/management/v1/permissions/namespace/{ns}"
    _ok(client.post(f"{props}/managed-access", json={"managed-access": True}))
    _ok(client.delete(f"{warehouse['prefix']}/namespaces/kept"), 204)
    assert client.get(props).status_code == 404
    _ok(client.post(f"/management/v1/warehouse/{w}/deleted-tabulars/undrop",
                    json={"targets": [{"type": "namespace", "id": ns}]}), 204)
    answer = _ok(client.get(props))
    assert answer == {"managed-access": True, "managed-access-inherited": True}
    _caught_up(db)
    live = _snapshot(db)
    assert db.execute("SELECT count(*) FROM ll_access_ranges WHERE object = %s AND relation = 'managed_access'"
                      " AND to_seq IS NULL", (f"namespace:{ns}",)).fetchone()[0] == 2
    _rebuild(pg_url, data_dir)
    rebuilt = _snapshot(db)
    assert {t: (len(live[t]), len(rebuilt[t])) for t in live if rebuilt[t] != live[t]} == {}
    assert _ok(client.get(props)) == answer


# ---- with OpenFGA ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def own_database(pg_url) -> str:
    return create_database(pg_url, f"managed_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module")
def fga_api(oidc, openfga, own_database, tmp_path_factory):
    s = openfga_server(own_database, tmp_path_factory.mktemp("managed-serve"), oidc, openfga, "managed")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def place(fga_api, oidc, tmp_path_factory):
    """Spark makes a project, a warehouse and the namespace ``ns``, and grants bob ``create`` there; bob makes the
    table ``t`` in it (and owns it); carol (the client trino-reader) has a user and nothing else."""
    with signed_in(fga_api, oidc, "spark") as spark:
        _ok(spark.post("/management/v1/bootstrap", json={"accept-terms-of-use": True, "is-operator": True}), 204)
        project = _ok(spark.post("/management/v1/project", json={"project-name": "managed"}), 201)["project-id"]
        location = tmp_path_factory.mktemp("managed-wh")
        w = _ok(spark.post("/management/v1/warehouse", json={
            "warehouse-name": "wh", "project-id": project,
            "storage-profile": {"type": "file", "location": f"file://{location}"}}), 201)["warehouse-id"]
        ns = _ok(spark.post(f"/catalog/v1/{w}/namespaces", json={"namespace": ["ns"]}))["namespace-uuid"]
        _ok(spark.post(f"/management/v1/permissions/namespace/{ns}/assignments",
                       json={"writes": [{"type": "create", "user": BOB}, {"type": "describe", "user": BOB}]}), 204)
    for who in ("bob", "trino-reader"):
        with signed_in(fga_api, oidc, who) as c:
            _ok(c.get("/management/v1/whoami"))
    with signed_in(fga_api, oidc, "bob", project) as bob:
        table = _ok(bob.post(f"/catalog/v1/{w}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}))[
            "metadata"]["table-uuid"]
    return {"project": project, "warehouse": w, "namespace": ns, "table": table,
            "assignments": f"/management/v1/permissions/warehouse/{w}/table/{table}/assignments",
            "namespace_props": f"/management/v1/permissions/namespace/{ns}",
            "warehouse_props": f"/management/v1/permissions/warehouse/{w}",
            "history": f"/management/v1/warehouse/{w}/access-history"}


def _grant(client: httpx.Client, place, who: str, relation: str = "select", revoke: bool = False) -> httpx.Response:
    return client.post(place["assignments"], json={"deletes" if revoke else "writes": [{"type": relation,
                                                                                      "user": who}]})


def _bobs_rights(spark: httpx.Client, place) -> list[str]:
    holders = _ok(spark.get(place["history"], params={"table": place["table"]}))["holders"]
    return next(h["rights"] for h in holders if h["user"] == BOB)


def _switch(client: httpx.Client, props: str, on: bool) -> httpx.Response:
    return client.post(f"{props}/managed-access", json={"managed-access": on})


def test_under_managed_access_an_owner_may_not_grant_and_grant_authority_still_may(fga_api, oidc, place,
                                                                                    own_database, tmp_path):
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        # the owner of the table grants on it
        _ok(_grant(bob, place, CAROL), 204)
        _ok(_grant(bob, place, CAROL, revoke=True), 204)
        assert "manage_grants" in _bobs_rights(spark, place)

        # bob may not switch managed access on a namespace he does not manage; refused, nothing appended
        before = event_count(own_database)
        r = _switch(bob, place["namespace_props"], True)
        assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException", r.text
        assert event_count(own_database) == before

        _ok(_switch(spark, place["namespace_props"], True))
        assert event_count(own_database) == before + 1
        assert _ok(bob.get(place["namespace_props"])) == {"managed-access": True, "managed-access-inherited": True}
        # the owner may no longer grant, nor hand ownership on; refused, nothing appended
        before = event_count(own_database)
        for relation in ("select", "ownership"):
            r = _grant(bob, place, CAROL, relation)
            assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException", r.text
        assert event_count(own_database) == before
        # ... but still owns the table and uses it
        assert _ok(bob.get(f"/catalog/v1/{place['warehouse']}/namespaces/ns/tables/t"))
        rights = _bobs_rights(spark, place)
        assert "manage_grants" not in rights and {"ownership", "modify", "select"} <= set(rights)
        # the project admin still may
        _ok(_grant(spark, place, CAROL), 204)
        _ok(_grant(spark, place, CAROL, revoke=True), 204)

        # with managed access off again, the owner may grant again
        _ok(_switch(spark, place["namespace_props"], False))
        assert _ok(bob.get(place["namespace_props"])) == {"managed-access": False, "managed-access-inherited": False}
        _ok(_grant(bob, place, CAROL), 204)
        _ok(_grant(bob, place, CAROL, revoke=True), 204)
        assert "manage_grants" in _bobs_rights(spark, place)


def test_managed_access_on_the_warehouse_reaches_everything_inside_it_and_survives_a_rebuild(
        fga_api, oidc, place, own_database, tmp_path):
    with signed_in(fga_api, oidc, "spark", place["project"]) as spark, \
            signed_in(fga_api, oidc, "bob", place["project"]) as bob:
        assert _switch(bob, place["warehouse_props"], True).status_code == 403
        _ok(_switch(spark, place["warehouse_props"], True))
        try:
            assert _ok(spark.get(place["warehouse_props"])) == {"managed-access": True}
            assert _ok(bob.get(place["namespace_props"])) == {"managed-access": False,
                                                               "managed-access-inherited": True}
            assert _grant(bob, place, CAROL).status_code == 403
            rights = _bobs_rights(spark, place)
            assert "manage_grants" not in rights

            # the read models rebuilt from the log answer the same
            _rebuild(own_database, tmp_path)
            assert _ok(spark.get(place["warehouse_props"])) == {"managed-access": True}
            assert _ok(bob.get(place["namespace_props"])) == {"managed-access": False,
                                                               "managed-access-inherited": True}
            assert _bobs_rights(spark, place) == rights
            assert _grant(bob, place, CAROL).status_code == 403
        finally:
            _ok(_switch(spark, place["warehouse_props"], False))
        _ok(_grant(bob, place, CAROL), 204)
        _ok(_grant(bob, place, CAROL, revoke=True), 204)


def test_reading_the_flag_takes_seeing_the_object(fga_api, oidc, place):
    with signed_in(fga_api, oidc, "trino-reader", place["project"]) as carol:
        for props in (place["warehouse_props"], place["namespace_props"]):
            r = carol.get(props)
            assert r.status_code == 403, r.text
