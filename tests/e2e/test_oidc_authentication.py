"""OpenID Connect authentication (issue 13, points 1, 2, 9 and 10): a `lakeledger serve` with a real OpenID provider
(oidc-provider, the session's `oidc` fixture) configured, on a database of its own, publishing CloudEvents to a
nats-server of its own. Every operation of its OpenAPI document needs a token; bad tokens of every kind are 401 and
change nothing; a good token's principal is the actor of the events it causes, in the history API and in the
CloudEvents; pyiceberg authenticates by OAuth2 client credentials as it would against any provider."""

import asyncio
import base64
import hashlib
import hmac
import json
import time
import uuid

import httpx
import jwt
import nats
import orjson
import psycopg
import pyarrow as pa
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from support import SCHEMA, NatsServer, OidcProvider, Server, create_database, wait_until

AUDIENCE = "lakeledger"
LEEWAY_SECONDS = 5  # lakeledger/identity/oidc.py's


@pytest.fixture(scope="module")
def own_database(pg_url) -> str:
    return create_database(pg_url, f"oidc_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module")
def jetstream(tmp_path_factory):
    store = tmp_path_factory.mktemp("oidc-jetstream")
    server = NatsServer(store)
    yield server
    if server.process.poll() is None:
        server.kill()


@pytest.fixture(scope="module")
def api(oidc, own_database, jetstream, tmp_path_factory):
    s = Server(own_database, tmp_path_factory.mktemp("oidc-serve"), LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer,
               LAKELEDGER__OPENID_AUDIENCE=f"{AUDIENCE},another-audience", LAKELEDGER__NATS_ADDRESS=jetstream.url,
               LAKELEDGER__WORKER_POLL_SECONDS="0.2", LAKELEDGER__PG_POOL_SIZE="3",
               LAKELEDGER__AUTHZ_ALLOWALL_WITH_OPENID="true",
               # the module's log is searched for tokens at its end (test_no_token_in_any_log_line)
               LAKELEDGER__LOG_FORMAT="json", LAKELEDGER__LOG_LEVEL="debug")
    yield s
    s.stop()


def _client(api, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=api.url, timeout=60, headers=headers)


@pytest.fixture(scope="module")
def spark_client(api, oidc):
    with _client(api, oidc.token("spark")) as c:
        yield c


@pytest.fixture(scope="module")
def warehouse(spark_client, tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("oidc-warehouse")
    name = f"oidc-{uuid.uuid4().hex[:8]}"
    r = spark_client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{path}"}})
    assert r.status_code == 201, r.text
    return {"name": name, "id": r.json()["warehouse-id"], "prefix": f"/catalog/v1/{r.json()['warehouse-id']}"}


def _events(database: str) -> int:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def _assert_refused(response: httpx.Response, because: str | None = None, head: bool = False) -> None:
    assert response.status_code == 401, (response.request.method, response.request.url, response.text)
    assert response.headers["www-authenticate"].startswith("Bearer")
    if head:
        return
    error = response.json()["error"]
    assert error["type"] == "NotAuthorizedException" and error["code"] == 401
    if because:
        assert because in error["message"], error["message"]


def _dummy(parameter: str) -> str:
    return str(uuid.uuid4()) if "id" in parameter.lower() or parameter == "prefix" else "dummy"


def test_every_operation_of_the_openapi_document_needs_a_token(api, spark_client, own_database):
    document = spark_client.get("/openapi.json")
    assert document.status_code == 200, document.text
    operations = [(method.upper(), path) for path, item in document.json()["paths"].items()
                  for method in item if method in ("get", "put", "post", "delete", "head", "patch")]
    assert len(operations) > 40  # the catalog's and the management API's
    before = _events(own_database)
    with _client(api, None) as anonymous:
        for method, path in operations:
            url = "/".join(_dummy(part[1:-1]) if part.startswith("{") else part for part in path.split("/"))
            body = {} if method in ("POST", "PUT", "PATCH") else None
            _assert_refused(anonymous.request(method, url, json=body), "Authorization: Bearer", head=method == "HEAD")
        # what the document does not list: itself, the docs, the catalog's alias at the root
        for path in ("/openapi.json", "/docs", "/v1/config", f"/v1/{uuid.uuid4()}/namespaces"):
            _assert_refused(anonymous.get(path))
        assert anonymous.get("/health").status_code == 200
    assert _events(own_database) == before


def _claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256(claims: dict, kid: str, secret: bytes) -> str:
    """The algorithm-confusion attack: HMAC with the provider's public key as the secret (pyjwt itself refuses to
    make one, so it is made by hand)."""
    signing_input = f"{_b64(json.dumps({'alg': 'HS256', 'typ': 'JWT', 'kid': kid}).encode())}." \
                    f"{_b64(json.dumps(claims).encode())}"
    return f"{signing_input}.{_b64(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())}"


def _own_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _bad_tokens(oidc: OidcProvider, other: OidcProvider) -> dict[str, tuple[str, str]]:
    """name -> (Authorization header value, what the refusal says)."""
    good = oidc.token("spark")
    claims = _claims(good)
    kid = jwt.get_unverified_header(good)["kid"]
    header, payload, signature = good.split(".")
    forged = {**claims, "sub": "admin", "client_id": "admin"}
    jwks = httpx.get(f"{oidc.issuer}/jwks").json()["keys"]
    public_pem = jwt.PyJWK(jwks[0]).key.public_bytes(serialization.Encoding.PEM,
                                                       serialization.PublicFormat.SubjectPublicKeyInfo)
    return {
        "no header": ("", "Authorization: Bearer"),
        "not bearer": ("Basic c3Bhcms6c3Bhcmstc2VjcmV0", "Bearer <token>"),
        "bearer without a token": ("Bearer", "Bearer <token>"),
        "not a jwt": ("Bearer not-a-jwt", "not a JWT"),
        "wrong signature": (f"Bearer {jwt.encode(claims, _own_key(), 'RS256', headers={'kid': kid})}",
                            "signature does not verify"),
        "payload swapped under a real signature": (
            f"Bearer {header}.{_b64(json.dumps(forged).encode())}.{signature}", "signature does not verify"),
        "alg none": (f"Bearer {_b64(json.dumps({'alg': 'none', 'typ': 'JWT', 'kid': kid}).encode())}."
                     f"{_b64(json.dumps(claims).encode())}.", "'none' are not accepted"),
        "HS256 keyed with the provider's public key": (f"Bearer {_hs256(claims, kid, public_pem)}",
                                                       "'HS256' are not accepted"),
        "unknown kid": (f"Bearer {jwt.encode(claims, _own_key(), 'RS256', headers={'kid': 'not-a-provider-key'})}",
                        "not signed by a key of the OpenID provider"),
        "wrong audience": (f"Bearer {oidc.token('spark', resource='urn:lakeledger:other-service')}",
                           "not meant for this catalog"),
        "other issuer": (f"Bearer {other.token('spark')}", "not signed by a key of the OpenID provider"),
    }


def test_bad_tokens_are_401_and_change_nothing(api, oidc, spark_client, warehouse, own_database, tmp_path):
    # the real token first: verified and cached, so that its signature under a forged payload must miss the cache
    assert spark_client.get(f"{warehouse['prefix']}/namespaces").status_code == 200
    other = OidcProvider(tmp_path / "other-issuer")
    try:
        bad = _bad_tokens(oidc, other)
    finally:
        other.stop()
    before = _events(own_database)
    with _client(api, None) as anonymous:
        for name, (authorization, because) in bad.items():
            headers = {"Authorization": authorization} if authorization else {}
            for method, path, body in (
                ("POST", f"{warehouse['prefix']}/namespaces", {"namespace": ["stolen"]}),
                ("GET", f"{warehouse['prefix']}/namespaces", None),
                (
                    "POST",
                    "/management/v1/warehouse",
                    {
                        "warehouse-name": "stolen",
                        "storage-profile": {"type": "file", "location": f"file://{tmp_path}/stolen"},
                    },
                ),
            ):
                response = anonymous.request(method, path, json=body, headers=headers)
                assert response.status_code == 401, (name, method, path, response.text)
                _assert_refused(response, because)
    assert _events(own_database) == before
    assert spark_client.get(f"{warehouse['prefix']}/namespaces/stolen").status_code == 404


def test_a_second_authorization_header_is_refused(api, oidc, warehouse):
    token = oidc.token("spark")
    response = httpx.get(f"{api.url}{warehouse['prefix']}/namespaces",
                         headers=[("Authorization", f"Bearer {token}"), ("Authorization", f"Bearer {token}")])
    _assert_refused(response, "More than one Authorization header")


def test_an_expired_token_is_refused_even_after_it_was_accepted(api, oidc, warehouse, own_database):
    token = oidc.token("brief")  # lives two seconds
    with _client(api, token) as brief:
        assert brief.get(f"{warehouse['prefix']}/namespaces").status_code == 200  # verified, then cached
        time.sleep(max(0.0, _claims(token)["exp"] + LEEWAY_SECONDS + 0.5 - time.time()))
        before = _events(own_database)
        _assert_refused(brief.get(f"{warehouse['prefix']}/namespaces"), "expired")
        _assert_refused(brief.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["late"]}), "expired")
        assert _events(own_database) == before


def _history(client: httpx.Client, warehouse_id: str, **filters) -> list[dict]:
    r = client.get(f"/management/v1/warehouse/{warehouse_id}/history", params={"pageSize": 1000, **filters})
    assert r.status_code == 200, r.text
    return r.json()["events"]


async def _cloudevents(url: str) -> list[dict]:
    nc = await nats.connect(url, connect_timeout=2)
    try:
        js = nc.jetstream()
        info = await js.stream_info("LAKELEDGER")
        return [orjson.loads((await js.get_msg("LAKELEDGER", seq)).data)
                for seq in range(info.state.first_seq, info.state.last_seq + 1)]
    finally:
        await nc.close()


def test_the_principal_is_the_actor_in_the_log_the_history_and_the_cloudevents(
        api, oidc, spark_client, warehouse, own_database, jetstream):
    prefix = warehouse["prefix"]
    assert spark_client.post(f"{prefix}/namespaces", json={"namespace": ["by_spark"]}).status_code == 200
    r = spark_client.post(f"{prefix}/namespaces/by_spark/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code == 200, r.text
    table_id = r.json()["metadata"]["table-uuid"]
    with _client(api, oidc.token("bob")) as bob:
        assert bob.post(f"{prefix}/namespaces", json={"namespace": ["by_bob"]}).status_code == 200

    with psycopg.connect(own_database) as conn:
        states = [json.loads(bytes(row[0])) for row in conn.execute(
            "SELECT state FROM lakeledger_events WHERE originator_id = %s", (table_id,))]
    assert states and {state["actor"] for state in states} == {"oidc~spark"}

    spark_events = _history(spark_client, warehouse["id"], actor="oidc~spark")
    bob_events = _history(spark_client, warehouse["id"], actor="oidc~bob")
    assert {e["actor"] for e in spark_events} == {"oidc~spark"}
    assert {e["actor"] for e in bob_events} == {"oidc~bob"}
    assert bob_events and all(e["entity"]["name"] == ["by_bob"] for e in bob_events)
    assert table_id in {e["entity"]["id"] for e in spark_events}
    assert ["by_spark"] in [e["entity"]["name"] for e in spark_events]
    assert not _history(spark_client, warehouse["id"], actor="anonymous")

    def published():
        events = asyncio.run(_cloudevents(jetstream.url))
        return [e for e in events if e["subject"] == table_id] or None
    table_events = wait_until(published, 30, "the table's CloudEvents")
    assert {e["actor"] for e in table_events} == {"oidc~spark"}


def test_pyiceberg_authenticates_with_client_credentials(api, oidc, warehouse, spark_client):
    from pyiceberg.catalog.rest import RestCatalog
    from pyiceberg.exceptions import UnauthorizedError

    catalog = RestCatalog("lakeledger", uri=f"{api.url}/catalog", warehouse=warehouse["name"],
                          credential="bob:bob-secret", scope="catalog",
                          **{"oauth2-server-uri": oidc.token_endpoint})
    catalog.create_namespace("py")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])})
    table = catalog.create_table("py.items", schema=rows.schema)
    table.append(rows)
    assert catalog.load_table("py.items").scan().to_arrow().num_rows == 3
    events = _history(spark_client, warehouse["id"], **{"tabular-id": str(table.metadata.table_uuid)})
    assert {e["type"] for e in events} >= {"table.created", "table.committed"}
    assert {e["actor"] for e in events} == {"oidc~bob"}

    with pytest.raises(UnauthorizedError):
        RestCatalog("anonymous", uri=f"{api.url}/catalog", warehouse=warehouse["name"])
    with pytest.raises(Exception, match="invalid_client"):
        RestCatalog("wrong-secret", uri=f"{api.url}/catalog", warehouse=warehouse["name"],
                    credential="bob:not-the-secret", **{"oauth2-server-uri": oidc.token_endpoint})


def test_serve_refuses_to_start_when_the_discovery_document_cannot_be_fetched(own_database, tmp_path):
    with pytest.raises(RuntimeError) as failure:
        Server(own_database, tmp_path, LAKELEDGER__OPENID_PROVIDER_URI="http://127.0.0.1:9/realms/nowhere",
               LAKELEDGER__WORKERS="off", LAKELEDGER__AUTHZ_ALLOWALL_WITH_OPENID="true")
    assert "cannot fetch the OpenID discovery document http://127.0.0.1:9/realms/nowhere/.well-known/" \
           "openid-configuration" in str(failure.value)
    assert "Traceback" not in str(failure.value)


def test_spark_authenticates_with_client_credentials(spark, api, oidc, warehouse, spark_client):
    """The session's Spark gains a catalog on the authenticated server at run time, with Iceberg's OAuth2 client
    credentials (its REST client fetches and refreshes the token itself)."""
    catalog = "lake_oidc"
    prefix = f"spark.sql.catalog.{catalog}"
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest", ".uri": f"{api.url}/catalog",
                       ".warehouse": warehouse["name"], ".cache-enabled": "false",
                       ".credential": "spark:spark-secret", ".oauth2-server-uri": oidc.token_endpoint,
                       ".scope": "catalog"}.items():
        spark.conf.set(prefix + key, value)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {catalog}.sparkns")
    spark.sql(f"CREATE TABLE {catalog}.sparkns.visits (id BIGINT, page STRING) USING iceberg")
    spark.sql(f"INSERT INTO {catalog}.sparkns.visits VALUES (1, '/'), (2, '/docs')")
    assert spark.sql(f"SELECT count(*) FROM {catalog}.sparkns.visits").collect()[0][0] == 2
    table = spark_client.get(f"{warehouse['prefix']}/namespaces/sparkns/tables/visits")
    assert table.status_code == 200, table.text
    events = _history(spark_client, warehouse["id"], **{"tabular-id": table.json()["metadata"]["table-uuid"]})
    assert {e["type"] for e in events} >= {"table.created", "table.committed"}
    assert {e["actor"] for e in events} == {"oidc~spark"}


def test_a_principal_is_provisioned_as_a_user_on_its_first_request(api, oidc, spark_client, own_database):
    with _client(api, oidc.token("bob")) as bob:
        for _ in range(3):
            assert bob.get("/management/v1/whoami").status_code == 200
        me = bob.get("/management/v1/whoami").json()
    assert me["id"] == "oidc~bob" and me["user-type"] == "application"
    users = spark_client.get("/management/v1/user", params={"pageSize": 100}).json()["users"]
    assert {"oidc~spark", "oidc~bob"} <= {u["id"] for u in users}
    with psycopg.connect(own_database) as conn:
        created = conn.execute("SELECT count(*) FROM lakeledger_events WHERE topic LIKE '%%user:User.%%'"
                               " AND convert_from(state, 'UTF8') LIKE '%%oidc~bob%%'").fetchone()[0]
    assert created == 1  # provisioned once, however many requests followed


def test_no_token_in_any_log_line(api, oidc, warehouse):
    """Issue 15, point 6: JSON request lines name the actor and the request id; no token the server was shown,
    accepted or refused, appears in any line of its log (level debug), whole or by its signature."""
    good = oidc.token("bob")
    request_id = f"log-test-{uuid.uuid4().hex}"
    with _client(api, good) as bob:
        assert bob.get(f"{warehouse['prefix']}/namespaces", headers={"x-request-id": request_id}).status_code == 200
    tampered = good[:-4] + ("AAAA" if not good.endswith("AAAA") else "BBBB")
    with _client(api, tampered) as bad:
        assert bad.get(f"{warehouse['prefix']}/namespaces").status_code == 401
    with httpx.Client(base_url=api.url) as raw:
        assert (
            raw.get(
                "/management/v1/whoami", headers={"Authorization": f"Basic {base64.b64encode(b'bob:pw').decode()}"}
            ).status_code
            == 401
        )

    def line_of_request():
        return [json.loads(line) for line in api.log_path.read_text().splitlines()
                if line.startswith("{") and request_id in line]

    wait_until(lambda: line_of_request(), 10, "the request's log line")
    lines = api.log_path.read_text().splitlines()
    assert lines and all(json.loads(line) for line in lines)  # every line is one JSON object
    (mine,) = line_of_request()
    assert mine["actor"] == "oidc~bob" and mine["status"] == 200 and mine["method"] == "GET"
    assert mine["route"] == "/catalog/v1/{prefix}/namespaces" and mine["duration_ms"] > 0
    text = api.log_path.read_text()
    for token in (good, tampered):
        header, payload, signature = token.split(".")
        for part in (token, signature, payload):
            assert part not in text
    assert base64.b64encode(b"bob:pw").decode() not in text
