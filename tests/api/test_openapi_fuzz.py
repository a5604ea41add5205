"""Schemathesis fuzzes every catalog and management operation of the OpenAPI document the live server serves.

Each operation gets a fresh project, warehouse, namespace, table and view, and its path parameters and
`x-project-id` name them, so generated requests reach real objects instead of stopping at 404. Every finding of
every operation is collected (an assertion inside Hypothesis would stop an operation at its first one) and the
test fails with all of them, grouped by operation, check and status.
"""

import re
import uuid
from collections.abc import Callable

import requests
import schemathesis
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

VIEW_VERSION = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1700000000000, "summary": {},
                "default-namespace": [NAMESPACE],
                "representations": [{"type": "sql", "sql": "SELECT 1", "dialect": "spark"}]}


def fresh_objects(client, tmp_path) -> dict[str, str]:
    """A project with a file warehouse holding one namespace, table and view; returns the path parameters."""
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
    for response in (
        client.post(f"{prefix}/namespaces", json={"namespace": [NAMESPACE]}),
        client.post(f"{prefix}/namespaces/{NAMESPACE}/tables", json={"name": TABLE, "schema": SCHEMA}),
        client.post(f"{prefix}/namespaces/{NAMESPACE}/views",
                    json={"name": VIEW, "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}),
    ):
        assert response.status_code == 200, response.text
    return {"project_id": project_id, "prefix": warehouse_id, "warehouse_id": warehouse_id,
            "namespace": NAMESPACE, "table": TABLE, "view": VIEW}


def fuzz(operation, mode: GenerationMode, objects: dict[str, str], base_url: str, session: requests.Session,
         record: Callable[[str, str, str], None]) -> None:
    names = re.findall(r"{(\w+)}", operation.path)
    strategy = operation.as_strategy(generation_mode=mode, path_parameters={n: objects[n] for n in names},
                                     headers={"x-project-id": objects["project_id"]})

    @settings(max_examples=EXAMPLES[mode], deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case) -> None:
        try:
            response = case.call(base_url=base_url, session=session, timeout=30)
        except requests.RequestException as exc:
            record("no response", type(exc).__name__, f"{case.as_curl_command(base_url=base_url)}\n{exc}")
            return
        try:
            case.validate_response(response, checks=CHECKS, transport_kwargs={"base_url": base_url})
        except FailureGroup as group:
            for failure in group.exceptions:
                describe(case, response, failure)
        except Failure as failure:
            describe(case, response, failure)

    def describe(case, response, failure: Failure) -> None:
        record(failure.title, str(response.status_code),
               f"{case.as_curl_command(base_url=base_url)}\n-> {response.status_code} {response.text[:300]}\n"
               f"{failure.message[:400]}")

    try:
        run()
    except Unsatisfiable:
        # Negative mode has nothing to break in an operation whose only inputs are the fixed path parameters.
        assert mode is GenerationMode.NEGATIVE, operation.label


def test_fuzzed_operations_answer_by_the_served_openapi_document(server, client, tmp_path):
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    labels = {op.label for op in operations}
    # The document must describe both APIs, or there is nothing to fuzz.
    assert any(label.startswith("POST /catalog/v1/{prefix}/namespaces") for label in labels), sorted(labels)
    assert any(" /management/v1/warehouse" in label for label in labels), sorted(labels)

    findings: dict[tuple[str, str, str], str] = {}
    session = requests.Session()
    for operation in operations:
        objects = fresh_objects(client, tmp_path)
        for mode in EXAMPLES:
            def record(check: str, status: str, detail: str, label=operation.label) -> None:
                findings.setdefault((label, check, status), detail)

            fuzz(operation, mode, objects, server.url, session, record)

    report = "\n\n".join(f"{label} | {check} | status {status}\n{detail}"
                         for (label, check, status), detail in sorted(findings.items()))
    assert not findings, f"{len(findings)} distinct findings over {len(operations)} operations:\n\n{report}"

