"""What docker-compose.yml starts and how its parts fit together, the CLI's commands, the settings' documentation.
(The image build: tests/unit/test_image.py; the compose file's schema, files and settings:
tests/unit/test_compose_file.py.)"""

from pathlib import Path

import yaml

from lakeledger.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_compose_runs_postgres_nats_migrate_then_serve():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"db", "nats", "migrate", "lakeledger"} <= set(services)
    assert services["migrate"]["command"] == ["migrate"]
    assert services["lakeledger"]["command"] == ["serve"]
    assert services["lakeledger"]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    for name in ("migrate", "lakeledger"):
        assert services[name]["environment"]["LAKELEDGER__PG_URL"].startswith("postgresql://")


def test_compose_creates_an_sts_s3_warehouse_on_minio_once_the_catalog_is_up():
    import json

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {"minio", "minio-init", "warehouse-init"} <= set(services)
    assert services["lakeledger"]["environment"]["LAKELEDGER__PG_ENCRYPTION_KEY"]
    init = services["warehouse-init"]
    assert init["depends_on"] == {"lakeledger": {"condition": "service_healthy"},
                                  "minio-init": {"condition": "service_completed_successfully"}}
    assert "healthcheck" in services["lakeledger"] and "healthcheck" in services["minio"]
    assert "mc mb --ignore-existing local/lakeledger" in services["minio-init"]["command"][0]
    # compose/warehouse-init.sh (run for real by tests/e2e/test_compose_warehouse_init.py) POSTs this body
    assert init["environment"]["CATALOG"] == "http://lakeledger:8181"
    body = json.loads(init["environment"]["WAREHOUSE_JSON"])
    profile = body["storage-profile"]
    assert (profile["type"], profile["bucket"], profile["endpoint"], profile["sts-enabled"]) == \
        ("s3", "lakeledger", "http://minio:9000", True)
    assert body["storage-credential"]["credential-type"] == "access-key"
    assert body["storage-credential"]["aws-access-key-id"] == services["minio"]["environment"]["MINIO_ROOT_USER"]
    assert body["storage-credential"]["aws-secret-access-key"] == \
        services["minio"]["environment"]["MINIO_ROOT_PASSWORD"]


def _realm() -> dict:
    import json

    return json.loads((ROOT / "compose/keycloak/lakeledger-realm.json").read_text())


def test_compose_runs_openfga_and_keycloak_before_the_catalog():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {"db-init", "openfga-migrate", "openfga", "keycloak"} <= set(services)
    for name in ("openfga", "openfga-migrate"):
        image = services[name]["image"]
        assert image.startswith("openfga/openfga:v1.") and image != "openfga/openfga:latest"  # pinned
        # Postgres, not memory: a memory store forgets every grant when OpenFGA restarts
        assert services[name]["environment"]["OPENFGA_DATASTORE_ENGINE"] == "postgres"
    assert services["openfga"]["depends_on"]["openfga-migrate"]["condition"] == "service_completed_successfully"
    assert services["openfga-migrate"]["depends_on"]["db-init"]["condition"] == "service_completed_successfully"
    assert "grpc_health_probe" in services["openfga"]["healthcheck"]["test"][1]
    keycloak = services["keycloak"]
    assert keycloak["image"].startswith("quay.io/keycloak/keycloak:26.")
    assert keycloak["command"][:2] == ["start-dev", "--import-realm"]
    assert "./compose/keycloak/lakeledger-realm.json:/opt/keycloak/data/import/lakeledger-realm.json:ro" in \
        keycloak["volumes"]
    assert keycloak["healthcheck"]["test"][:3] == ["CMD", "bash", "-c"]  # /dev/tcp is bash's, not every sh's
    assert f"/realms/{_realm()['realm']}/.well-known/openid-configuration" in keycloak["healthcheck"]["test"][3]
    # migrate creates OpenFGA's store and model, so it waits for OpenFGA; serve waits for both and for the IdP
    migrate, serve = services["migrate"], services["lakeledger"]
    assert migrate["depends_on"]["openfga"]["condition"] == "service_healthy"
    assert {k: serve["depends_on"][k]["condition"] for k in ("migrate", "openfga", "keycloak")} == {
        "migrate": "service_completed_successfully", "openfga": "service_healthy", "keycloak": "service_healthy"}
    for environment in (migrate["environment"], serve["environment"]):
        assert environment["LAKELEDGER__AUTHZ_BACKEND"] == "openfga"
        assert environment["LAKELEDGER__OPENFGA__ENDPOINT"] == "http://openfga:8080"  # the HTTP API
    realm = _realm()["realm"]
    assert serve["environment"]["LAKELEDGER__OPENID_PROVIDER_URI"] == f"http://keycloak:8080/realms/{realm}"
    assert serve["environment"]["LAKELEDGER__OPENID_ADDITIONAL_ISSUERS"] == f"http://localhost:8080/realms/{realm}"
    assert "8080:8080" in keycloak["ports"]
    init = services["warehouse-init"]
    assert init["environment"]["TOKEN_ENDPOINT"] == \
        f"http://keycloak:8080/realms/{realm}/protocol/openid-connect/token"


def test_the_realm_gives_each_engine_client_credentials_and_tokens_for_the_catalog():
    realm = _realm()
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    audience = services["lakeledger"]["environment"]["LAKELEDGER__OPENID_AUDIENCE"]
    scopes = {s["name"]: s for s in realm["clientScopes"]}
    # declaring clientScopes stops Keycloak from building its own, `basic` (the `sub` claim) among them
    assert [m["protocolMapper"] for m in scopes["basic"]["protocolMappers"]] == ["oidc-sub-mapper"]
    audience_scopes = {name for name, scope in scopes.items() for m in scope.get("protocolMappers", [])
                       if m["protocolMapper"] == "oidc-audience-mapper"
                       and m["config"]["included.custom.audience"] == audience
                       and m["config"]["access.token.claim"] == "true"}
    assert audience_scopes == {"lakeledger"}
    clients = {c["clientId"]: c for c in realm["clients"]}
    assert set(clients) == {"spark", "trino", "pyiceberg"}
    init = services["warehouse-init"]["environment"]
    secrets = {init["ADMIN_CLIENT"]: init["ADMIN_SECRET"],
               **dict(pair.split(":", 1) for pair in init["ENGINE_CLIENTS"].split())}
    keycloak_env = services["keycloak"]["environment"]
    for name, client in clients.items():
        assert client["enabled"] and not client["publicClient"] and client["serviceAccountsEnabled"]
        assert not client["standardFlowEnabled"] and not client["directAccessGrantsEnabled"]
        # every token of the client carries sub and aud; Iceberg clients' default scope `catalog` is accepted
        assert {"basic", "lakeledger"} <= set(client["defaultClientScopes"])
        assert "catalog" in client["defaultClientScopes"] + client["optionalClientScopes"]
        # the secret: ${VARIABLE:default}, the variable handed to Keycloak by compose with the same default
        variable, default = client["secret"][2:-1].split(":", 1)
        assert keycloak_env[variable] == f"${{{variable}:-{default}}}"
        assert secrets[name] == keycloak_env[variable], name


def test_cli_knows_the_compose_commands(capsys):
    for command in ("serve", "migrate", "workers", "rebuild"):
        try:
            main([command, "--help"])
        except SystemExit as e:
            assert e.code == 0
    assert "usage" in capsys.readouterr().out


def test_every_setting_is_documented_in_the_configuration_page():
    from lakeledger.settings import variable_names

    # the manual's configuration page, or a topic's own page under docs/ (its table of settings)
    configuration = ROOT / "docs/configuration.md"
    pages = [configuration, *(page for page in sorted((ROOT / "docs").glob("*.md")) if page != configuration)]
    manual = "\n".join(path.read_text() for path in pages)
    documented = variable_names()
    assert "LAKELEDGER__OPENFGA__ENDPOINT" in documented
    missing = [name for name in documented if f"`{name}`" not in manual]
    assert missing == []
