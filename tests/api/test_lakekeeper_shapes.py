"""The management API answers in Lakekeeper's shapes: responses are validated against the schemas of Lakekeeper's own
OpenAPI document (conformance/specs/lakekeeper-management-open-api-0.13.3.yaml, v0.13.3), so a client generated from it
decodes them: the access endpoints name only actions of Lakekeeper's enums, /info has `lakekeeper-version`, a
warehouse has `allowed-format-versions`."""

from functools import cache

import jsonschema
import pytest
import yaml
from support import ROOT, SCHEMA, VIEW_VERSION

SPEC = ROOT / "conformance/specs/lakekeeper-management-open-api-0.13.3.yaml"


@cache
def _spec() -> dict:
    return yaml.safe_load(SPEC.read_text())


def _validate(body: object, schema_name: str, **replaced: dict) -> None:
    """Validates ``body`` against ``#/components/schemas/<schema_name>``; ``replaced`` swaps a property's schema
    there (in every schema that names that property by a $ref to ``schema_name``, too)."""
    schemas = dict(_spec()["components"]["schemas"])
    if replaced:
        schemas[schema_name] = {**schemas[schema_name], "properties": {**schemas[schema_name]["properties"],
                                                                       **replaced}}
    root = {"components": {"schemas": schemas}, "$ref": f"#/components/schemas/{schema_name}"}
    errors = sorted(jsonschema.Draft202012Validator(root).iter_errors(body), key=str)
    assert not errors, [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def _ok(r, status: int = 200):
    assert r.status_code == status, (r.request.url, r.status_code, r.text)
    return r.json()


def test_info_is_lakekeepers_server_info(client):
    info = _ok(client.get("/management/v1/info"))
    _validate(info, "ServerInfo")
    assert info["lakekeeper-version"] == "0.13.3" and info["lakeledger-version"] == info["version"]


def test_a_warehouse_is_lakekeepers_warehouse(client, warehouse):
    body = _ok(client.get(f"/management/v1/warehouse/{warehouse['id']}"))
    assert body["allowed-format-versions"] == [1, 2, 3]
    # a file warehouse's storage profile (ours; Lakekeeper stores on object storage only) has no Lakekeeper shape
    _validate(body, "GetWarehouseResponse", **{"storage-profile": {"type": "object"}})
    for listed in _ok(client.get("/management/v1/warehouse"))["warehouses"]:
        _validate(listed, "GetWarehouseResponse", **{"storage-profile": {"type": "object"}})


@pytest.fixture
def objects(client, warehouse) -> dict[str, str]:
    p = warehouse["prefix"]
    namespace = _ok(client.post(f"{p}/namespaces", json={"namespace": ["shapes"]}))
    table = _ok(client.post(f"{p}/namespaces/shapes/tables", json={"name": "t", "schema": SCHEMA}))
    view = _ok(client.post(f"{p}/namespaces/shapes/views",
                           json={"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}))
    project = _ok(client.get("/management/v1/project"))["project-id"]
    role = client.post("/management/v1/role", headers={"x-project-id": project},
                       json={"name": f"shapes-{warehouse['id'][:8]}"})
    assert role.status_code == 201, role.text
    w = warehouse["id"]
    return {
        "GetServerAccessResponse": "/server/access",
        "GetProjectAccessResponse": f"/project/{project}/access",
        "GetWarehouseAccessResponse": f"/warehouse/{w}/access",
        "GetNamespaceAccessResponse": f"/namespace/{namespace['namespace-uuid']}/access",
        "GetTableAccessResponse": f"/warehouse/{w}/table/{table['metadata']['table-uuid']}/access",
        "GetViewAccessResponse": f"/warehouse/{w}/view/{view['metadata']['view-uuid']}/access",
        "GetRoleAccessResponse": f"/role/{role.json()['id']}/access",
    }


def test_access_names_only_lakekeepers_actions(client, objects):
    for schema_name, path in objects.items():
        body = _ok(client.get(f"/management/v1/permissions{path}"))
        _validate(body, schema_name)
        # allow-all: everything we have a Lakekeeper name for is allowed, so the lists are not empty
        assert body["allowed-actions"], (path, body)
        assert len(set(body["allowed-actions"])) == len(body["allowed-actions"]), body
    warehouse = _ok(client.get(f"/management/v1/permissions{objects['GetWarehouseAccessResponse']}"))
    assert "modify_storage" in warehouse["allowed-actions"] and "update_storage" not in warehouse["allowed-actions"]
    role = _ok(client.get(f"/management/v1/permissions{objects['GetRoleAccessResponse']}"))
    assert "can_grant_assignee" in role["allowed-actions"]
