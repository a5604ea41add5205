"""Credentials exactly as wide as their table (issue 27), on a real MinIO: for a table whose location holds an IAM
wildcard, a policy variable or any other special character, the vended credential and the remote signer reach its
own prefix and are refused on a neighbouring table's prefix and on the warehouse root; and locations with dot
segments, spelt or percent-encoded, are refused on file and S3 warehouses before anything is recorded."""

import uuid
from urllib.parse import quote

import httpx
import pytest
from support import SCHEMA, VIEW_VERSION

CHARACTERS = ["*", "?", "$", "{", "}", "%", " ", "é", "文"]
VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}
SIGNING = {"X-Iceberg-Access-Delegation": "remote-signing"}


def _s3_warehouse(client, minio, bucket, flavor: str) -> dict:
    name = f"scope-{flavor}-{uuid.uuid4().hex[:8]}"
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name, **{"sts-enabled": True,
                                                                                  "flavor": flavor}),
        "storage-credential": minio.credential()})
    assert r.status_code == 201, r.text
    return {"bucket": bucket, "key-prefix": name, "prefix": f"/catalog/v1/{r.json()['warehouse-id']}"}


@pytest.fixture(scope="module")
def minio_warehouse(client, minio, bucket) -> dict:
    """What MinIO is: flavor minio, whose policies know no escapes for '*' and '?'."""
    return _s3_warehouse(client, minio, bucket, "minio")


@pytest.fixture(scope="module")
def aws_flavored_warehouse(client, minio, bucket) -> dict:
    """A warehouse whose flavor says aws although its store is MinIO: its policies carry AWS's escapes, which MinIO
    reads literally; they must then match nothing else, never another table."""
    return _s3_warehouse(client, minio, bucket, "aws")


def _key(location: str) -> str:
    return location.split("/", 3)[3]


def _tables(client, wh, namespace: str, char: str) -> tuple[dict, dict, dict]:
    """A table at .../a<char>b, its neighbour at .../aXb (which a wildcard in place of <char> would match) and one
    at .../a<char>b0 (whose keys a listing of the bare prefix .../a<char>b would name)."""
    base = f"s3://{wh['bucket']}/{wh['key-prefix']}/{namespace}"
    made = []
    for name, location in (("own", f"{base}/a{char}b"), ("neighbour", f"{base}/aXb"),
                           ("longer", f"{base}/a{char}b0")):
        r = client.post(f"{wh['prefix']}/namespaces/{namespace}/tables",
                        json={"name": name, "schema": SCHEMA, "location": location}, headers=VENDED)
        assert r.status_code == 200, r.text
        assert r.json()["metadata"]["location"] == location
        made.append(r.json())
    return made[0], made[1], made[2]


def _as_table(minio, loaded: dict):
    [credential] = loaded["storage-credentials"]
    config = credential["config"]
    return minio.client(key=config["s3.access-key-id"], secret=config["s3.secret-access-key"],
                        token=config["s3.session-token"])


def _denied(act) -> None:
    with pytest.raises(Exception) as denied:
        act()
    assert "AccessDenied" in str(denied.value)


def _signed(minio, signer: str, method: str, bucket: str, key: str) -> httpx.Response:
    uri = f"{minio.endpoint}/{bucket}/{quote(key)}"
    headers = {"Content-Type": ["application/octet-stream"]} if method == "PUT" else {}
    return httpx.post(signer, json={"region": "us-east-1", "method": method, "uri": uri, "headers": headers},
                      timeout=30)


def _send(method: str, signed: httpx.Response, body: bytes = b"") -> httpx.Response:
    answer = signed.json()
    headers = {k: v[0] for k, v in answer["headers"].items()}
    if method == "PUT":
        headers["Content-Type"] = "application/octet-stream"
    return httpx.request(method, answer["uri"], headers=headers, content=body if method == "PUT" else None)


def _signer_of(client, wh, namespace: str) -> str:
    config = client.get(f"{wh['prefix']}/namespaces/{namespace}/tables/own", headers=SIGNING).json()["config"]
    return f"{config['s3.signer.uri']}/{config['s3.signer.endpoint']}"


def _listing(minio, signer: str, bucket: str, prefix: str) -> httpx.Response:
    return httpx.post(signer, json={"region": "us-east-1", "method": "GET", "headers": {}, "uri":
                                    f"{minio.endpoint}/{bucket}?list-type=2&prefix={quote(prefix, safe='')}"},
                      timeout=30)


def _signer_refuses_the_neighbour_and_the_root(minio, signer, wh, own, neighbour) -> None:
    for key in (f"{_key(neighbour['metadata']['location'])}/data/evil.parquet", f"{wh['key-prefix']}/evil",
                f"{_key(neighbour['metadata']['location'])}"):
        r = _signed(minio, signer, "PUT", wh["bucket"], key)
        assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException", (key, r.text)
    own_prefix = _key(own["metadata"]["location"])
    for prefix in (f"{wh['key-prefix']}/", f"{_key(neighbour['metadata']['location'])}/", own_prefix):
        assert _listing(minio, signer, wh["bucket"], prefix).status_code == 403, prefix
    listed = _send("GET", _listing(minio, signer, wh["bucket"], f"{own_prefix}/"))
    assert listed.status_code == 200 and f"{own_prefix}/metadata/".encode() in listed.content


@pytest.mark.parametrize("char", CHARACTERS)
def test_a_tables_credential_and_signer_reach_its_own_prefix_and_nothing_else(client, minio, minio_warehouse,
                                                                              log_length, char):
    wh, namespace = minio_warehouse, f"n{CHARACTERS.index(char)}"
    assert client.post(f"{wh['prefix']}/namespaces", json={"namespace": [namespace]}).status_code == 200
    if char in "*?":
        # MinIO has no escape for these: no policy could confine a credential to such a location
        before = log_length()
        r = client.post(f"{wh['prefix']}/namespaces/{namespace}/tables", headers=VENDED, json={
            "name": "own", "schema": SCHEMA,
            "location": f"s3://{wh['bucket']}/{wh['key-prefix']}/{namespace}/a{char}b"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException", r.text
        assert "IAM wildcard" in r.json()["error"]["message"]
        assert log_length() == before
        return
    own, neighbour, _ = _tables(client, wh, namespace, char)
    bucket, own_prefix = wh["bucket"], _key(own["metadata"]["location"])
    neighbour_prefix = _key(neighbour["metadata"]["location"])
    # the vended credential: its own prefix, read and write
    as_own = _as_table(minio, own)
    as_own.put_object(Bucket=bucket, Key=f"{own_prefix}/data/probe.parquet", Body=b"own " + char.encode())
    assert as_own.get_object(Bucket=bucket, Key=f"{own_prefix}/data/probe.parquet")["Body"].read() == \
        b"own " + char.encode()
    assert as_own.get_object(Bucket=bucket, Key=_key(own["metadata-location"]))["Body"].read()
    # ... and nothing of the neighbour or of the warehouse
    for act in (lambda: as_own.put_object(Bucket=bucket, Key=f"{neighbour_prefix}/data/evil.parquet", Body=b"x"),
                lambda: as_own.get_object(Bucket=bucket, Key=_key(neighbour["metadata-location"])),
                lambda: as_own.list_objects_v2(Bucket=bucket, Prefix=f"{neighbour_prefix}/"),
                lambda: as_own.put_object(Bucket=bucket, Key=f"{wh['key-prefix']}/evil", Body=b"x"),
                lambda: as_own.list_objects_v2(Bucket=bucket, Prefix=f"{wh['key-prefix']}/"),
                # the bare prefix would name the objects of the table at .../a<char>b0
                lambda: as_own.list_objects_v2(Bucket=bucket, Prefix=own_prefix)):
        _denied(act)
    listed = as_own.list_objects_v2(Bucket=bucket, Prefix=f"{own_prefix}/")["Contents"]
    assert {o["Key"] for o in listed} >= {f"{own_prefix}/data/probe.parquet", _key(own["metadata-location"])}
    assert not [o for o in listed if not o["Key"].startswith(own_prefix + "/")]
    # the remote signer: the same
    signer = _signer_of(client, wh, namespace)
    written = _signed(minio, signer, "PUT", bucket, f"{own_prefix}/data/signed.parquet")
    assert written.status_code == 200, written.text
    assert _send("PUT", written, b"signed").status_code == 200
    read = _send("GET", _signed(minio, signer, "GET", bucket, f"{own_prefix}/data/signed.parquet"))
    assert read.status_code == 200 and read.content == b"signed"
    _signer_refuses_the_neighbour_and_the_root(minio, signer, wh, own, neighbour)
    assert minio.keys(bucket, f"{neighbour_prefix}/data/") == []
    assert [k for k in minio.keys(bucket, f"{wh['key-prefix']}/") if k.endswith("evil")] == []


@pytest.mark.parametrize("char", ["*", "?"])
def test_a_wildcard_location_never_reaches_another_table_even_under_a_wrong_flavor(client, minio,
                                                                                   aws_flavored_warehouse, char):
    """Under flavor aws the location is accepted and its policy escapes the wildcard; MinIO does not know the
    escape, so the credential reaches less than its table, never more. The signer compares keys literally."""
    wh, namespace = aws_flavored_warehouse, f"w{'*?'.index(char)}"
    assert client.post(f"{wh['prefix']}/namespaces", json={"namespace": [namespace]}).status_code == 200
    own, neighbour, _ = _tables(client, wh, namespace, char)
    bucket, own_prefix = wh["bucket"], _key(own["metadata"]["location"])
    neighbour_prefix = _key(neighbour["metadata"]["location"])
    as_own = _as_table(minio, own)
    for act in (lambda: as_own.put_object(Bucket=bucket, Key=f"{neighbour_prefix}/data/evil.parquet", Body=b"x"),
                lambda: as_own.get_object(Bucket=bucket, Key=_key(neighbour["metadata-location"])),
                lambda: as_own.put_object(Bucket=bucket, Key=f"{wh['key-prefix']}/evil", Body=b"x"),
                lambda: as_own.list_objects_v2(Bucket=bucket, Prefix=f"{wh['key-prefix']}/")):
        _denied(act)
    signer = _signer_of(client, wh, namespace)
    written = _signed(minio, signer, "PUT", bucket, f"{own_prefix}/data/signed.parquet")
    assert written.status_code == 200, written.text
    assert _send("PUT", written, b"signed").status_code == 200
    assert minio.keys(bucket, f"{own_prefix}/data/") == [f"{own_prefix}/data/signed.parquet"]
    _signer_refuses_the_neighbour_and_the_root(minio, signer, wh, own, neighbour)
    assert minio.keys(bucket, f"{neighbour_prefix}/data/") == []


DOT_SEGMENTS = ["%2e%2e/%2e%2e/x", "ns/../x", "ns/%2E%2e/x", "ns/.%2e/x", "ns/%2e/x", "ns/./x", "ns/a%2F..%2Fx",
                "ns/..\\x"]


@pytest.mark.parametrize("storage", ["file", "s3"])
def test_locations_with_dot_segments_are_refused_spelt_or_percent_encoded(client, warehouse, minio_warehouse,
                                                                          log_length, storage):
    if storage == "file":
        prefix, base = warehouse["prefix"], warehouse["location"]
    else:
        prefix, base = minio_warehouse["prefix"], f"s3://{minio_warehouse['bucket']}/{minio_warehouse['key-prefix']}"
    ns = f"dots-{uuid.uuid4().hex[:6]}"
    assert client.post(f"{prefix}/namespaces", json={"namespace": [ns]}).status_code == 200
    t = client.post(f"{prefix}/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA})
    assert t.status_code == 200, t.text
    before = log_length()
    for rest in DOT_SEGMENTS:
        location = f"{base}/{rest}"
        attempts = [
            client.post(f"{prefix}/namespaces/{ns}/tables", json={"name": "u", "schema": SCHEMA, "location": location}),
            client.post(f"{prefix}/namespaces/{ns}/tables",
                        json={"name": "s", "schema": SCHEMA, "location": location, "stage-create": True}),
            client.post(f"{prefix}/namespaces/{ns}/views", json={
                "name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}, "location": location}),
            client.post(f"{prefix}/namespaces/{ns}/tables/t", json={"requirements": [], "updates": [
                {"action": "set-location", "location": location}]}),
            client.post(f"{prefix}/namespaces",
                        json={"namespace": [ns, "child"], "properties": {"location": location}}),
            client.post(f"{prefix}/namespaces/{ns}/properties", json={"updates": {"location": location}}),
        ]
        for r in attempts:
            assert r.status_code == 400, (location, r.request.url, r.text)
            assert r.json()["error"]["type"] == "BadRequestException"
            assert "'.' or '..' segments" in r.json()["error"]["message"], r.text
    assert log_length() == before
    if storage == "file":
        written = {p.name for p in warehouse["path"].rglob("*")}
        assert not [name for name in written if "%2" in name or name in (".", "..")], written
        assert not (warehouse["path"].parent / "x").exists()


@pytest.mark.parametrize("flavor, key_prefix", [("minio", "wh*"), ("minio", "a?b/wh"), ("s3-compat", "wh$"),
                                                ("aws", "wh${aws:username}")])
def test_a_warehouse_key_prefix_no_policy_can_name_exactly_is_refused(client, minio, bucket, log_length, flavor,
                                                                      key_prefix):
    """Every table lies below the key prefix, so it is held to the rule of a location, with STS on or off."""
    before = log_length()
    for sts in (True, False):
        r = client.post("/management/v1/warehouse", json={
            "warehouse-name": f"prefix-{uuid.uuid4().hex[:8]}", "storage-credential": minio.credential(),
            "storage-profile": minio.profile(bucket, key_prefix, **{"sts-enabled": sts, "flavor": flavor})})
        assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException", r.text
        assert "IAM" in r.json()["error"]["message"]
    assert log_length() == before


def test_a_warehouse_location_with_a_percent_encoded_dot_segment_is_refused(client, minio, bucket, log_length,
                                                                            tmp_path):
    before = log_length()
    for profile in ({"type": "file", "location": f"file://{tmp_path}/wh/%2e%2e/%2E%2E/elsewhere"},
                    minio.profile(bucket, "wh/%2e%2e/elsewhere")):
        r = client.post("/management/v1/warehouse", json={
            "warehouse-name": f"dots-{uuid.uuid4().hex[:8]}", "storage-profile": profile,
            **({"storage-credential": minio.credential()} if profile["type"] == "s3" else {})})
        assert r.status_code == 400 and "'.' or '..' segments" in r.json()["error"]["message"], r.text
    assert log_length() == before
    assert not (tmp_path / "wh").exists()
