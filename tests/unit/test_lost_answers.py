"""Which load answers a keyed request whose own answer was lost (lakeledger/api/lost_answers.py)."""

import orjson
import pytest

from lakeledger.api.lost_answers import load_path

P = ["", "catalog", "v1", "wh"]


@pytest.mark.parametrize("method, path, body, loaded", [
    ("POST", [*P, "namespaces"], {"namespace": ["a", "b"]}, [*P, "namespaces", "a\x1fb"]),
    ("POST", [*P, "namespaces", "a", "tables"], {"name": "t"}, [*P, "namespaces", "a", "tables", "t"]),
    ("POST", [*P, "namespaces", "a", "register"], {"name": "t", "metadata-location": "x"},
     [*P, "namespaces", "a", "tables", "t"]),
    ("POST", [*P, "namespaces", "a", "views"], {"name": "v"}, [*P, "namespaces", "a", "views", "v"]),
    ("POST", [*P, "namespaces", "a", "register-view"], {"name": "v"}, [*P, "namespaces", "a", "views", "v"]),
    ("POST", [*P, "namespaces", "a", "tables", "t"], {"updates": []}, [*P, "namespaces", "a", "tables", "t"]),
    ("POST", [*P, "namespaces", "a", "views", "v"], {"updates": []}, [*P, "namespaces", "a", "views", "v"]),
    # answered 204 No Content: they have no body, or none a load gives
    ("POST", [*P, "tables", "rename"], {"source": {}}, None),
    ("POST", [*P, "transactions", "commit"], {"table-changes": []}, None),
    ("DELETE", [*P, "namespaces", "a", "tables", "t"], {}, None),
    ("POST", [*P, "namespaces", "a", "properties"], {"updates": {}}, None),
    ("POST", ["", "management", "v1", "warehouse"], {"warehouse-name": "w"}, None),
    ("POST", [*P, "namespaces"], {"namespace": "not a list"}, None),
])
def test_the_load_that_answers_a_lost_answer(method, path, body, loaded):
    assert load_path(method, path, orjson.dumps(body)) == loaded
