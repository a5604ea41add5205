"""Unpaired surrogates ("\\ud800" is valid JSON, but no character: UTF-8 and Postgres cannot hold it) are refused
with a 400 ErrorModel wherever text from the client enters, nothing is appended, and the connection stays usable;
surrogate pairs (a character outside the BMP, escaped) are ordinary text."""

import pytest
from support import SCHEMA, VIEW_VERSION

LONE = "\\ud800"  # as the JSON text carries it
LOW = "\\udfff"


def _field(name: str, doc: str | None = None) -> str:
    doc_part = f', "doc": "{doc}"' if doc is not None else ""
    return f'{{"id": 1, "name": "{name}", "type": "long", "required": false{doc_part}}}'


def _schema(name: str = "a", doc: str | None = None) -> str:
    return f'{{"type": "struct", "schema-id": 0, "fields": [{_field(name, doc)}]}}'


def _view_version(sql: str) -> str:
    return ('{"version-id": 1, "schema-id": 0, "timestamp-ms": 1700000000000, "summary": {}, '
            '"default-namespace": ["sur"], "representations": [{"type": "sql", "sql": "' + sql + '", '
            '"dialect": "spark"}]}')


def bodies(p: str, table: str, view: str) -> list[tuple[str, str, str]]:
    ns = f"{p}/namespaces"
    return [
        ("namespace name", ns, f'{{"namespace": ["x{LONE}"]}}'),
        ("low surrogate alone", ns, f'{{"namespace": ["x{LOW}y"]}}'),
        ("two highs", ns, f'{{"namespace": ["{LONE}{LONE}"]}}'),
        ("namespace property key", ns, f'{{"namespace": ["ok1"], "properties": {{"{LONE}": "v"}}}}'),
        ("namespace property value", ns, f'{{"namespace": ["ok2"], "properties": {{"k": "{LONE}"}}}}'),
        ("property update", f"{ns}/sur/properties", f'{{"updates": {{"k": "{LONE}"}}}}'),
        ("property removal", f"{ns}/sur/properties", f'{{"removals": ["{LONE}"]}}'),
        ("table name", f"{ns}/sur/tables", f'{{"name": "t{LONE}", "schema": {_schema()}}}'),
        ("column name", f"{ns}/sur/tables", f'{{"name": "t2", "schema": {_schema("c" + LONE)}}}'),
        ("column doc", f"{ns}/sur/tables", f'{{"name": "t3", "schema": {_schema("c", LONE)}}}'),
        ("table property", f"{ns}/sur/tables", f'{{"name": "t4", "schema": {_schema()}, '
                                                f'"properties": {{"k": "{LONE}"}}}}'),
        ("table location", f"{ns}/sur/tables", f'{{"name": "t5", "schema": {_schema()}, '
                                                f'"location": "file:///tmp/{LONE}"}}'),
        ("commit property", table, f'{{"requirements": [], "updates": [{{"action": "set-properties", '
                                   f'"updates": {{"{LONE}": "v"}}}}]}}'),
        ("commit schema", table, f'{{"requirements": [], "updates": [{{"action": "add-schema", '
                                 f'"schema": {_schema("z" + LONE)}}}]}}'),
        ("commit location", table, f'{{"requirements": [], "updates": [{{"action": "set-location", '
                                   f'"location": "file:///tmp/{LONE}"}}]}}'),
        ("rename", f"{p}/tables/rename", f'{{"source": {{"namespace": ["sur"], "name": "t"}}, '
                                          f'"destination": {{"namespace": ["sur"], "name": "{LONE}"}}}}'),
        ("register", f"{ns}/sur/register", f'{{"name": "{LONE}", "metadata-location": "file:///x/{LONE}.json"}}'),
        ("transaction", f"{p}/transactions/commit", f'{{"table-changes": [{{"identifier": {{"namespace": ["sur"], '
                                                    f'"name": "t{LONE}"}}, "requirements": [], "updates": []}}]}}'),
        ("view sql", f"{ns}/sur/views", f'{{"name": "v2", "schema": {_schema()}, '
                                        f'"view-version": {_view_version("SELECT " + LONE)}, "properties": {{}}}}'),
        ("view name", f"{ns}/sur/views", f'{{"name": "{LONE}", "schema": {_schema()}, '
                                         f'"view-version": {_view_version("SELECT 1")}, "properties": {{}}}}'),
        ("view property", view, f'{{"requirements": [], "updates": [{{"action": "set-properties", '
                                f'"updates": {{"k": "{LONE}"}}}}]}}'),
        ("metrics", f"{table}/metrics", f'{{"report-type": "scan-report", "table-name": "{LONE}"}}'),
        ("warehouse name", "/management/v1/warehouse", f'{{"warehouse-name": "{LONE}", "storage-profile": '
                                                       f'{{"type": "file", "location": "file:///tmp/sur"}}}}'),
        ("project name", "/management/v1/project", f'{{"project-name": "{LONE}"}}'),
    ]


@pytest.fixture
def objects(client, warehouse):
    p = warehouse["prefix"]
    assert client.post(f"{p}/namespaces", json={"namespace": ["sur"]}).status_code == 200
    assert client.post(f"{p}/namespaces/sur/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    r = client.post(f"{p}/namespaces/sur/views", json={"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION,
                                                       "properties": {}})
    assert r.status_code == 200, r.text
    return f"{p}/namespaces/sur/tables/t", f"{p}/namespaces/sur/views/v"


def test_a_lone_surrogate_anywhere_in_a_body_is_400_and_appends_nothing(client, warehouse, objects, log_length):
    table, view = objects
    for label, url, body in bodies(warehouse["prefix"], table, view):
        before = log_length()
        r = client.post(url, content=body.encode(), headers={"content-type": "application/json"})
        assert r.status_code == 400, (label, r.status_code, r.text)
        error = r.json()["error"]
        assert error["code"] == 400 and "surrogate" in error["message"], (label, error)
        assert r.headers.get("connection") != "close", label
        assert log_length() == before, label
    assert client.get(table).status_code == 200  # the same connection still works


def test_surrogate_bytes_sent_raw_are_refused_too(client, warehouse, log_length):
    # ED A0 80 is what a surrogate would be in UTF-8; Python's JSON parser decodes it into one
    before = log_length()
    r = client.post(f"{warehouse['prefix']}/namespaces", content=b'{"namespace": ["x\xed\xa0\x80"]}',
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == 400, r.text
    assert log_length() == before


@pytest.mark.parametrize("query", ["parent=%ED%A0%80", "parent=a%FFb", "pageToken=%ED%B0%80"])
def test_query_parameters_that_are_not_utf8_are_400(client, warehouse, log_length, query):
    before = log_length()
    r = client.get(f"{warehouse['prefix']}/namespaces?{query}")
    assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException", r.text
    r = client.get("/catalog/v1/config?warehouse=%ED%A0%80")
    assert r.status_code == 400, r.text
    assert log_length() == before


def test_surrogate_pairs_and_escaped_backslashes_are_ordinary_text(client, warehouse):
    p = warehouse["prefix"]
    body = '{"namespace": ["smile \\ud83d\\ude00"], "properties": {"k": "not a surrogate: \\\\ud800"}}'
    r = client.post(f"{p}/namespaces", content=body.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text
    assert r.json()["namespace"] == ["smile \U0001F600"]
    assert r.json()["properties"]["k"] == "not a surrogate: \\ud800"
    assert client.get(f"{p}/namespaces/smile%20%F0%9F%98%80").status_code == 200
