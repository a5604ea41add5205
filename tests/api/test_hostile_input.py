"""Hostile input: nothing enters the log that a read model, the rebuild or an Iceberg client cannot take back, and no
such request is a 5xx. Each case is refused at the edge (lakeledger/api/edge_checks.py, lakeledger/api/context.py) with
a 4xx ErrorModel and appends nothing; the values just inside each limit are accepted and served back as sent
(docs/input-validation.md)."""

import gzip
import json
import socket
import unicodedata
import zlib
from urllib.parse import urlsplit

import pytest
from support import SCHEMA, VIEW_VERSION

INT32_MAX, INT64_MAX = 2 ** 31 - 1, 2 ** 63 - 1
MAX_JSON_DEPTH = 128  # lakeledger/api/edge_checks.py
MAX_EXPIRATION_SECONDS = 36_525 * 24 * 3600  # lakeledger/domain/deletion.py
JSON = {"content-type": "application/json"}


def _error(r, status: int | None = None) -> dict:
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    if status is not None:
        assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert {"message", "type", "code"} <= set(error) and error["code"] == r.status_code and error["message"], error
    return error


def _field(name="a", id=1, type="long", **extra) -> dict:
    return {"id": id, "name": name, "type": type, "required": False, **extra}


def _schema(*fields) -> dict:
    return {"type": "struct", "schema-id": 0, "fields": list(fields) or [_field()]}


def _nested_struct(levels: int) -> dict:
    """A schema whose one column is a struct holding a struct ... ``levels`` deep (field ids 1..levels+1)."""
    inner: dict = {"type": "struct", "fields": [_field("leaf", levels + 1)]}
    for i in range(levels, 1, -1):
        inner = {"type": "struct", "fields": [{"id": i, "name": f"s{i}", "type": inner, "required": False}]}
    return {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "s1", "type": inner, "required": False}]}


def _nested_list(levels: int) -> dict:
    """A schema whose one column is a list of lists ... ``levels`` deep: the most type levels per JSON level."""
    inner: object = "long"
    for i in range(levels, 0, -1):
        inner = {"type": "list", "element-id": i + 1, "element": inner, "element-required": False}
    return {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "l", "type": inner, "required": False}]}


def _json_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_json_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_json_depth(v) for v in value), default=0)
    return 0


def _snapshot(snapshot_id=7, **overrides) -> dict:
    snapshot = {"snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": 1_700_000_000_000,
                "manifest-list": f"file:///nowhere/snap-{snapshot_id}.avro", "schema-id": 0,
                "summary": {"operation": "append"}}
    return {"action": "add-snapshot", "snapshot": {**snapshot, **overrides}}


def _ref(snapshot_id) -> dict:
    return {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}


def _commit(*updates) -> dict:
    return {"requirements": [], "updates": list(updates)}


def _create(name, schema=None, **extra) -> dict:
    return {"name": name, "schema": schema or _schema(), **extra}


def _view(name, sql="SELECT 1", **version) -> dict:
    v = {**VIEW_VERSION, "default-namespace": ["h"],
         "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}], **version}
    return {"name": name, "schema": SCHEMA, "view-version": v, "properties": {}}


def _deep_array(depth: int) -> bytes:
    return b'{"namespace": ["deep"], "properties": {"k": ' + b"[" * depth + b"]" * depth + b"}}"


NUL = "a\u0000"
BIG = 2 ** 63

# (label, method, path under the warehouse prefix or absolute, JSON body or raw bytes, expected status or None)
CASES = [
    # NUL anywhere a string reaches the log (issue 27: a field name poisoned the history projection)
    ("nul field name", "POST", "namespaces/h/tables", _create("t1", _schema(_field(NUL))), 400),
    ("nul field doc", "POST", "namespaces/h/tables", _create("t2", _schema(_field(doc=NUL))), 400),
    ("nul nested field name", "POST", "namespaces/h/tables",
     _create("t3", _schema({"id": 1, "name": "s", "required": False,
                            "type": {"type": "struct", "fields": [_field(NUL, 2)]}})), 400),
    ("nul table property", "POST", "namespaces/h/tables", _create("t4", properties={"k": NUL}), 400),
    ("nul table property key", "POST", "namespaces/h/tables", _create("t5", properties={NUL: "v"}), 400),
    ("nul table location", "POST", "namespaces/h/tables", _create("t6", location="file:///tmp/a\u0000"), 400),
    ("nul namespace property", "POST", "namespaces", {"namespace": ["n1"], "properties": {"k": NUL}}, 400),
    ("nul property update", "POST", "namespaces/h/properties", {"updates": {"k": NUL}}, 400),
    ("nul property removal", "POST", "namespaces/h/properties", {"removals": [NUL]}, 400),
    ("nul view sql", "POST", "namespaces/h/views", _view("v1", "SELECT '\u0000'"), 400),
    ("nul view name", "POST", "namespaces/h/views", _view(NUL), 400),
    ("nul snapshot summary", "POST", "namespaces/h/tables/t",
     _commit(_snapshot(summary={"operation": "append", "note": NUL}), _ref(7)), 400),
    ("nul snapshot summary key", "POST", "namespaces/h/tables/t",
     _commit(_snapshot(summary={"operation": "append", NUL: "x"}), _ref(7)), 400),
    ("nul manifest list", "POST", "namespaces/h/tables/t", _commit(_snapshot(**{"manifest-list": NUL}), _ref(7)), 400),
    ("nul commit property", "POST", "namespaces/h/tables/t",
     _commit({"action": "set-properties", "updates": {"k": NUL}}), 400),
    ("nul commit location", "POST", "namespaces/h/tables/t",
     _commit({"action": "set-location", "location": "file:///tmp/\u0000"}), 400),
    ("nul added column", "POST", "namespaces/h/tables/t",
     _commit({"action": "add-schema", "schema": _schema(_field("id", 1), _field(NUL, 3))}), 400),
    ("nul transaction", "POST", "transactions/commit",
     {"table-changes": [{"identifier": {"namespace": ["h"], "name": "t"}, "requirements": [],
                         "updates": [{"action": "set-properties", "updates": {"k": NUL}}]}]}, 400),
    ("nul rename target", "POST", "tables/rename",
     {"source": {"namespace": ["h"], "name": "t"}, "destination": {"namespace": ["h"], "name": NUL}}, 400),
    ("nul register", "POST", "namespaces/h/register", {"name": "r", "metadata-location": "file:///x/\u0000.json"}, 400),
    ("nul warehouse name", "POST", "/management/v1/warehouse",
     {"warehouse-name": NUL, "storage-profile": {"type": "file", "location": "file:///tmp/nul"}}, 400),
    ("nul project name", "POST", "/management/v1/project", {"project-name": NUL}, 400),
    ("surrogate summary", "POST", "namespaces/h/tables/t",
     b'{"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "\\udc00"}}]}', 400),
    # NUL in path and query parameters
    ("nul config query", "GET", "/catalog/v1/config?warehouse=demo%00", None, 400),
    ("nul parent query", "GET", "namespaces?parent=a%00", None, 400),
    ("nul page token", "GET", "namespaces?pageToken=%00", None, 400),
    ("nul namespace path", "GET", "namespaces/a%00b", None, 400),
    ("nul table path commit", "POST", "namespaces/h/tables/t%00", _commit(), 400),
    ("nul table path create", "POST", "namespaces/h%00/tables", _create("t7"), 400),
    ("nul drop query", "DELETE", "namespaces/h/tables/t?purgeRequested=%00", None, 400),
    ("nul warehouse path", "GET", "/management/v1/warehouse/%00", None, 400),
    # integers outside their spec types (int64 snapshot ids, sequence numbers, timestamps; int32 ids)
    ("snapshot id 2^63", "POST", "namespaces/h/tables/t", _commit(_snapshot(BIG), _ref(BIG)), 400),
    ("ref to snapshot 2^63", "POST", "namespaces/h/tables/t", _commit(_ref(BIG)), 400),
    ("snapshot id -2^63-1", "POST", "namespaces/h/tables/t", _commit(_snapshot(-BIG - 1), _ref(-BIG - 1)), 400),
    ("parent snapshot 2^63", "POST", "namespaces/h/tables/t",
     _commit(_snapshot(**{"parent-snapshot-id": BIG}), _ref(7)), 400),
    ("sequence number 2^63", "POST", "namespaces/h/tables/t",
     _commit(_snapshot(**{"sequence-number": BIG}), _ref(7)), 400),
    ("timestamp 2^63", "POST", "namespaces/h/tables/t", _commit(_snapshot(**{"timestamp-ms": BIG}), _ref(7)), 400),
    ("snapshot id 10^30", "POST", "namespaces/h/tables/t", _commit(_snapshot(10 ** 30), _ref(10 ** 30)), 400),
    ("5000 digits", "POST", "namespaces/h/tables/t",
     b'{"requirements": [], "updates": [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", '
     b'"snapshot-id": ' + b"9" * 5000 + b"}]}", 400),
    ("ref max age 2^63", "POST", "namespaces/h/tables/t",
     _commit({**_ref(7), "max-ref-age-ms": BIG}), 400),
    ("field id 2^31", "POST", "namespaces/h/tables", _create("t8", _schema(_field(id=2 ** 31))), 400),
    ("field id -2^31-1", "POST", "namespaces/h/tables", _create("t9", _schema(_field(id=-2 ** 31 - 1))), 400),
    ("schema id 2^31", "POST", "namespaces/h/tables", _create("t10", {**_schema(), "schema-id": 2 ** 31}), 400),
    ("list element id 2^31", "POST", "namespaces/h/tables",
     _create("t11", _schema(_field(type={"type": "list", "element-id": 2 ** 31, "element": "long",
                                         "element-required": False}))), 400),
    ("partition field id 2^31", "POST", "namespaces/h/tables",
     _create("t12", **{"partition-spec": {"spec-id": 0, "fields": [
         {"source-id": 1, "field-id": 2 ** 31, "name": "p", "transform": "identity"}]}}), 400),
    ("sort order id 2^31", "POST", "namespaces/h/tables",
     _create("t13", **{"write-order": {"order-id": 2 ** 31, "fields": []}}), 400),
    ("added schema last column 2^31", "POST", "namespaces/h/tables/t",
     _commit({"action": "add-schema", "schema": _schema(_field("id", 1)), "last-column-id": 2 ** 31}), 400),
    ("current schema 2^31", "POST", "namespaces/h/tables/t", _commit({"action": "set-current-schema",
                                                                     "schema-id": 2 ** 31}), 400),
    ("requirement schema id 2^31", "POST", "namespaces/h/tables/t",
     {"requirements": [{"type": "assert-current-schema-id", "current-schema-id": 2 ** 31}], "updates": []}, 400),
    ("view version id 2^31", "POST", "namespaces/h/views", _view("v2", **{"version-id": 2 ** 31}), 400),
    ("integer past int64 anywhere", "POST", "namespaces/h/tables", _create("t14", properties={"k": "v"},
                                                                          extra={"n": BIG}), 400),
    # floats, booleans and non-numbers where the spec says integer
    ("snapshot id 1.0", "POST", "namespaces/h/tables/t", _commit(_snapshot(7.0), _ref(7)), 400),
    ("field id 1.5", "POST", "namespaces/h/tables", _create("t15", _schema(_field(id=1.5))), 400),
    ("field id 1.0", "POST", "namespaces/h/tables", _create("t16", _schema(_field(id=1.0))), 400),
    ("field id true", "POST", "namespaces/h/tables", _create("t17", _schema(_field(id=True))), 400),
    ("schema id 1e400", "POST", "namespaces/h/tables/t",
     b'{"requirements": [], "updates": [{"action": "set-current-schema", "schema-id": 1e400}]}', 400),
    ("NaN", "POST", "namespaces/h/tables/t",
     b'{"requirements": [], "updates": [{"action": "set-current-schema", "schema-id": NaN}]}', 400),
    ("Infinity", "POST", "namespaces/h/tables",
     b'{"name": "t18", "schema": {"type": "struct", "fields": []}, "x": -Infinity}', 400),
    # nesting
    ("struct 70 deep", "POST", "namespaces/h/tables", _create("t19", _nested_struct(70)), 400),
    ("struct 65 deep in a commit", "POST", "namespaces/h/tables/t",
     _commit({"action": "add-schema", "schema": _nested_struct(65)}), 400),
    ("list 130 deep", "POST", "namespaces/h/tables", _create("t20", _nested_list(130)), 400),
    ("arrays 129 deep", "POST", "namespaces", _deep_array(MAX_JSON_DEPTH - 2 + 1), 400),
    ("arrays 100000 deep", "POST", "namespaces", _deep_array(100_000), 400),
    ("objects 5000 deep", "POST", "namespaces/h/tables/t", b'{"a":' * 5000 + b"1" + b"}" * 5000, 400),
    # delete profiles: an expiration no drop can compute (issue 27: every drop then answered 500)
    ("expiration 2^63", "POST", "/management/v1/warehouse/{id}/delete-profile",
     {"delete-profile": {"type": "soft", "expiration-seconds": BIG}}, 400),
    ("expiration past 100 years", "POST", "/management/v1/warehouse/{id}/delete-profile",
     {"delete-profile": {"type": "soft", "expiration-seconds": MAX_EXPIRATION_SECONDS + 1}}, 400),
    ("expiration 1.5", "POST", "/management/v1/warehouse/{id}/delete-profile",
     {"delete-profile": {"type": "soft", "expiration-seconds": 1.5}}, 400),
    ("new warehouse expiration 2^62", "POST", "/management/v1/warehouse",
     {"warehouse-name": "forever", "storage-profile": {"type": "file", "location": "file:///tmp/forever"},
      "delete-profile": {"type": "soft", "expiration-seconds": 2 ** 62}}, 400),
    # names in the decomposed Unicode form (NFD): one name, one spelling (NFC)
    ("nfd namespace", "POST", "namespaces", {"namespace": [unicodedata.normalize("NFD", "café")]}, 400),
    ("nfd table", "POST", "namespaces/h/tables", _create(unicodedata.normalize("NFD", "café")), 400),
    ("nfd warehouse", "POST", "/management/v1/warehouse",
     {"warehouse-name": unicodedata.normalize("NFD", "café"),
      "storage-profile": {"type": "file", "location": "file:///tmp/nfd"}}, 400),
    ("nfd rename destination", "POST", "tables/rename",
     {"source": {"namespace": ["h"], "name": "t"}, "destination": {"namespace": ["h"],
                                                                  "name": unicodedata.normalize("NFD", "café")}}, 400),
    # a lookup is of the name as sent: a decomposed spelling names no object the API made
    ("nfd path", "GET", "namespaces/cafe%CC%81", None, 404),
]


@pytest.fixture
def hostile(client, warehouse):
    p = warehouse["prefix"]
    assert client.post(f"{p}/namespaces", json={"namespace": ["h"]}).status_code == 200
    assert client.post(f"{p}/namespaces/h/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    return warehouse


def _url(warehouse: dict, path: str) -> str:
    path = path.replace("{id}", warehouse["id"])
    return path if path.startswith("/") else f"{warehouse['prefix']}/{path}"


def _content(body) -> bytes:
    if body is None or isinstance(body, bytes):
        return body or b""
    return json.dumps(body).encode()


@pytest.mark.parametrize("label, method, path, body, status", CASES, ids=[case[0] for case in CASES])
def test_hostile_request_is_4xx_and_appends_nothing(client, hostile, log_length, label, method, path, body, status):
    before = log_length()
    r = client.request(method, _url(hostile, path), content=_content(body), headers=JSON)
    _error(r, status)
    assert log_length() == before, label
    assert client.get(f"{hostile['prefix']}/namespaces/h/tables/t").status_code == 200


def test_the_values_at_each_limit_are_accepted_and_served_back_as_sent(client, hostile):
    p = hostile["prefix"]
    table = f"{p}/namespaces/h/tables/t"
    r = client.post(table, json=_commit(_snapshot(INT64_MAX, **{"timestamp-ms": 1_700_000_000_000}), _ref(INT64_MAX)))
    assert r.status_code == 200, r.text
    assert '"current-snapshot-id":9223372036854775807' in client.get(table).text.replace(" ", "")
    wide = {**_schema(_field("id", 1), _field("wide", INT32_MAX)), "schema-id": 1}
    r = client.post(table, json=_commit({"action": "add-schema", "schema": wide, "last-column-id": INT32_MAX}))
    assert r.status_code == 200, r.text
    assert r.json()["metadata"]["schemas"][-1]["fields"][-1]["id"] == INT32_MAX
    # text that spells an escape is text: a backslash, then "u0000"
    r = client.post(f"{p}/namespaces", json={"namespace": ["spelled"], "properties": {"k": "\\u0000"}})
    assert r.status_code == 200 and r.json()["properties"]["k"] == "\\u0000", r.text
    # the composed spelling of a name is the name
    nfc = unicodedata.normalize("NFC", "café")
    assert client.post(f"{p}/namespaces", json={"namespace": [nfc]}).status_code == 200
    assert client.get(f"{p}/namespaces/caf%C3%A9").json()["namespace"] == [nfc]


@pytest.mark.parametrize("schema", [_nested_struct(40), _nested_list(MAX_JSON_DEPTH - 6)], ids=["struct", "list"])
def test_the_deepest_schema_allowed_is_created_loaded_and_in_the_history(client, hostile, schema):
    """Just inside the depth limit, a schema goes through every model and every read model: no RecursionError."""
    p = hostile["prefix"]
    body = _create("deep", schema)
    assert _json_depth(body) <= MAX_JSON_DEPTH
    r = client.post(f"{p}/namespaces/h/tables", json=body)
    assert r.status_code == 200, r.text[:500]
    assert client.get(f"{p}/namespaces/h/tables/deep").status_code == 200
    history = client.get(f"/management/v1/warehouse/{hostile['id']}/history")
    assert history.status_code == 200, history.text[:500]


def test_a_long_expiration_is_accepted_and_drops_still_work(client, hostile):
    r = client.post(f"/management/v1/warehouse/{hostile['id']}/delete-profile",
                    json={"delete-profile": {"type": "soft", "expiration-seconds": MAX_EXPIRATION_SECONDS}})
    assert r.status_code == 200, r.text
    r = client.delete(f"{hostile['prefix']}/namespaces/h/tables/t")
    assert r.status_code == 204, r.text


@pytest.mark.parametrize("coding", ["gzip", "deflate", "zstd", "br"])
def test_a_compressed_request_body_is_415_without_being_inflated(client, hostile, log_length, coding):
    """A gzip bomb: 64 MiB of JSON in 64 KiB. The body is refused as it is, never inflated."""
    inner = b'{"namespace": ["bomb"], "properties": {"k": "' + b"0" * (64 * 1024 * 1024) + b'"}}'
    packed = gzip.compress(inner, compresslevel=9) if coding == "gzip" else zlib.compress(inner, 9)
    before = log_length()
    r = client.post(f"{hostile['prefix']}/namespaces", content=packed,
                    headers={**JSON, "content-encoding": coding})
    _error(r, 415)
    assert log_length() == before


def test_a_huge_body_is_413(client, hostile, log_length):
    before = log_length()
    big = b'{"namespace": ["big"], "properties": {"k": "' + b"a" * (17 * 1024 * 1024) + b'"}}'
    _error(client.post(f"{hostile['prefix']}/namespaces", content=big, headers=JSON), 413)
    _error(client.post(f"{hostile['prefix']}/namespaces", content=iter([big]), headers=JSON), 413)
    assert log_length() == before


def _raw(server_url: str, request: bytes, half_close: bool = False) -> bytes:
    host, port = urlsplit(server_url).hostname, urlsplit(server_url).port
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(request)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except (ConnectionResetError, TimeoutError):
                break
            if not chunk:
                break
            chunks.append(chunk)
            if not half_close and b"\r\n\r\n" in b"".join(chunks):
                head, _, rest = b"".join(chunks).partition(b"\r\n\r\n")
                length = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")]
                if length and len(rest) >= length[0]:
                    break
        return b"".join(chunks)


def _head(prefix: str, length: int | bytes, host: str) -> bytes:
    return (f"POST {prefix}/namespaces HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n"
            f"content-length: {length.decode() if isinstance(length, bytes) else length}\r\n\r\n").encode()


def test_a_content_length_shorter_than_the_body_is_4xx(server, hostile, log_length):
    body = b'{"namespace": ["liar-short"]}'
    before = log_length()
    answer = _raw(server.url, _head(hostile["prefix"], len(body) - 5, "x") + body)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split()[1] == b"400" and json.loads(body)["error"]["code"] == 400, answer[:500]
    assert log_length() == before


@pytest.mark.parametrize("length", [b"-1", b"1e3", b"99999999999999999999999", b"12, 13"])
def test_a_content_length_that_is_no_length_is_4xx(server, hostile, log_length, length):
    before = log_length()
    answer = _raw(server.url, _head(hostile["prefix"], length, "x") + b'{"namespace": ["liar"]}')
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split()[1] == b"400" and json.loads(body)["error"]["code"] == 400, answer[:500]
    assert log_length() == before


def test_a_content_length_longer_than_the_body_appends_nothing(server, hostile, log_length):
    """The client promises more than it sends and stops: the server waits for the rest, then the client is gone.
    Nothing is appended, and the server answers no 5xx."""
    body = b'{"namespace": ["liar-long"]}'
    before = log_length()
    answer = _raw(server.url, _head(hostile["prefix"], len(body) + 100, "x") + body, half_close=True)
    assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer[:300]
    assert log_length() == before
