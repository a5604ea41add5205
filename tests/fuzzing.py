"""Fuzzing with schemathesis, shared by the test of the served OpenAPI document (tests/api/test_openapi_fuzz.py)
and the tests of the official documents (tests/api/test_official_spec_fuzz.py): objects for generated requests to
reach, and one operation fuzzed with every finding recorded instead of raised."""

import re
import uuid
from collections.abc import Callable, Sequence

import requests
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from support import SCHEMA

# positive_data_acceptance is left out: a schema-valid request may still name an object that does not exist or
# one that conflicts (404/409 are the right answers); the stateful checks need schemathesis' own runner.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, negative_data_rejection]
EXAMPLES = {GenerationMode.POSITIVE: 20, GenerationMode.NEGATIVE: 10}
NAMESPACE, TABLE, VIEW = "fuzz_ns", "fuzz_table", "fuzz_view"
GENERIC_TABLE = "fuzz_generic"

VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1700000000000, "summary": {},
                "default-namespace": [NAMESPACE],
                "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}


class ObjectsFor:
    """The objects an operation's generated requests reach: fresh ones for each operation that may change them, one
    set shared by the reads (GET, HEAD), which change nothing. Making them is ten appends; fuzzing a read, a few
    dozen refused or read-only requests."""

    def __init__(self, client, tmp_path):
        self.client, self.tmp_path = client, tmp_path
        self.shared: dict[str, str] | None = None

    def __call__(self, operation) -> dict[str, str]:
        if operation.method.upper() not in ("GET", "HEAD"):
            return fresh_objects(self.client, self.tmp_path)
        if self.shared is None:
            self.shared = fresh_objects(self.client, self.tmp_path)
        return self.shared


def fresh_objects(client, tmp_path) -> dict[str, str]:
    """A project with a file warehouse holding one namespace, table, view and generic table, and a tag definition;
    returns the path parameters."""
    project = client.post("/management/v1/project", json={"project-name": f"fuzz-{uuid.uuid4().hex[:8]}"})
    assert project.status_code == 201, project.text
    project_id = project.json()["project-id"]
    location = tmp_path / uuid.uuid4().hex
    created = client.post("/management/v1/warehouse", headers={"x-project-id": project_id}, json={
        "warehouse-name": f"fuzz-{uuid.uuid4().hex[:8]}",
        "storage-profile": {"type": "file", "location": f"file://{location}"}})
    assert created.status_code == 201, created.text
    warehouse_id = created.json()["warehouse-id"]
    prefix = f"/catalog/v1/{warehouse_id}"
    responses = (
        client.post(f"{prefix}/namespaces", json={"namespace": [NAMESPACE]}),
        client.post(f"{prefix}/namespaces/{NAMESPACE}/tables", json={"name": TABLE, "schema": SCHEMA}),
        client.post(f"{prefix}/namespaces/{NAMESPACE}/views",
                    json={"name": VIEW, "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}),
    )
    generic = f"/lakekeeper/v1/{warehouse_id}/namespaces/{NAMESPACE}/generic-tables"
    responses += (client.post(generic, json={"name": GENERIC_TABLE, "format": "lance"}),)
    for response in responses:
        assert response.status_code == 200, response.text
    namespace, table, view, _ = (r.json() for r in responses)
    [generic_table] = client.get(generic).json()["identifiers"]
    user_id = f"oidc~fuzz-{uuid.uuid4().hex[:8]}"
    user = client.post("/management/v1/user", json={"id": user_id, "name": "Fuzz User", "user-type": "human"})
    role = client.post("/management/v1/role", headers={"x-project-id": project_id}, json={"name": "fuzz-role"})
    assert user.status_code == 201 and role.status_code == 201, (user.text, role.text)
    role_id = role.json()["id"]
    tag = client.post("/management/v1/tag-definition", headers={"x-project-id": project_id}, json={
        "name": "fuzz.tag", "scope": ["warehouse", "namespace", "table", "view", "generic-table", "column"],
        "value-kind": "free-text"})
    assert tag.status_code == 201, tag.text
    member = client.post(f"/management/v1/role/{role_id}/members", headers={"x-project-id": project_id},
                         json={"members": [{"type": "user", "id": user_id}]})
    assert member.status_code == 200, member.text
    plan = client.post(f"{prefix}/namespaces/{NAMESPACE}/tables/{TABLE}/plan", json={})
    assert plan.status_code == 200, plan.text
    return {"project_id": project_id, "user_id": user_id, "role_id": role_id, "member_type": "user",
            "member_id": user_id, "prefix": warehouse_id, "warehouse_id": warehouse_id,
            "namespace": NAMESPACE, "table": TABLE, "view": VIEW, "location": str(location),
            "namespace_id": namespace["namespace-uuid"], "table_id": table["metadata"]["table-uuid"],
            "view_id": view["metadata"]["view-uuid"], "generic_table_id": generic_table["id"],
            "scope": "not-a-signer-scope", "tag_definition_id": tag.json()["id"], "tag_name": "fuzz.tag",
            "column_name": "id", "plan_id": plan.json()["plan-id"], "policy_type": "system.snapshot-expiry",
            "task_id": str(uuid.uuid4())}  # no task: fuzzed task requests reach the lookup (404)


def fuzz(operation, mode: GenerationMode, objects: dict[str, str], base_url: str, session: requests.Session,
         record: Callable[[str, str, str], None], checks: Sequence = CHECKS,
         examples: dict[GenerationMode, int] = EXAMPLES) -> None:
    names = re.findall(r"{(\w+)}", operation.path)
    strategy = operation.as_strategy(generation_mode=mode, path_parameters={n: objects[n] for n in names},
                                     headers={"x-project-id": objects["project_id"]})

    @settings(max_examples=examples[mode], deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case) -> None:
        if mode is GenerationMode.POSITIVE and "Idempotency-Key" in (case.headers or {}):
            # Hypothesis draws the same few UUIDs for every operation, and a key reused for another request is
            # answered 422 before the route runs; a fresh key lets the route answer.
            case.headers["Idempotency-Key"] = str(uuid.uuid4())
        try:
            response = case.call(base_url=base_url, session=session, timeout=30)
        except requests.RequestException as exc:
            record("no response", type(exc).__name__, f"{case.as_curl_command(base_url=base_url)}\n{exc}")
            return
        try:
            case.validate_response(response, checks=checks, transport_kwargs={"base_url": base_url})
        except FailureGroup as group:
            for failure in group.exceptions:
                describe(case, response, failure)
        except Failure as failure:
            describe(case, response, failure)

    def describe(case, response, failure: Failure) -> None:
        if failure.title == "Schema-violating request accepted" and _only_free_text_query(operation, failure.message):
            return
        record(failure.title, str(response.status_code),
               f"{case.as_curl_command(base_url=base_url)}\n-> {response.status_code} {response.text[:300]}\n"
               f"{failure.message[:400]}")

    try:
        run()
    except Unsatisfiable:
        # Negative mode has nothing to break in an operation whose only inputs are the fixed path parameters.
        assert mode is GenerationMode.NEGATIVE, operation.label


def _only_free_text_query(operation, message: str) -> bool:
    """Whether the "invalid" parts schemathesis generated are all query parameters that take any text: on the wire
    every query value is text, so an integer it drew for a string (``?providerIds=128929223``) is a valid value and
    accepting it is right. Which values it draws varies from run to run, so these once failed the fuzz test."""
    found = re.search(r"Invalid component: parameters? (.+) in query", message)
    if found is None:
        return False
    names = re.findall(r"`([^`]+)`", found.group(1))
    parameters = operation.definition.raw.get("parameters", [])
    schemas = {p["name"]: p.get("schema") for p in parameters if p.get("in") == "query"}
    return bool(names) and all(_takes_any_text(schemas.get(name)) for name in names)


def _takes_any_text(schema: dict | None) -> bool:
    if not schema:
        return False
    if "anyOf" in schema:  # null: the parameter left out
        return all(option.get("type") == "null" or _takes_any_text(option) for option in schema["anyOf"])
    if schema.get("type") == "array":
        return _takes_any_text(schema.get("items"))
    constraints = ("enum", "const", "pattern", "format", "minLength", "maxLength")
    return schema.get("type") == "string" and not any(key in schema for key in constraints)
