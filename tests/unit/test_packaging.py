"""The files users run us from stay valid: docker-compose.yml and the image build."""

from pathlib import Path

import yaml

from lakeledger.cli import main

ROOT = Path(__file__).resolve().parents[2]
ROOMS = ["lakeledger", "domain", "eventstore", "projections", "services", "storage", "api", "workers", "migrations",
         "secretstore", "identity", "authz"]


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
    assert "http://lakeledger:8181/management/v1/warehouse" in init["command"][0]
    # the body the init POSTs: exactly the JSON the management API takes (tried by hand against a live server)
    body = json.loads(init["environment"]["WAREHOUSE_JSON"])
    profile = body["storage-profile"]
    assert (profile["type"], profile["bucket"], profile["endpoint"], profile["sts-enabled"]) == \
        ("s3", "lakeledger", "http://minio:9000", True)
    assert body["storage-credential"]["credential-type"] == "access-key"
    assert body["storage-credential"]["aws-access-key-id"] == services["minio"]["environment"]["MINIO_ROOT_USER"]
    assert body["storage-credential"]["aws-secret-access-key"] == \
        services["minio"]["environment"]["MINIO_ROOT_PASSWORD"]


def test_the_image_contains_every_room():
    dockerfile = (ROOT / "Dockerfile").read_text()
    for room in ROOMS:
        assert f"COPY {room} ./{room}" in dockerfile


def test_cli_knows_the_compose_commands(capsys):
    for command in ("serve", "migrate", "workers", "rebuild"):
        try:
            main([command, "--help"])
        except SystemExit as e:
            assert e.code == 0
    assert "usage" in capsys.readouterr().out


def test_every_setting_is_documented_in_the_readme():
    from lakeledger.settings import Settings

    from pydantic import BaseModel

    def names(model, prefix="LAKELEDGER__"):
        # nested settings (LAKELEDGER__OPENFGA__ENDPOINT) are documented field by field
        for name, field in model.model_fields.items():
            kind = field.annotation
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                yield from names(kind, f"{prefix}{name.upper()}__")
            else:
                yield f"{prefix}{name.upper()}"

    readme = (ROOT / "README.md").read_text()
    documented = list(names(Settings))
    assert "LAKELEDGER__OPENFGA__ENDPOINT" in documented
    missing = [name for name in documented if f"`{name}`" not in readme]
    assert missing == []


def test_the_wheel_carries_every_room_and_the_migrations(tmp_path):
    import subprocess
    import sys
    import zipfile

    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    [wheel] = tmp_path.glob("lakeledger-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for room in ROOMS[1:]:
        assert f"lakeledger/{room}/__init__.py" in names, room
    assert "lakeledger/migrations/0001_catalog_read_model.sql" in names
