"""Malformed requests get a 4xx ErrorModel, never a 5xx, and append nothing to the log."""

import pytest
from support import SCHEMA

TYPES = {
    "BadRequestException",
    "IllegalArgumentException",
    "NoSuchNamespaceException",
    "NoSuchTableException",
    "NoSuchWarehouseException",
    "RequestTooLargeException",
    "MethodNotAllowedException",
    "NotFoundException",
}


def _assert_error(r, status=None):
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    if status is not None:
        assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"}
    assert {"message", "type", "code"} <= set(body["error"])
    assert body["error"]["code"] == r.status_code and body["error"]["type"] in TYPES and body["error"]["message"]


@pytest.fixture
def table_path(table_factory):
    return table_factory("bad", "t")


def cases(prefix, table):
    ns = f"{prefix}/namespaces"
    return [
        ("POST", ns, b"{not json", 400),
        ("POST", ns, b'{"namespace": "a"}', 400),
        ("POST", ns, b'{"namespace": []}', 400),
        ("POST", ns, b'{"namespace": [""]}', 400),
        ("POST", ns, b'{"namespace": ["a\\u001fb"]}', 400),
        ("POST", ns, b'{"namespace": ["x"], "properties": {"k": 1}}', 400),
        ("POST", ns, b'[]', 400),
        ("POST", ns, b'', 400),
        ("POST", f"{ns}/bad/tables", b'{"name": "t2"}', 400),
        ("POST", f"{ns}/bad/tables", b'{"name": "", "schema": {"type": "struct", "fields": []}}', 400),
        ("POST", f"{ns}/bad/tables", b'{"name": "t3", "schema": {"type": "struct", "fields": [{"id": 1}]}}', 400),
        ("POST", f"{ns}/bad/tables", b'{"name": "t4", "schema": "nope"}', 400),
        ("POST", f"{ns}/bad/tables", b'{"name": "t5", "schema": {"type": "struct", "fields": [{"id": 1, "name": "a",'
                                     b' "type": "nonsense", "required": false}]}}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "explode"}]}', 400),
        ("POST", table, b'{"requirements": [{"type": "assert-moon"}], "updates": []}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "set-current-schema", "schema-id": "x"}]}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "set-current-schema", "schema-id": 42}]}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "remove-properties"}]}', 400),
        ("POST", table, b'{"requirements": "x", "updates": []}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "add-snapshot", "snapshot": {}}]}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "set-snapshot-ref", "ref-name": "main",'
                        b' "type": "branch", "snapshot-id": 123}]}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "upgrade-format-version", '
                        b'"format-version": 99}]}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "set-location", "location": "relative"}]}', 400),
        ("POST", f"{prefix}/transactions/commit", b'{"table-changes": [{"requirements": [], "updates": []}]}', 400),
        ("POST", f"{prefix}/transactions/commit", b'{"table-changes": []}', 400),
        ("POST", f"{prefix}/transactions/commit", b'{"table-changes": "x"}', 400),
        ("POST", f"{prefix}/tables/rename", b'{"source": {"namespace": ["bad"], "name": "t"}}', 400),
        ("POST", f"{ns}/bad/register", b'{"name": "r", "metadata-location": "file:///nowhere/x.json"}', 400),
        ("POST", f"{ns}/bad/properties", b'{"updates": {"a": ["b"]}}', 400),
        ("POST", f"{ns}/bad/properties", b'{"updates": {"a\\u0000b": "x"}}', 400),
        ("POST", ns, b'{"namespace": ["nul"], "properties": {"k": "v\\u0000"}}', 400),
        ("POST", f"{ns}/bad/tables", b'{"name": "t6", "schema": {"type": "struct", "fields": [{"id": 1, "name": "a",'
                                     b' "type": {"x": 1}, "required": false, "initial-default": false}]}}', 400),
        ("POST", table, b'{"requirements": [], "updates": [{"action": "add-schema", "schema": {"type": "struct",'
                        b' "fields": [{"id": 9, "name": "a", "type": {"x": 1}, "required": false,'
                        b' "write-default": 1}]}}]}', 400),
        ("POST", f"{ns}/bad/tables", b'{"name": "t7", "location": "file:///tmp/a\\u0000b", "schema": '
                                     b'{"type": "struct", "fields": []}}', 400),
        ("POST", "/management/v1/warehouse", b'{"warehouse-name": "nul", "storage-profile": {"type": "file",'
                                             b' "location": "file:///tmp/x\\u0000y"}}', 400),
        ("DELETE", table + "?purgeRequested=maybe", b"", 400),
        ("GET", f"{ns}/%1F", b"", 400),
        ("GET", "/catalog/v1/not-a-uuid/namespaces", b"", 404),
        ("GET", "/catalog/v1/config", b"", 400),
        ("POST", "/management/v1/warehouse", b'{"warehouse-name": "w"}', 400),
        ("POST", "/management/v1/warehouse", b'{"warehouse-name": "w", "storage-profile": {"type": "file",'
                                             b' "location": "relative"}}', 400),
        ("POST", "/management/v1/warehouse", b'{"warehouse-name": "", "storage-profile": {"type": "file",'
                                             b' "location": "file:///tmp/x"}}', 400),
        ("POST", "/management/v1/bootstrap", b'{"accept-terms-of-use": "perhaps"}', 400),
        ("POST", "/management/v1/project", b'{"project-name": 5}', 400),
        ("GET", "/management/v1/project", b"", None),
        ("PUT", ns, b"{}", 405),
    ]


def test_bad_input_is_a_4xx_error_model_and_appends_nothing(client, warehouse, table_path, log_length):
    for method, url, body, status in cases(warehouse["prefix"], table_path):
        before = log_length()
        headers = {"content-type": "application/json"}
        if url == "/management/v1/project":
            headers["x-project-id"] = "not a uuid"
        r = client.request(method, url, content=body, headers=headers)
        _assert_error(r, status)
        assert log_length() == before, (method, url, body)


def test_oversize_body_is_refused(client, warehouse, log_length):
    before = log_length()
    big = b'{"namespace": ["x"], "properties": {"k": "' + b"a" * (17 * 1024 * 1024) + b'"}}'
    r = client.post(f"{warehouse['prefix']}/namespaces", content=big, headers={"content-type": "application/json"})
    _assert_error(r, 413)
    chunked = client.post(f"{warehouse['prefix']}/namespaces", content=iter([big]),
                          headers={"content-type": "application/json"})
    _assert_error(chunked, 413)
    assert log_length() == before


def test_create_table_with_wrong_types(client, warehouse, log_length):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["types"]})
    before = log_length()
    for body in ({"name": ["t"], "schema": SCHEMA}, {"name": "t", "schema": SCHEMA, "stage-create": "maybe"},
                 {"name": "t", "schema": SCHEMA, "properties": ["a"]},
                 {"name": "t", "schema": SCHEMA, "partition-spec": {"fields": [{"source-id": 9, "transform": "bad",
                                                                                "name": "p"}]}}):
        _assert_error(client.post(f"{warehouse['prefix']}/namespaces/types/tables", json=body), 400)
    assert log_length() == before
