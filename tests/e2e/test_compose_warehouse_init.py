"""docker-compose.yml's one-shot warehouse-init (compose/warehouse-init.sh) run for real, as the compose file runs it
but with /bin/sh and curl of this machine, against a `lakeledger serve` with a real OpenID provider (oidc-provider in
place of the compose file's Keycloak) and a real OpenFGA: it bootstraps the catalog as the admin client, creates the
warehouse, grants the engine clients create and modify there, and a second run changes nothing."""

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest
import yaml
from support import Server, create_database

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "compose/warehouse-init.sh"


@pytest.fixture(scope="module")
def api(oidc, openfga, pg_url, tmp_path_factory):
    database = create_database(pg_url, f"compose_{uuid.uuid4().hex[:12]}")
    s = Server(database, tmp_path_factory.mktemp("compose-serve"),
               LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer, LAKELEDGER__OPENID_AUDIENCE=oidc.audience,
               LAKELEDGER__AUTHZ_BACKEND="openfga", LAKELEDGER__OPENFGA__ENDPOINT=openfga.endpoint,
               LAKELEDGER__OPENFGA__STORE_NAME=f"compose-{uuid.uuid4().hex[:8]}", LAKELEDGER__WORKERS="off",
               LAKELEDGER__PG_POOL_SIZE="3")
    s.database = database
    yield s
    s.stop()


def _run(api, oidc, warehouse_json: str) -> subprocess.CompletedProcess:
    if shutil.which("curl") is None:
        pytest.fail("curl is missing: apt-get install curl")
    env = {"PATH": os.environ["PATH"], "CATALOG": api.url, "TOKEN_ENDPOINT": oidc.token_endpoint,
           "ADMIN_CLIENT": "spark", "ADMIN_SECRET": "spark-secret",
           "ENGINE_CLIENTS": "trino:trino-secret bob:bob-secret", "WAREHOUSE_JSON": warehouse_json}
    return subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)


def _events(api) -> int:
    import psycopg

    with psycopg.connect(api.database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


def _client(api, oidc, who: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, timeout=60, headers={"Authorization": f"Bearer {oidc.token(who)}"})


def test_the_compose_file_runs_this_script():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    init = services["warehouse-init"]
    assert "./compose/warehouse-init.sh:/warehouse-init.sh:ro" in init["volumes"]
    assert init["entrypoint"] == ["/bin/sh", "/warehouse-init.sh"]


def test_init_bootstraps_creates_the_warehouse_and_grants_the_engines(api, oidc, tmp_path):
    name = f"demo-{uuid.uuid4().hex[:8]}"
    warehouse_json = (f'{{"warehouse-name": "{name}", '
                      f'"storage-profile": {{"type": "file", "location": "file://{tmp_path / "wh"}"}}}}')
    first = _run(api, oidc, warehouse_json)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "bootstrapped: spark is the server's operator" in first.stdout
    assert f"warehouse {name} created" in first.stdout
    assert "granted create and modify" in first.stdout and "to trino (oidc~trino)" in first.stdout

    with _client(api, oidc, "trino") as trino, _client(api, oidc, "bob") as bob:
        config = trino.get("/catalog/v1/config", params={"warehouse": name})
        assert config.status_code == 200, config.text
        prefix = config.json()["overrides"]["prefix"]
        created = trino.post(f"/catalog/v1/{prefix}/namespaces", json={"namespace": ["from_trino"]})
        assert created.status_code == 200, created.text
        # modify on the warehouse reaches down to what another engine created
        assert bob.get(f"/catalog/v1/{prefix}/namespaces/from_trino").status_code == 200

    # a client the script did not name holds nothing there
    with _client(api, oidc, "brief") as other:
        refused = other.post(f"/catalog/v1/{prefix}/namespaces", json={"namespace": ["from_brief"]})
        assert refused.status_code in (403, 404), refused.text

    before = _events(api)
    second = _run(api, oidc, warehouse_json)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "already bootstrapped" in second.stdout and f"warehouse {name} exists" in second.stdout
    assert _events(api) == before


def test_init_stops_with_a_message_when_the_admin_secret_is_wrong(api, oidc, tmp_path):
    env_json = f'{{"warehouse-name": "never", "storage-profile": {{"type": "file", "location": "file://{tmp_path}"}}}}'
    if shutil.which("curl") is None:
        pytest.fail("curl is missing: apt-get install curl")
    before = _events(api)
    result = subprocess.run(["sh", str(SCRIPT)], capture_output=True, text=True, timeout=60, env={
        "PATH": os.environ["PATH"], "CATALOG": api.url, "TOKEN_ENDPOINT": oidc.token_endpoint,
        "ADMIN_CLIENT": "spark", "ADMIN_SECRET": "not-the-secret", "WAREHOUSE_JSON": env_json})
    assert result.returncode == 1
    assert "warehouse-init: no token for client spark" in result.stderr and "invalid_client" in result.stderr
    assert _events(api) == before
