"""Several OpenID providers at once, and roles from a token's claims (issue 29, point 6): a `lakeledger serve` with real
OpenFGA and four real OpenID providers of this module (oidc-provider, each its own issuer, port and keys):

- ``primary`` is the single provider of LAKELEDGER__OPENID_PROVIDER_URI (users ``oidc~<sub>``, as before);
- ``partner`` is LAKELEDGER__OPENID_PROVIDERS' ``partner`` (users ``partner~<sub>``), whose tokens carry a ``groups``
  claim read from a file this module rewrites (the provider's directory);
- ``late`` is down when the server starts (``require_connected_on_startup: false``) and comes back later;
- ``spare`` is up at start and stopped later.

Tokens of both live providers are accepted; a token of a provider not configured is 401; the same client (``sub``)
at two providers is two users; a group in a partner token makes its holder a member of the role of ident
``partner~<group>`` for that request (OpenFGA contextual tuples), so a grant to that role opens a warehouse, and a
token without the group closes it again, with nothing appended to the log; a stopped provider's tokens are 503
while the other providers' work."""

import json
import uuid

import httpx
import psycopg
import pytest
from support import SCHEMA, OidcProvider, Server, create_database, wait_until

KEY = "openid-providers-tests-encryption-key"


@pytest.fixture(scope="module")
def groups_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("idp-groups") / "groups.json"
    path.write_text("{}")
    return path


@pytest.fixture(scope="module")
def providers(tmp_path_factory, groups_file):
    """The module's providers by name; ``late`` is started once to learn its address and a token, then stopped."""
    home = tmp_path_factory.mktemp("idps")
    started = {name: OidcProvider(home / name, groups_file=groups_file) for name in ("primary", "partner", "late",
                                                                                       "spare")}
    started["late"].old_token = started["late"].token("bob")
    started["late"].stop()
    yield started
    for provider in started.values():
        provider.stop()


@pytest.fixture(scope="module")
def own_database(pg_url) -> str:
    return create_database(pg_url, f"idps_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module")
def api(providers, openfga, own_database, tmp_path_factory):
    more = {"partner": {"uri": providers["partner"].issuer, "audience": "lakeledger", "subject_claims": "sub",
                        "roles_claim": "groups"},
            "late": {"uri": providers["late"].issuer, "audience": ["lakeledger"],
                     "require_connected_on_startup": False},
            "spare": {"uri": providers["spare"].issuer + "/"}}
    s = Server(own_database, tmp_path_factory.mktemp("idps-serve"),
               LAKELEDGER__OPENID_PROVIDER_URI=providers["primary"].issuer, LAKELEDGER__OPENID_AUDIENCE="lakeledger",
               LAKELEDGER__OPENID_PROVIDERS=json.dumps(more), LAKELEDGER__AUTHZ_BACKEND="openfga",
               LAKELEDGER__OPENFGA__ENDPOINT=openfga.endpoint,
               LAKELEDGER__OPENFGA__STORE_NAME=f"idps-{uuid.uuid4().hex[:8]}", LAKELEDGER__AUTHZ_CACHE_SECONDS="1",
               LAKELEDGER__PG_ENCRYPTION_KEY=KEY, LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="3",
               # a line per request, read for the roles a request was decided with
               LAKELEDGER__LOG_FORMAT="json", LAKELEDGER__LOG_LEVEL="info")
    yield s
    s.stop()


def _client(api, token: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, timeout=60, headers={"Authorization": f"Bearer {token}"})


def _whoami(api, token: str) -> httpx.Response:
    with _client(api, token) as c:
        return c.get("/management/v1/whoami")


def log_length(database: str) -> int:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


@pytest.fixture(scope="module")
def operator(api, providers):
    """The primary provider's `spark` bootstraps the server (the operator of the default project)."""
    with _client(api, providers["primary"].token("spark")) as spark:
        r = spark.post("/management/v1/bootstrap", json={"accept-terms-of-use": True, "is-operator": True})
        assert r.status_code == 204, r.text
    return providers["primary"]


def test_tokens_of_both_providers_are_accepted_and_the_same_subject_is_two_users(api, providers, operator):
    primary = _whoami(api, providers["primary"].token("spark"))
    partner = _whoami(api, providers["partner"].token("spark"))
    assert primary.status_code == 200, primary.text
    assert partner.status_code == 200, partner.text
    # the single provider's users keep their ids; the other provider's are prefixed with its id, as Lakekeeper's
    assert primary.json()["id"] == "oidc~spark"
    assert partner.json()["id"] == "partner~spark"
    with _client(api, operator.token("spark")) as spark:
        users = spark.get("/management/v1/user").json()["users"]
    assert {"oidc~spark", "partner~spark"} <= {u["id"] for u in users}


def test_a_token_of_an_unknown_issuer_is_401_and_changes_nothing(api, providers, oidc, own_database, operator):
    before = log_length(own_database)
    # the session's provider: real, signing with keys of its own, for the same audience, and not configured here
    r = _whoami(api, oidc.token("spark"))
    assert r.status_code == 401, r.text
    assert r.json()["error"]["message"] == "The token's issuer is not trusted"
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert log_length(own_database) == before


def test_a_group_in_the_token_grants_through_its_role_and_losing_it_takes_the_grant_away(
        api, providers, operator, groups_file, own_database, tmp_path):
    partner = providers["partner"]
    with _client(api, operator.token("spark")) as spark:
        r = spark.post("/management/v1/warehouse", json={
            "warehouse-name": "wh-groups", "storage-profile": {"type": "file", "location": f"file://{tmp_path}/wh"}})
        assert r.status_code == 201, r.text
        warehouse = r.json()["warehouse-id"]
        r = spark.post("/management/v1/role", json={"name": "analysts", "provider-id": "partner",
                                                    "source-id": "analysts"})
        assert r.status_code == 201, r.text
        role = r.json()["id"]
        r = spark.post(f"/management/v1/permissions/warehouse/{warehouse}/assignments",
                       json={"writes": [{"type": "create", "role": role}, {"type": "select", "role": role}]})
        assert r.status_code == 204, r.text
        assert spark.post(f"/catalog/v1/{warehouse}/namespaces", json={"namespace": ["shared"]}).status_code == 200
        r = spark.post(f"/catalog/v1/{warehouse}/namespaces/shared/tables", json={"name": "t", "schema": SCHEMA})
        assert r.status_code == 200, r.text

    def bob_reaches_the_warehouse() -> int:
        with _client(api, partner.token("bob")) as bob:
            answer = bob.get(f"/management/v1/warehouse/{warehouse}").status_code
            # a table under it, through loadTable's fast path
            assert bob.get(f"/catalog/v1/{warehouse}/namespaces/shared/tables/t").status_code == answer
            return answer

    assert _whoami(api, partner.token("bob")).json()["id"] == "partner~bob"  # provisioned: an event, made here
    assert bob_reaches_the_warehouse() == 404
    before = log_length(own_database)

    groups_file.write_text(json.dumps({"bob": ["staff", "analysts"]}))
    assert bob_reaches_the_warehouse() == 200
    with _client(api, partner.token("bob")) as bob:
        # what the caller may do, as the permission API answers it, holds the role's rights too
        r = bob.get(f"/management/v1/permissions/warehouse/{warehouse}/access")
        assert r.status_code == 200, r.text
        assert "create_namespace" in r.json()["allowed-actions"]
    # the primary provider's bob is another user, and a group of the same name there is another role's ident
    with _client(api, providers["primary"].token("bob")) as primary_bob:
        assert primary_bob.get(f"/management/v1/warehouse/{warehouse}").status_code == 404

    groups_file.write_text(json.dumps({"bob": ["staff"]}))
    assert bob_reaches_the_warehouse() == 404
    before = log_length(own_database)  # the primary bob was provisioned above

    groups_file.write_text(json.dumps({"bob": ["analysts"]}))
    with _client(api, partner.token("bob")) as bob:
        r = bob.post(f"/catalog/v1/{warehouse}/namespaces", json={"namespace": ["by_partner_bob"]})
        assert r.status_code == 200, r.text
    with psycopg.connect(own_database) as conn:
        actors = {json.loads(bytes(row[0]))["actor"] for row in conn.execute(
            "SELECT state FROM lakeledger_events ORDER BY notification_id OFFSET %s", (before,))}
    # the audit trail names the user; the membership itself was never recorded in the log, only in the request's
    # log line
    assert actors == {"partner~bob"}
    lines = [json.loads(line) for line in api.log_path.read_text().splitlines() if line.startswith("{")]
    created = [line for line in lines if line.get("route") == "/catalog/v1/{prefix}/namespaces"
               and line.get("method") == "POST" and line.get("status") == 200]
    assert [(line["actor"], line.get("roles")) for line in created] == [("oidc~spark", None),
                                                                          ("partner~bob", ["analysts"])]

    groups_file.write_text(json.dumps({"bob": []}))
    before = log_length(own_database)
    with _client(api, partner.token("bob")) as bob:
        r = bob.post(f"/catalog/v1/{warehouse}/namespaces", json={"namespace": ["again"]})
        assert r.status_code in (403, 404), r.text
        r = bob.get(f"/management/v1/permissions/warehouse/{warehouse}/access")
        assert r.status_code in (200, 404), r.text
        assert r.status_code == 404 or "create_namespace" not in r.json()["allowed-actions"]
    assert log_length(own_database) == before


def test_a_provider_down_at_start_answers_503_until_it_is_back(api, providers, operator, tmp_path):
    late = providers["late"]
    r = _whoami(api, late.old_token)
    assert r.status_code == 503, r.text
    assert r.json()["error"]["type"] == "ServiceUnavailableException"
    assert "late" in r.json()["error"]["message"]
    assert _whoami(api, providers["primary"].token("spark")).status_code == 200
    assert _whoami(api, providers["partner"].token("spark")).status_code == 200

    back = OidcProvider(tmp_path / "late-again", port=int(late.issuer.rsplit(":", 1)[1]))
    try:
        token = back.token("bob")

        def discovered() -> httpx.Response | None:
            answer = _whoami(api, token)
            return answer if answer.status_code != 503 else None
        answer = wait_until(discovered, 30, "the late provider to be discovered", interval=0.5)
        assert answer.status_code == 200, answer.text
        assert answer.json()["id"] == "late~bob"
        # the token it issued before with keys it no longer has
        assert _whoami(api, late.old_token).status_code == 401
    finally:
        back.stop()


def test_a_provider_stopped_later_answers_503_for_its_tokens_only(api, providers, operator):
    spare = providers["spare"]
    token = spare.token("bob")
    spare.stop()
    r = _whoami(api, token)
    assert r.status_code == 503, r.text
    assert r.json()["error"]["type"] == "ServiceUnavailableException"
    assert _whoami(api, providers["primary"].token("spark")).status_code == 200
    assert _whoami(api, providers["partner"].token("bob")).status_code == 200
