"""Lakekeeper's management OpenAPI document of the newest stored commit, for tests that hold our answers to it:
``check(response)`` finds the operation the request called (method and path, parameters matching any segment) and
validates the body against the schema that document gives for the status (the exact code, else ``4XX``/``5XX``,
else ``default``)."""

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[1]
NEWEST = ROOT / "conformance/specs/lakekeeper-management-open-api-90892e9.yaml"
METHODS = ("get", "put", "post", "delete", "patch")


@cache
def document(path: Path = NEWEST) -> dict:
    return yaml.safe_load(path.read_text())


@cache
def _operations(path: Path = NEWEST) -> list[tuple[str, re.Pattern, dict]]:
    found = []
    for template, item in document(path)["paths"].items():
        pattern = re.compile("^" + re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(template)) + "$")
        for method in METHODS:
            if method in item:
                found.append((method.upper(), pattern, item[method]))
    # a literal segment wins over a parameter (/project/actions before /project/{id})
    return sorted(found, key=lambda op: op[1].pattern.count("[^/]+"))


def operation(method: str, path: str, spec: Path = NEWEST) -> dict | None:
    for m, pattern, op in _operations(spec):
        if m == method and pattern.match(path):
            return op
    return None


# Lakeledger's own storage kind (a local directory, docs/storage.md), which Lakekeeper's StorageProfile does not name:
# accepted beside Lakekeeper's kinds, and only in that shape
FILE_STORAGE = {"type": "object", "required": ["type", "location"],
                "properties": {"type": {"const": "file"}, "location": {"type": "string"}}}


@cache
def _schemas(spec: Path) -> dict:
    schemas = dict(document(spec)["components"]["schemas"])
    schemas["StorageProfile"] = {"anyOf": [schemas["StorageProfile"], FILE_STORAGE]}
    return schemas


def _errors(body: Any, schema: dict, spec: Path, schemas: dict | None = None) -> list[str]:
    root = {"components": {"schemas": schemas or _schemas(spec)}, **schema}
    errors = sorted(jsonschema.Draft202012Validator(root).iter_errors(body), key=str)
    return [f"{list(e.absolute_path)}: {e.message}" for e in errors]


def validate(body: Any, schema_ref: str, spec: Path = NEWEST, **replaced: dict) -> None:
    """Validates ``body`` against ``#/components/schemas/<schema_ref>``; ``replaced`` swaps a property's schema."""
    schemas = dict(_schemas(spec))
    if replaced:
        schemas[schema_ref] = {**schemas[schema_ref],
                               "properties": {**schemas[schema_ref]["properties"], **replaced}}
    errors = _errors(body, {"$ref": f"#/components/schemas/{schema_ref}"}, spec, schemas)
    assert not errors, errors


def response_schema(method: str, path: str, status: int, spec: Path = NEWEST) -> dict | None:
    """The JSON schema Lakekeeper's document gives the answer, None when it gives the status no body."""
    op = operation(method, path, spec)
    assert op is not None, f"Lakekeeper's document has no {method} {path}"
    responses = op.get("responses", {})
    answer = responses.get(str(status)) or responses.get(f"{status // 100}XX") or responses.get("default")
    assert answer is not None, f"Lakekeeper's document gives {method} {path} no {status} answer: {list(responses)}"
    content = answer.get("content", {}).get("application/json")
    return None if content is None else content["schema"]


def mismatches(method: str, path: str, status: int, content: bytes, spec: Path = NEWEST) -> list[str]:
    """What in an answer Lakekeeper's document does not allow: a status it does not list, a body where it gives
    none, or a body its schema refuses."""
    try:
        schema = response_schema(method, path, status, spec)
    except AssertionError as e:
        return [str(e)]
    if schema is None:
        return [f"a body where the document has none: {content[:200]!r}"] if content.strip() else []
    try:
        body = json.loads(content)
    except ValueError:
        return [f"not JSON: {content[:200]!r}"]
    return _errors(body, schema, spec)


def check(response: httpx.Response, spec: Path = NEWEST) -> Any:
    """Validates an answer against Lakekeeper's document and returns its JSON body (None when bodiless)."""
    request = response.request
    found = mismatches(request.method, request.url.path, response.status_code, response.content, spec)
    assert not found, (request.method, request.url.path, response.status_code, found)
    return response.json() if response.content else None
