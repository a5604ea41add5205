"""Compressed answers (lakeledger/api/compression.py) over HTTP: gzip and zstd when asked, the same JSON once decoded,
small answers and other clients left alone, ETags and 304 intact."""

import gzip

import httpx
import orjson
import pytest
import zstandard

from tests.support import Server


def raw(client: httpx.Client, method: str, path: str, accept: str | None, **headers: str) -> httpx.Response:
    """The answer as it came on the wire (httpx decodes bodies and always sends an Accept-Encoding of its own)."""
    if accept is None:
        request = client.build_request(method, path, headers=headers)
        del request.headers["accept-encoding"]
    else:  # as bytes: odd ones too
        request = client.build_request(method, path, headers={**headers, "accept-encoding": accept.encode("latin-1")})
    response = client.send(request, stream=True)
    response._content = b"".join(response.iter_raw())  # no decoding
    response.close()
    return response


def decoded(response: httpx.Response) -> bytes:
    coding = response.headers.get("content-encoding")
    if coding == "gzip":
        return gzip.decompress(response.content)
    if coding == "zstd":
        return zstandard.ZstdDecompressor().decompress(response.content)
    assert coding is None, coding
    return response.content


def commit_snapshots(client: httpx.Client, table: str, count: int) -> None:
    parent = None
    for n in range(1, count + 1):
        snapshot = {"snapshot-id": n, "sequence-number": n, "timestamp-ms": 1_700_000_000_000 + n,
                    "manifest-list": f"file:///nowhere/snap-{n}.avro", "schema-id": 0,
                    "summary": {"operation": "append", "added-records": "1"},
                    **({"parent-snapshot-id": parent} if parent else {})}
        r = client.post(table, json={"requirements": [], "updates": [
            {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": n}]})
        assert r.status_code == 200, r.text
        parent = n


@pytest.fixture
def big_table(client, table_factory) -> str:
    table = table_factory("zip", "big")
    commit_snapshots(client, table, 20)
    return table


@pytest.mark.parametrize("query", ["", "?snapshots=all"], ids=["fast path", "route"])
@pytest.mark.parametrize("coding", ["gzip", "zstd"])
def test_a_load_is_compressed_when_asked_and_decodes_to_the_same_json(client, big_table, query, coding):
    plain = raw(client, "GET", big_table + query, None)
    packed = raw(client, "GET", big_table + query, coding)
    assert plain.status_code == packed.status_code == 200
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == coding
    assert int(packed.headers["content-length"]) == len(packed.content) < len(plain.content) / 4
    assert decoded(packed) == plain.content  # the very bytes, not only the same JSON
    assert orjson.loads(decoded(packed))["metadata"]["current-snapshot-id"] == 20
    assert packed.headers["content-type"] == plain.headers["content-type"] == "application/json"
    assert "accept-encoding" in plain.headers["vary"].lower() and "accept-encoding" in packed.headers["vary"].lower()
    # the same tag, weak once compressed: another byte sequence, the same JSON
    assert packed.headers["etag"] == "W/" + plain.headers["etag"]
    assert not plain.headers["etag"].startswith("W/")


def test_not_compressed_when_not_asked_or_refused(client, big_table):
    for accept in (None, "identity", "gzip;q=0", "zstd;q=0, gzip;q=0", "br", "deflate", "*;q=0", ""):
        r = raw(client, "GET", big_table, accept)
        assert r.status_code == 200 and "content-encoding" not in r.headers, accept
        assert int(r.headers["content-length"]) == len(r.content) and orjson.loads(r.content)["metadata"], accept


@pytest.mark.parametrize("accept, coding", [
    ("gzip, deflate", "gzip"),  # requests/pyiceberg
    ("gzip,deflate", "gzip"),  # Apache HttpClient (the Java client: Spark, Trino)
    ("gzip, deflate, zstd", "zstd"),  # httpx
    ("x-gzip", "gzip"),
    ("GZIP;Q=1", "gzip"),
    ("*", "zstd"),
    ("*, zstd;q=0", "gzip"),
    ("gzip;q=0.5, zstd;q=0.4", "gzip"),
    ("identity;q=0", None),  # nothing acceptable but identity refused: answered as it is rather than 406
    ("gzip;q=0.3, identity;q=0.9", None),  # the client prefers it plain
    ("gzip;q=abc, zstd", "zstd"),  # an unreadable quality accepts nothing
    ("ü, ;;, gzip;;q=1;foo=bar, ,", "gzip"),
])
def test_odd_accept_encodings(client, big_table, accept, coding):
    plain = raw(client, "GET", big_table, None).content
    r = raw(client, "GET", big_table, accept)
    assert r.status_code == 200 and r.headers.get("content-encoding") == coding
    assert decoded(r) == plain


def test_small_answers_are_not_compressed_unless_identity_is_refused(client, warehouse):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": ["small"]})
    r = raw(client, "GET", f"{warehouse['prefix']}/namespaces/small", "gzip")
    assert r.status_code == 200 and len(r.content) < 1024 and "content-encoding" not in r.headers
    assert orjson.loads(r.content)["namespace"] == ["small"]
    assert "accept-encoding" in r.headers["vary"].lower()  # a cache must still tell the two apart
    refused = raw(client, "GET", f"{warehouse['prefix']}/namespaces/small", "gzip, identity;q=0")
    assert refused.headers["content-encoding"] == "gzip" and decoded(refused) == r.content


def test_list_answers_above_the_threshold_are_compressed(client, warehouse):
    names = [f"a_rather_long_namespace_name_for_the_list_to_pass_a_kibibyte_{n:03d}" for n in range(30)]
    for name in names:
        assert client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [name]}).status_code == 200
    plain = raw(client, "GET", f"{warehouse['prefix']}/namespaces?pageSize=100", None)
    packed = raw(client, "GET", f"{warehouse['prefix']}/namespaces?pageSize=100", "gzip")
    assert len(plain.content) > 1024 and packed.headers["content-encoding"] == "gzip"
    assert orjson.loads(decoded(packed)) == orjson.loads(plain.content)
    assert sorted(n[0] for n in orjson.loads(decoded(packed))["namespaces"]) == names
    management = raw(client, "GET", "/management/v1/warehouse", "gzip")
    assert management.status_code == 200 and len(decoded(management)) > 1024
    assert management.headers["content-encoding"] == "gzip" and orjson.loads(decoded(management))["warehouses"]


def test_revalidation_is_not_affected(client, big_table):
    plain = raw(client, "GET", big_table, None)
    packed = raw(client, "GET", big_table, "gzip")
    for query in ("", "?snapshots=all"):
        # either form of the tag revalidates either answer (weak comparison)
        for tag in (plain.headers["etag"], packed.headers["etag"]):
            for accept, expected in ((None, plain.headers["etag"]), ("gzip", packed.headers["etag"])):
                r = raw(client, "GET", big_table + query, accept, **{"if-none-match": tag})
                assert r.status_code == 304 and r.content == b"", (query, tag, accept)
                assert "content-encoding" not in r.headers and r.headers["etag"] == expected
    commit_snapshots_after = client.post(big_table, json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"changed": "yes"}}]})
    assert commit_snapshots_after.status_code == 200
    changed = raw(client, "GET", big_table, "gzip", **{"if-none-match": packed.headers["etag"]})
    assert changed.status_code == 200 and changed.headers["etag"] != packed.headers["etag"]
    # the kept compressed body of the old metadata is not served for the new one
    assert orjson.loads(decoded(changed))["metadata"]["properties"]["changed"] == "yes"


def test_head_and_errors(client, big_table, warehouse):
    exists = raw(client, "HEAD", big_table, "gzip")
    assert exists.status_code == 204 and exists.content == b"" and "content-encoding" not in exists.headers
    missing = raw(client, "GET", f"{warehouse['prefix']}/namespaces/zip/tables/absent", "gzip")
    assert missing.status_code == 404 and "content-encoding" not in missing.headers
    assert orjson.loads(missing.content)["error"]["type"] == "NoSuchTableException"


def test_the_threshold_is_a_setting(pg_url, data_dir, tmp_path):
    server = Server(pg_url, data_dir, LAKELEDGER__COMPRESSION_MIN_BYTES="0")
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            r = raw(client, "GET", "/health", "gzip")
            assert r.status_code == 200 and r.headers["content-encoding"] == "gzip"
            assert orjson.loads(decoded(r)) == {"status": "ok"}
    finally:
        assert server.stop() == 0
