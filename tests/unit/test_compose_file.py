"""docker-compose.yml checked as far as a machine without Docker can: against the Compose Specification's schema,
every build and file it names present in the repository, every image pinned, and every Lakeledger setting it passes
one that exists and takes the value given."""

import json
import os
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from lakeledger.settings import Settings, variable_names

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "conformance/specs/compose-spec-a08f8d5.json"  # source and commit: compose-spec-a08f8d5.md beside it


def _compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def _schema_errors(compose: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text())
    assert schema["$schema"].startswith("https://json-schema.org/draft-07/")
    Draft7Validator.check_schema(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in Draft7Validator(schema).iter_errors(compose)]


def _interpolated(value: str) -> str:
    """Compose's interpolation of what this file uses: ${NAME:-default} when NAME is unset, and $$ for a $."""
    def unset(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        if match.group("default") is None:
            raise AssertionError(f"{match.group(0)} in {value!r}: a variable without a default")
        return match.group("default")

    return re.sub(r"\$\$|\$\{(?P<name>\w+)(?::-(?P<default>[^}]*))?\}", unset, value)


def _environment(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment", {})
    if isinstance(environment, list):  # the KEY=VALUE list form
        environment = dict(item.split("=", 1) for item in environment)
    return {name: _interpolated(str(value)) for name, value in environment.items()}


def _builds(compose: dict[str, Any]) -> dict[str, tuple[Path, str]]:
    """Each built service's context folder and Dockerfile name."""
    builds = {}
    for name, service in compose["services"].items():
        build = service.get("build")
        if build is None:
            continue
        if isinstance(build, str):
            build = {"context": build}
        assert set(build) <= {"context", "dockerfile"}, f"{name}: build {set(build)} is not checked here"
        builds[name] = (ROOT / build.get("context", "."), build.get("dockerfile", "Dockerfile"))
    return builds


def _host_files(compose: dict[str, Any]) -> list[str]:
    """Every file or folder of this machine the file names: bind mounts, env files, configs, secrets, includes."""
    files: list[str] = []
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0] if isinstance(volume, str) else volume.get("source", "")
            if isinstance(volume, dict) and volume.get("type") == "bind" or source.startswith((".", "/", "~")):
                files.append(source)
        env_files = service.get("env_file", [])
        for env_file in [env_files] if isinstance(env_files, str) else env_files:
            files.append(env_file if isinstance(env_file, str) else env_file["path"])
        if "file" in service.get("extends", {}):
            files.append(service["extends"]["file"])
    for kind in ("configs", "secrets"):
        files += [item["file"] for item in (compose.get(kind) or {}).values() if "file" in item]
    for include in compose.get("include", []):
        paths = include if isinstance(include, str) else include["path"]
        files += [paths] if isinstance(paths, str) else paths
    return files


def test_the_compose_file_follows_the_compose_specification():
    compose = _compose()
    assert _schema_errors(compose) == []
    # the schema is strict enough to catch a misspelt key
    compose["services"]["lakeledger"]["depend_on"] = compose["services"]["lakeledger"].pop("depends_on")
    assert _schema_errors(compose) == [
        "services/lakeledger: 'depend_on' does not match any of the regexes: '^x-'"]


def test_every_build_has_its_context_and_dockerfile():
    builds = _builds(_compose())
    assert set(builds) == {"migrate", "lakeledger"}
    for name, (context, dockerfile) in builds.items():
        assert context.is_dir() and (context / dockerfile).is_file(), name
        assert context.resolve() == ROOT  # the one image, built by tests/unit/test_image.py's rules


def test_every_image_is_pinned():
    services = _compose()["services"]
    images = {name: s["image"] for name, s in services.items() if "image" in s}
    assert set(images) | set(_builds(_compose())) == set(services)  # each service is pulled or built
    for name, image in images.items():
        if "@sha256:" in image:
            continue
        tag = image.rsplit("/", 1)[-1].partition(":")[2]  # a registry's port comes before the last slash
        assert tag and tag != "latest" and "$" not in tag, f"{name}: {image}"


def test_every_file_the_compose_file_mounts_is_in_the_repository():
    compose = _compose()
    files = _host_files(compose)
    for file in files:
        path = PurePosixPath(file)
        assert not path.is_absolute() and not file.startswith("~") and ".." not in path.parts, file
        assert (ROOT / path).exists(), file
    assert {"./compose/warehouse-init.sh", "./compose/grafana/provisioning"} <= set(files)  # the collector works
    # named volumes are declared, and every declared one is used
    named = {v.split(":")[0] for s in compose["services"].values() for v in s.get("volumes", [])
             if isinstance(v, str) and not v.startswith((".", "/", "~"))}
    assert named == set(compose.get("volumes", {}))


def test_every_setting_passed_to_lakeledger_exists_and_takes_its_value(monkeypatch):
    compose = _compose()
    known = set(variable_names())
    for name in _builds(compose):
        environment = _environment(compose["services"][name])
        # LAKELEDGER_PG_URL (one underscore) would be ignored as silently as a misspelt name
        passed = {k: v for k, v in environment.items() if k.upper().startswith("LAKELEDGER")}
        assert passed, name
        assert sorted(set(passed) - known) == [], f"{name}: no such settings"
        # the values as compose hands them over (defaults of ${...:-...}) are settings the server accepts
        for variable in [v for v in os.environ if v.upper().startswith("LAKELEDGER__")]:
            monkeypatch.delenv(variable)
        for variable, value in passed.items():
            monkeypatch.setenv(variable, value)
        settings = Settings()
        assert settings.pg_url == passed["LAKELEDGER__PG_URL"]
        for variable in passed:
            monkeypatch.delenv(variable)


@pytest.mark.parametrize("value, expected", [
    ("${LAKELEDGER_SPARK_SECRET:-spark-demo-secret}", "spark-demo-secret"),
    ('mc alias set "$$MINIO_ROOT_USER"', 'mc alias set "$MINIO_ROOT_USER"'),
    ("plain", "plain"),
])
def test_interpolation_as_compose_does_without_the_variables_set(value, expected):
    assert _interpolated(value) == expected
