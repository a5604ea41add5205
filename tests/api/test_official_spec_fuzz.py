"""Schemathesis fuzzes Lakeledger from the documents others wrote: Apache Iceberg's REST catalog OpenAPI document
(the release's YAML, kept in conformance/specs/) under `/catalog`, and Lakekeeper's management API document under
`/management/v1`. The served document (tests/api/test_openapi_fuzz.py) is ours; these are the judges.

Every generated request must be answered without a server error, and every answer must match the document's
schema for its status, except the differences listed below, each with its reason (docs/fuzzing.md lists them for
users). A listed difference that no longer shows fails too, so the list stays true."""

from pathlib import Path

import requests
import schemathesis
from fuzzing import ObjectsFor, fuzz
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

SPECS = Path(__file__).parents[2] / "conformance" / "specs"
ICEBERG = SPECS / "iceberg-rest-catalog-open-api-1.10.2.yaml"
LAKEKEEPER = SPECS / "lakekeeper-management-open-api-90892e9.yaml"  # the newest stored: the shapes we answer
CHECKS = [not_a_server_error, response_schema_conformance]
EXAMPLES = {GenerationMode.POSITIVE: 8, GenerationMode.NEGATIVE: 4}
SCHEMA_DIFFERENCE = "Response violates schema"

# (operation, check, status) -> why Lakeledger answers otherwise than the document says. Only schema differences
# (a shape, or a discriminator's value) may be listed: a server error never is.
ICEBERG_DIFFERENCES = {
    ("DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}", SCHEMA_DIFFERENCE, "404"):
        "the document's schema is the bare ErrorModel, its own example (NoSuchViewError) and every client the "
        "wrapped IcebergErrorResponse ({\"error\": ...}) that every other error of the document uses",
    ("POST /v1/{prefix}/views/rename", SCHEMA_DIFFERENCE, "404"):
        "as dropView's 404: the bare ErrorModel in the schema, the wrapped error in its example and in clients",
}
_FILE_PROFILE = ("a file warehouse's storage profile ({\"type\": \"file\"}) is Lakeledger's extension: Lakekeeper's "
                 "StorageProfile is one of s3, adls and gcs")
UNKNOWN_DISCRIMINATOR = "Unknown discriminator value"
# every answer that holds a warehouse: with a file profile, its "type" is no value of the document's discriminator
LAKEKEEPER_DIFFERENCES = {
    (operation, check, "200"): _FILE_PROFILE
    for operation in ("GET /management/v1/warehouse", "GET /management/v1/warehouse/{warehouse_id}",
                      "POST /management/v1/warehouse/{warehouse_id}/delete-profile",
                      "POST /management/v1/warehouse/{warehouse_id}/rename",
                      "POST /management/v1/warehouse/{warehouse_id}/managed-by")
    for check in (SCHEMA_DIFFERENCE, UNKNOWN_DISCRIMINATOR)
}


def _findings(server, client, tmp_path, document: Path, base_path: str) -> tuple[int, int, dict]:
    schema = schemathesis.openapi.from_path(str(document))
    operations = [result.ok() for result in schema.get_all_operations()]
    findings: dict[tuple[str, str, str], str] = {}
    requests_made = 0
    session = requests.Session()
    original = session.request

    def counted(*args, **kwargs):
        nonlocal requests_made
        requests_made += 1
        return original(*args, **kwargs)

    session.request = counted
    objects_for = ObjectsFor(client, tmp_path)
    for operation in operations:
        objects = objects_for(operation) | {"plan-id": "no-such-plan", "generic_table_id":
                                                     "00000000-0000-0000-0000-000000000000",
                                                     "task_id": "00000000-0000-0000-0000-000000000000"}
        for mode in EXAMPLES:
            def record(check: str, status: str, detail: str, label=operation.label) -> None:
                findings.setdefault((label, check, status), detail)

            fuzz(operation, mode, objects, server.url + base_path, session, record, checks=CHECKS,
                 examples=EXAMPLES)
    return len(operations), requests_made, findings


def _report(findings: dict) -> str:
    return "\n\n".join(f"{label} | {check} | status {status}\n{detail}"
                       for (label, check, status), detail in sorted(findings.items()))


def _judge(name: str, document: Path, base_path: str, differences: dict, server, client, tmp_path) -> None:
    assert all(check in (SCHEMA_DIFFERENCE, UNKNOWN_DISCRIMINATOR) for _, check, _ in differences)
    count, made, findings = _findings(server, client, tmp_path, document, base_path)
    print(f"{name}: {count} operations, {made} requests, {len(findings)} findings, {len(differences)} listed")
    assert count > 0 and made >= count
    unexpected = {key: detail for key, detail in findings.items() if key not in differences}
    assert not unexpected, f"{len(unexpected)} distinct findings over {count} operations:\n\n{_report(unexpected)}"
    gone = sorted(set(differences) - set(findings))
    assert not gone, f"listed differences that no longer show (remove them here and in docs/fuzzing.md): {gone}"


def test_iceberg_rest_spec(server, client, tmp_path):
    _judge("Iceberg REST 1.10.2", ICEBERG, "/catalog", ICEBERG_DIFFERENCES, server, client, tmp_path)


def test_lakekeeper_management_spec(server, client, tmp_path):
    _judge("Lakekeeper management 90892e9", LAKEKEEPER, "", LAKEKEEPER_DIFFERENCES, server, client, tmp_path)
