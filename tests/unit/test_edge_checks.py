"""The edge's rules for what a request body may carry into the log (lakeledger/api/edge_checks.py), as pure functions:
the API tests (tests/api/test_hostile_input.py) prove they are applied to every request."""

import pytest

from lakeledger.api.edge_checks import MAX_JSON_DEPTH, body_problem, path_problem, query_problem


@pytest.mark.parametrize("body, where", [
    (b'{"a": {"b": [1, {"snapshot-id": 9223372036854775808}]}}', "a.b[1].snapshot-id"),
    (b'{"x": ["ok", "a\\u0000"]}', "x[1] holds NUL"),
    (b'{"k\\ud800": 1}', "a key of the body"),
    (b'{"schema": {"fields": [{"id": 2147483648}]}}', "schema.fields[0].id"),
    (b'{"snapshot-ids": [1, 9223372036854775808]}', "snapshot-ids[1]"),
    (b'{"equality-ids": [1, 2147483648]}', "equality-ids[1]"),
    (b'{"id": 1.0}', "must be an integer"),
    (b'{"sequence-number": true}', "must be an integer"),
    (b'{"n": -9223372036854775809}', "64-bit"),
    (b'{"n": ' + b"1" * 21 + b"}", "64-bit"),
    (b'{"n": 1e400}', "too large"),
    (b'{"n": NaN}', "not a JSON number"),
    (b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1), "nested deeper"),
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper"),
])
def test_refused_bodies_say_where(body, where):
    problem = body_problem(body)
    assert problem is not None and where in problem, problem


@pytest.mark.parametrize("body", [
    b"", b"not json", b'{"namespace": ["a"], "properties": null}', b'{"spelled": "\\\\u0000"}',
    b'{"snapshot-id": 9223372036854775807, "id": 2147483647, "schema-id": -2147483648}',
    b'{"x": 1.5, "flag": true, "big": -9223372036854775808}', b'{"smile": "\\ud83d\\ude00"}',
    b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH,
])
def test_bodies_inside_every_limit_pass(body):
    assert body_problem(body) is None


def test_paths_and_queries():
    assert path_problem("/catalog/v1/x/namespaces/a\x00") is not None
    assert path_problem("/catalog/v1/x/namespaces/a%2Fb") is None
    assert query_problem(b"warehouse=demo%00") is not None
    assert query_problem(b"parent=a%FF") is not None
    assert query_problem(b"parent=a%1Fb&pageSize=10") is None
