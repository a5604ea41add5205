"""S3 warehouses on a real MinIO: creation in Lakekeeper's JSON (seed 003's call), validation that proves access
before anything is recorded, table metadata on S3, vended credentials that MinIO itself confines to one table,
the remote signer, credential rotation and purge."""

import time
import uuid

import httpx
import pytest
from support import SCHEMA, wait_until


def _create(client, minio, name, profile=None, credential=None, **extra):
    return client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "project-id": "00000000-0000-0000-0000-000000000000",
        "storage-profile": profile or minio.profile("lakeledger-tests", name),
        "storage-credential": credential if credential is not None else minio.credential(), **extra})


def test_seed_003_warehouse_call_works_verbatim(client, minio, bucket):
    name = f"my-warehouse-{uuid.uuid4().hex[:6]}"
    # seed 003's body, with only the bucket and endpoint changed
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "project-id": "00000000-0000-0000-0000-000000000000",
        "storage-profile": {"type": "s3", "bucket": bucket, "key-prefix": "iceberg-" + name,
                            "endpoint": minio.endpoint, "region": "us-east-1", "path-style-access": True},
        "storage-credential": {"type": "s3", "credential-type": "access-key", "aws-access-key-id": minio.user,
                               "aws-secret-access-key": minio.password}})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["storage-profile"]["bucket"] == bucket
    assert body["storage-credential-fingerprint"].startswith("hmac-sha256:")
    assert minio.password not in r.text
    listed = client.get("/management/v1/warehouse").text
    assert minio.password not in listed and minio.user not in listed
    # the probe object is gone again
    assert not [k for k in minio.keys(bucket, "iceberg-" + name) if "probe" in k]


def test_seed_004_vended_credentials_call_works_verbatim(client, minio, bucket):
    name = f"lakekeeper-vc-warehouse-{uuid.uuid4().hex[:6]}"
    r = client.post(
        "/management/v1/warehouse",
        json={
            "warehouse-name": name,
            "storage-profile": {
                "type": "s3",
                "bucket": bucket,
                "key-prefix": "warehouse-vc-" + name,
                "region": "us-east-1",
                "endpoint": minio.endpoint,
                "sts-enabled": True,
                "flavor": "aws",
                "assume-role-arn": "arn:aws:iam::YOUR_ACCOUNT_ID:role/lakekeeper-sts-role",
            },
            "storage-credential": {
                "type": "s3",
                "credential-type": "access-key",
                "aws-access-key-id": minio.user,
                "aws-secret-access-key": minio.password,
            },
        },
        headers={"x-project-id": "00000000-0000-0000-0000-000000000000"},
    )
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("case, change, says", [
    ("wrong secret", {"credential": {"aws-secret-access-key": "not-the-secret"}}, "secret access key does not match"),
    ("unknown key id", {"credential": {"aws-access-key-id": "nobody"}}, "access key id is not known"),
    ("missing bucket", {"profile": {"bucket": "no-such-bucket-here"}}, "bucket no-such-bucket-here does not exist"),
    ("unreachable endpoint", {"profile": {"endpoint": "http://127.0.0.1:9"}}, "cannot be reached"),
])
def test_storage_that_does_not_work_is_a_400_that_says_why_and_records_nothing(client, minio, bucket, log_length,
                                                                               case, change, says):
    name = f"bad-{uuid.uuid4().hex[:8]}"
    profile = {**minio.profile(bucket, name), **change.get("profile", {})}
    credential = {**minio.credential(), **change.get("credential", {})}
    before = log_length()
    r = _create(client, minio, name, profile, credential)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == "BadRequestException"
    assert says in r.json()["error"]["message"], r.text
    assert "not-the-secret" not in r.text and minio.password not in r.text
    assert log_length() == before


@pytest.mark.parametrize("profile_change, credential, says", [
    ({"colour": "blue"}, None, "colour"),
    ({"bucket": "Bad_Bucket"}, None, "not a valid S3 bucket name"),
    ({"bucket": "ab"}, None, "not a valid S3 bucket name"),
    ({"sts-token-validity-seconds": -5}, None, "sts-token-validity-seconds"),
    ({"endpoint": "ftp://x"}, None, "not an http"),
    ({}, {"type": "s3", "credential-type": "access-key", "aws-access-key-id": "k"}, "aws-secret-access-key"),
    ({}, {"type": "s3", "credential-type": "web-identity"}, "credential-type"),
    ({}, {}, "storage-credential"),
])
def test_bad_profiles_and_credentials_are_400(client, minio, bucket, log_length, profile_change, credential, says):
    name = f"bad-{uuid.uuid4().hex[:8]}"
    before = log_length()
    body = {"warehouse-name": name, "storage-profile": {**minio.profile(bucket, name), **profile_change}}
    if credential != {}:
        body["storage-credential"] = credential if credential is not None else minio.credential()
    r = client.post("/management/v1/warehouse", json=body)
    assert r.status_code == 400, r.text
    assert says in r.json()["error"]["message"]
    assert log_length() == before


def test_a_file_warehouse_takes_no_credential(client, minio, tmp_path):
    r = client.post("/management/v1/warehouse", json={
        "warehouse-name": f"f-{uuid.uuid4().hex[:8]}", "storage-profile": {"type": "file", "location": f"file://{tmp_path}"},
        "storage-credential": minio.credential()})
    assert r.status_code == 400 and "takes no storage-credential" in r.text


def _table(client, warehouse, ns="ns", name="t", headers=None, **extra):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [ns]})
    r = client.post(f"{warehouse['prefix']}/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA, **extra},
                    headers=headers or {})
    assert r.status_code == 200, r.text
    return r.json()


def test_table_metadata_lives_under_the_warehouse_prefix(client, minio, s3_warehouse):
    created = _table(client, s3_warehouse)
    location = created["metadata"]["location"]
    assert location.startswith(f"s3://{s3_warehouse['bucket']}/{s3_warehouse['key-prefix']}/")
    key = created["metadata-location"].split("/", 3)[3]
    assert key in minio.keys(s3_warehouse["bucket"], s3_warehouse["key-prefix"])
    loaded = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/t")
    assert loaded.status_code == 200 and loaded.json()["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]


def test_explicit_locations_outside_the_warehouse_or_with_s3a_are_refused(client, s3_warehouse, log_length):
    client.post(f"{s3_warehouse['prefix']}/namespaces", json={"namespace": ["ns"]})
    before = log_length()
    for location, says in [
        (f"s3://{s3_warehouse['bucket']}/elsewhere/t", "not inside the warehouse"),
        (f"s3a://{s3_warehouse['bucket']}/{s3_warehouse['key-prefix']}/x", "allow-alternative-protocols"),
    ]:
        r = client.post(f"{s3_warehouse['prefix']}/namespaces/ns/tables",
                        json={"name": "t", "schema": SCHEMA, "location": location})
        assert r.status_code == 400 and says in r.text, r.text
    assert log_length() == before


def test_s3a_locations_when_the_warehouse_allows_them(client, minio, bucket):
    name = f"alt-{uuid.uuid4().hex[:8]}"
    r = _create(client, minio, name, minio.profile(bucket, name, **{"allow-alternative-protocols": True}))
    assert r.status_code == 201, r.text
    prefix = f"/catalog/v1/{r.json()['warehouse-id']}"
    client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]})
    spelt = f"s3a://{bucket}/{name}/ns/t"
    created = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA, "location": spelt})
    assert created.status_code == 200, created.text
    assert created.json()["metadata"]["location"] == spelt  # kept as spelt
    assert created.json()["metadata-location"].startswith(spelt + "/metadata/")
    assert [k for k in minio.keys(bucket, f"{name}/ns/t/metadata/") if k.endswith(".metadata.json")]
    # the same place spelt s3:// overlaps it
    clash = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "u", "schema": SCHEMA,
                                                                "location": f"s3://{bucket}/{name}/ns/t/u"})
    assert clash.status_code == 400 and "overlaps" in clash.text


def test_register_reads_the_metadata_file_from_the_bucket(client, minio, s3_warehouse):
    created = _table(client, s3_warehouse)
    assert client.delete(f"{s3_warehouse['prefix']}/namespaces/ns/tables/t?purgeRequested=false").status_code == 204
    back = client.post(f"{s3_warehouse['prefix']}/namespaces/ns/register",
                       json={"name": "back", "metadata-location": created["metadata-location"]},
                       headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert back.status_code == 200, back.text
    assert back.json()["metadata"]["table-uuid"] == created["metadata"]["table-uuid"]
    assert back.json()["storage-credentials"][0]["prefix"] == created["metadata"]["location"]
    missing = client.post(f"{s3_warehouse['prefix']}/namespaces/ns/register", json={
        "name": "ghost", "metadata-location": f"s3://{s3_warehouse['bucket']}/{s3_warehouse['key-prefix']}/nope.json"})
    assert missing.status_code == 404, missing.text


def test_concurrent_creates_of_one_warehouse_leave_one_warehouse_and_one_secret(client, minio, bucket, db):
    from concurrent.futures import ThreadPoolExecutor

    name = f"race-{uuid.uuid4().hex[:8]}"
    secrets_before = db.execute("SELECT count(*) FROM ll_secrets").fetchone()[0]
    with ThreadPoolExecutor(6) as pool:
        statuses = sorted(pool.map(lambda i: _create(client, minio, name, minio.profile(bucket, f"{name}-{i}"))
                                   .status_code, range(6)))
    assert statuses == [201, 409, 409, 409, 409, 409]
    # every loser's credential was removed from the secret store again
    assert db.execute("SELECT count(*) FROM ll_secrets").fetchone()[0] == secrets_before + 1


def test_concurrent_vended_loads_share_one_sts_credential(client, s3_warehouse):
    from concurrent.futures import ThreadPoolExecutor

    _table(client, s3_warehouse)
    url = f"{s3_warehouse['prefix']}/namespaces/ns/tables/t"
    client.get(url)  # the first load fetches and caches the table's credentials
    with ThreadPoolExecutor(8) as pool:
        tokens = set(pool.map(lambda _: client.get(url).json()["config"]["s3.session-token"], range(32)))
    assert len(tokens) == 1


def _vended(response_json):
    config = response_json["config"]
    [credential] = response_json["storage-credentials"]
    assert credential["config"]["s3.session-token"] == config["s3.session-token"]
    return credential


def test_vended_credentials_reach_only_their_own_table(client, minio, s3_warehouse):
    vended = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    a = _table(client, s3_warehouse, name="a", headers=vended)
    b = _table(client, s3_warehouse, name="b", headers=vended)
    cred_a = _vended(a)
    assert cred_a["prefix"] == a["metadata"]["location"]
    config = cred_a["config"]
    assert config["s3.endpoint"] == minio.endpoint and config["s3.path-style-access"] == "true"
    assert config["client.region"] == "us-east-1"
    assert int(config["s3.session-token-expires-at-ms"]) > time.time() * 1000 + 60_000
    as_a = minio.client(key=config["s3.access-key-id"], secret=config["s3.secret-access-key"],
                        token=config["s3.session-token"])
    bucket = s3_warehouse["bucket"]
    key_a = a["metadata-location"].split("/", 3)[3]
    key_b = b["metadata-location"].split("/", 3)[3]
    assert as_a.get_object(Bucket=bucket, Key=key_a)["Body"].read()
    as_a.put_object(Bucket=bucket, Key=a["metadata"]["location"].split("/", 3)[3] + "/data/x.parquet", Body=b"x")
    prefix_b = b["metadata"]["location"].split("/", 3)[3]
    for act in (lambda: as_a.get_object(Bucket=bucket, Key=key_b),
                lambda: as_a.list_objects_v2(Bucket=bucket, Prefix=prefix_b + "/"),
                lambda: as_a.put_object(Bucket=bucket, Key=prefix_b + "/data/evil.parquet", Body=b"x"),
                lambda: as_a.list_objects_v2(Bucket=bucket, Prefix=s3_warehouse["key-prefix"] + "/")):
        with pytest.raises(Exception) as denied:
            act()
        assert "AccessDenied" in str(denied.value)
    # loadTable answers the cached credentials; loadCredentials, which engines call to refresh theirs, new ones
    loaded = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/a", headers=vended).json()
    assert _vended(loaded)["config"]["s3.session-token"] == config["s3.session-token"]
    creds = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/a/credentials").json()
    assert creds["storage-credentials"][0]["config"]["s3.session-token"] != config["s3.session-token"]


def test_an_etag_names_the_credentials_it_was_given_with(client, s3_warehouse):
    vended = {"X-Iceberg-Access-Delegation": "vended-credentials"}
    _table(client, s3_warehouse)
    first = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/t", headers=vended)
    tag = first.headers["etag"]
    again = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/t", headers={**vended, "If-None-Match": tag})
    assert again.status_code == 304
    signing = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/t",
                         headers={"X-Iceberg-Access-Delegation": "remote-signing", "If-None-Match": tag})
    assert signing.status_code == 200 and signing.headers["etag"] != tag


def test_a_signing_config_picks_the_file_io_pyiceberg_can_sign_with(client, s3_warehouse):
    """pyiceberg's default FileIO (PyArrow) cannot sign remotely: every answer that hands out a signer names the one
    that can (FsspecFileIO), createTable's, loadTable's route and its cached fast path alike; vended credentials
    leave the choice to the client."""
    signing = {"X-Iceberg-Access-Delegation": "remote-signing"}
    created = _table(client, s3_warehouse, headers=signing)
    table = f"{s3_warehouse['prefix']}/namespaces/ns/tables/t"
    fast = client.get(table, headers=signing)
    routed = client.get(f"{table}?snapshots=all", headers=signing)
    assert fast.status_code == routed.status_code == 200
    configs = [created["config"], fast.json()["config"], routed.json()["config"]]
    for config in configs:
        assert config["py-io-impl"] == "pyiceberg.io.fsspec.FsspecFileIO"
        assert config["s3.signer"] == "S3V4RestSigner"
        assert config["s3.remote-signing-enabled"] == "true"
    def unsealed(config: dict[str, str]) -> dict[str, str]:  # the endpoint's sealed scope differs on each answer
        return {k: v for k, v in config.items() if k != "s3.signer.endpoint"}
    assert unsealed(fast.json()["config"]) == unsealed(routed.json()["config"])
    vended = client.get(table, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}).json()
    assert "py-io-impl" not in vended["config"] and "s3.signer" not in vended["config"]


def test_unknown_delegation_is_ignored_and_client_managed_is_given_no_credentials(client, s3_warehouse):
    """The header is a hint (the Iceberg REST spec): as Lakekeeper, a value the catalog does not know is ignored, and
    client-managed alone asks for neither credentials nor a signer, only the storage's client settings. The load's
    fast path (no query) and its route (snapshots=all) answer alike (tests/api/test_one_answer.py has the rest)."""
    created = _table(client, s3_warehouse, headers={"X-Iceberg-Access-Delegation": "magic"})
    assert created["storage-credentials"]  # as if nothing had been asked: this warehouse vends
    table = f"{s3_warehouse['prefix']}/namespaces/ns/tables/t"
    plain = client.get(table)
    for value in ("magic", "magic, vended-credentials", "client-managed", "Client-Managed,carrier-pigeon"):
        headers = {"X-Iceberg-Access-Delegation": value}
        fast, routed = client.get(table, headers=headers), client.get(f"{table}?snapshots=all", headers=headers)
        assert fast.status_code == routed.status_code == 200, value
        assert (fast.content, fast.headers["etag"]) == (routed.content, routed.headers["etag"]), value
        if "client-managed" not in value.lower():
            assert (fast.content, fast.headers["etag"]) == (plain.content, plain.headers["etag"]), value
            continue
        answer = fast.json()
        assert "storage-credentials" not in answer and "remote-signing-config" not in answer
        assert answer["config"]["s3.endpoint"] and "s3.access-key-id" not in answer["config"]
        assert not [k for k in answer["config"] if "signer" in k or "signing" in k]
        assert fast.headers["etag"] != plain.headers["etag"]  # another answer, another tag


def _signer(loaded):
    config = loaded["config"]
    assert config["s3.remote-signing-enabled"] == "true"
    assert "s3.access-key-id" not in config and "storage-credentials" not in loaded
    return f"{config['s3.signer.uri']}/{config['s3.signer.endpoint']}"


def _sign(url, method, uri, headers=None, **extra):
    return httpx.post(url, json={"region": "us-east-1", "method": method, "uri": uri, "headers": headers or {},
                                 **extra}, timeout=30)


def test_remote_signing_signs_inside_the_table_and_refuses_everything_else(client, minio, s3_warehouse, log_length):
    signing = {"X-Iceberg-Access-Delegation": "remote-signing"}
    a = _table(client, s3_warehouse, name="a", headers=signing)
    b = _table(client, s3_warehouse, name="b")
    url = _signer(a)
    bucket = s3_warehouse["bucket"]
    own = f"{minio.endpoint}/{bucket}/{a['metadata-location'].split('/', 3)[3]}"
    signed = _sign(url, "GET", own, {"Host": [f"127.0.0.1:{minio.port}"]})
    assert signed.status_code == 200, signed.text
    headers = {k: v[0] for k, v in signed.json()["headers"].items()}
    got = httpx.get(signed.json()["uri"], headers=headers)
    assert got.status_code == 200 and b'"table-uuid"' in got.content
    # a PUT inside the table, signed, is accepted by MinIO
    put_uri = f"{minio.endpoint}/{bucket}/{a['metadata']['location'].split('/', 3)[3]}/data/f.parquet"
    signed_put = _sign(url, "PUT", put_uri, {"Content-Type": ["application/octet-stream"]}).json()
    assert httpx.put(put_uri, content=b"data", headers={"Content-Type": "application/octet-stream",
                     **{k: v[0] for k, v in signed_put["headers"].items()}}).status_code == 200
    before = log_length()
    refused = [
        f"{minio.endpoint}/{bucket}/{b['metadata-location'].split('/', 3)[3]}",  # another table
        f"{minio.endpoint}/other-bucket/{a['metadata-location'].split('/', 3)[3]}",  # a foreign bucket
        f"{minio.endpoint}/{bucket}/{s3_warehouse['key-prefix']}/x",  # the warehouse, outside any table
        f"{minio.endpoint}/{bucket}?list-type=2&prefix={s3_warehouse['key-prefix']}/",  # listing the warehouse
        f"{minio.endpoint}/{bucket}",  # the bucket itself
    ]
    for uri in refused:
        r = _sign(url, "GET", uri)
        assert r.status_code == 403, (uri, r.text)
        assert r.json()["error"]["type"] == "ForbiddenException"
    listing = _sign(url, "GET", f"{minio.endpoint}/{bucket}?list-type=2&prefix="
                                f"{a['metadata']['location'].split('/', 3)[3]}/metadata/")
    assert listing.status_code == 200
    delete_other = _sign(url, "POST", f"{minio.endpoint}/{bucket}?delete",
                         body=f"<Delete><Object><Key>{a['metadata']['location'].split('/', 3)[3]}/x</Key></Object>"
                              f"<Object><Key>{b['metadata-location'].split('/', 3)[3]}</Key></Object></Delete>")
    assert delete_other.status_code == 403
    forged = url.replace("/catalog/signer/", "/catalog/signer/x")
    assert _sign(forged, "GET", own).status_code == 403
    for bad in [{"method": "GET"}, {"method": "BREW", "uri": own}, {"method": "GET", "uri": "not a url"},
                {"method": "POST", "uri": f"{minio.endpoint}/{bucket}?delete", "body": "<not-xml"},
                {"method": "GET", "uri": own, "headers": "x"}, {"method": "GET", "uri": own, "extra": 1}]:
        r = httpx.post(url, json={"region": "us-east-1", **bad})
        assert 400 <= r.status_code < 500 and r.status_code != 403 or bad.get("uri") == "not a url", (bad, r.text)
        assert "error" in r.json()
    assert log_length() == before


def test_a_dropped_table_gets_reads_and_deletes_signed_until_its_location_is_taken(client, minio, s3_warehouse):
    """An engine purging a table itself (Spark's DROP TABLE ... PURGE) drops it first, then reads its manifests and
    deletes its files through the same signer URL: for an hour after the drop, reads and deletes are signed, writes
    never, and nothing once another table owns the location."""
    a = _table(client, s3_warehouse, name="a", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
    url, location = _signer(a), a["metadata"]["location"]
    bucket = s3_warehouse["bucket"]
    uri = f"{minio.endpoint}/{bucket}/{a['metadata-location'].split('/', 3)[3]}"
    data = f"{minio.endpoint}/{bucket}/{location.split('/', 3)[3]}/data/new.parquet"
    assert _sign(url, "PUT", data).status_code == 200
    r = client.delete(f"{s3_warehouse['prefix']}/namespaces/ns/tables/a", params={"purgeRequested": "false"})
    assert r.status_code == 204
    assert _sign(url, "GET", uri).status_code == 200
    assert _sign(url, "HEAD", uri).status_code == 200
    assert _sign(url, "DELETE", uri).status_code == 200
    refused = _sign(url, "PUT", data)
    assert refused.status_code == 403 and "no longer exists" in refused.json()["error"]["message"]
    assert _sign(url, "POST", f"{data}?uploads").status_code == 403

    _table(client, s3_warehouse, name="b", location=location)  # the location is free again: a new table takes it
    taken = _sign(url, "GET", uri)
    assert taken.status_code == 403 and "owned by another table" in taken.json()["error"]["message"]


def test_a_purged_table_gets_nothing_signed(client, minio, s3_warehouse):
    a = _table(client, s3_warehouse, name="a", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
    url = _signer(a)
    uri = f"{minio.endpoint}/{s3_warehouse['bucket']}/{a['metadata-location'].split('/', 3)[3]}"
    assert _sign(url, "GET", uri).status_code == 200
    r = client.delete(f"{s3_warehouse['prefix']}/namespaces/ns/tables/a", params={"purgeRequested": "true"})
    assert r.status_code == 204
    wait_until(lambda: _sign(url, "GET", uri).status_code == 403, 30, "the purge, after which nothing is signed")


def test_rotation_and_storage_change_are_recorded_without_the_secret(client, minio, s3_warehouse):
    wid = s3_warehouse["id"]
    before = client.get(f"/management/v1/warehouse/{wid}").json()["storage-credential-fingerprint"]
    bad = client.post(f"/management/v1/warehouse/{wid}/storage-credential", json={
        "new-storage-credential": {**minio.credential(), "aws-secret-access-key": "wrong-secret-1234"}})
    assert bad.status_code == 400
    assert client.get(f"/management/v1/warehouse/{wid}").json()["storage-credential-fingerprint"] == before
    rotated = client.post(f"/management/v1/warehouse/{wid}/storage-credential",
                          json={"new-storage-credential": minio.credential()})
    assert rotated.status_code == 200, rotated.text
    # the same credential again: a new secret in the store, with the same fingerprint (it names the content)
    assert rotated.json()["storage-credential-fingerprint"] == before
    moved = client.post(
        f"/management/v1/warehouse/{wid}/storage",
        json={
            "storage-profile": minio.profile("lakeledger-tests", "somewhere-else"),
            "storage-credential": minio.credential(),
        },
    )
    assert moved.status_code == 400 and "must keep the warehouse's location" in moved.text
    changed = client.post(f"/management/v1/warehouse/{wid}/storage", json={
        "storage-profile": minio.profile("lakeledger-tests", s3_warehouse["key-prefix"], **{"sts-enabled": False}),
        "storage-credential": minio.credential()})
    assert changed.status_code == 200, changed.text
    assert changed.json()["storage-profile"].get("sts-enabled") is False
    history = client.get(f"/management/v1/warehouse/{wid}/history").text
    assert "rotated the storage credential" in history and "changed the storage" in history
    assert minio.password not in history and "wrong-secret-1234" not in history
    # remote signing now (STS off), and tables still work
    created = _table(client, s3_warehouse, name="after")
    assert created["config"]["s3.remote-signing-enabled"] == "true"


def test_purge_deletes_the_tables_objects_and_nothing_else(client, minio, s3_warehouse):
    a = _table(client, s3_warehouse, name="a")
    b = _table(client, s3_warehouse, name="b")
    bucket = s3_warehouse["bucket"]
    prefix_a = a["metadata"]["location"].split("/", 3)[3]
    prefix_b = b["metadata"]["location"].split("/", 3)[3]
    minio.client().put_object(Bucket=bucket, Key=f"{prefix_a}/data/1.parquet", Body=b"1")
    minio.client().put_object(Bucket=bucket, Key=f"{prefix_a}-sibling/keep.parquet", Body=b"1")
    assert client.delete(f"{s3_warehouse['prefix']}/namespaces/ns/tables/a?purgeRequested=true").status_code == 204
    wait_until(lambda: not minio.keys(bucket, prefix_a + "/"), 30, "the purge of table a")
    assert minio.keys(bucket, prefix_b + "/")
    assert minio.keys(bucket, f"{prefix_a}-sibling/")


# --- bad input (issue 12, point 9): storage-credential and storage endpoints, the signer ---

@pytest.mark.parametrize("credential_change, says", [
    ({"colour": "blue"}, "colour"),
    ({"aws-secret-access-key": "has a space"}, "printable ASCII"),
    ({"aws-secret-access-key": 12345}, "aws-secret-access-key"),
    ({"type": "gcs"}, "gcs"),
])
def test_bad_credentials_to_rotate_are_400_and_never_echo_the_secret(client, s3_warehouse, minio, log_length,
                                                                     credential_change, says):
    wid = s3_warehouse["id"]
    before = log_length()
    fingerprint = client.get(f"/management/v1/warehouse/{wid}").json()["storage-credential-fingerprint"]
    r = client.post(f"/management/v1/warehouse/{wid}/storage-credential",
                    json={"new-storage-credential": {**minio.credential(), **credential_change}})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["type"] == "BadRequestException" and says in r.json()["error"]["message"]
    assert "has a space" not in r.text and minio.password not in r.text
    for body in ({}, {"new-storage-credential": None}, {"new-storage-credential": "x"}):
        r = client.post(f"/management/v1/warehouse/{wid}/storage-credential", json=body)
        assert r.status_code == 400 and "storage-credential" in r.json()["error"]["message"], (body, r.text)
    assert client.get(f"/management/v1/warehouse/{wid}").json()["storage-credential-fingerprint"] == fingerprint
    assert log_length() == before


def test_rotating_a_credential_of_a_missing_or_file_warehouse_is_refused(client, warehouse, minio, log_length):
    before = log_length()
    body = {"new-storage-credential": minio.credential()}
    missing = client.post(f"/management/v1/warehouse/{uuid.uuid4()}/storage-credential", json=body)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchWarehouseException"
    files = client.post(f"/management/v1/warehouse/{warehouse['id']}/storage-credential", json=body)
    assert files.status_code == 400 and "takes no storage-credential" in files.json()["error"]["message"]
    assert log_length() == before


def test_rotating_to_no_credential_on_a_file_warehouse_is_refused_by_the_warehouse(client, warehouse, log_length):
    """A rotation without a credential passes the request's check for a file profile (it takes none); the warehouse
    itself refuses it (lakeledger/domain/warehouse.py), before any secret is kept or event appended."""
    before = log_length()
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/storage-credential", json={})
    assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException"
    assert r.json()["error"]["message"].endswith("has file storage, which takes no credential")
    assert log_length() == before


@pytest.mark.parametrize("profile_change, says", [
    ({"colour": "blue"}, "colour"),
    ({"sts-token-validity-seconds": -1}, "sts-token-validity-seconds"),
    ({"sts-token-validity-seconds": 10**9}, "sts-token-validity-seconds"),
    ({"bucket": "Bad_Bucket"}, "not a valid S3 bucket name"),
    ({"key-prefix": "a/../b"}, "key-prefix"),
    ({"flavor": "gcs"}, "flavor"),
    ({"remote-signing-url-style": "sideways"}, "remote-signing-url-style"),
    ({"region": "us east 1"}, "not a region name"),
])
def test_bad_profiles_on_the_storage_endpoint_are_400_and_change_nothing(client, s3_warehouse, minio, log_length,
                                                                        profile_change, says):
    wid = s3_warehouse["id"]
    before = log_length()
    profile = {**minio.profile(s3_warehouse["bucket"], s3_warehouse["key-prefix"], **{"sts-enabled": True}),
               **profile_change}
    r = client.post(f"/management/v1/warehouse/{wid}/storage",
                    json={"storage-profile": profile, "storage-credential": minio.credential()})
    assert r.status_code == 400, r.text
    assert says in r.json()["error"]["message"], r.text
    assert client.get(f"/management/v1/warehouse/{wid}").json()["storage-profile"]["sts-enabled"] is True
    assert log_length() == before


def test_the_signer_refuses_a_copy_whose_source_is_outside_the_table(client, minio, s3_warehouse, log_length):
    """A CopyObject (PUT with x-amz-copy-source) reads its source with the warehouse's credential: signing one
    into table a whose source is table b's object would let a's signer read b."""
    a = _table(client, s3_warehouse, name="a", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
    b = _table(client, s3_warehouse, name="b")
    url, bucket = _signer(a), s3_warehouse["bucket"]
    key_a = a["metadata-location"].split("/", 3)[3]
    key_b = b["metadata-location"].split("/", 3)[3]
    target = f"{minio.endpoint}/{bucket}/{a['metadata']['location'].split('/', 3)[3]}/data/copied.json"
    before = log_length()
    for source in (f"/{bucket}/{key_b}", f"{bucket}/{key_b}", f"/{bucket}/{key_b}?versionId=null",
                   f"/other-bucket/{key_a}", f"/{bucket}/{s3_warehouse['key-prefix']}/x"):
        r = _sign(url, "PUT", target, {"x-amz-copy-source": [source]})
        assert r.status_code == 403, (source, r.text)
        assert r.json()["error"]["type"] == "ForbiddenException"
    assert log_length() == before
    # a copy inside the table is signed, and MinIO performs it
    signed = _sign(url, "PUT", target, {"x-amz-copy-source": [f"/{bucket}/{key_a}"]})
    assert signed.status_code == 200, signed.text
    copied = httpx.put(target, headers={"x-amz-copy-source": f"/{bucket}/{key_a}",
                                        **{k: v[0] for k, v in signed.json()["headers"].items()}})
    assert copied.status_code == 200, copied.text
    assert minio.client().get_object(Bucket=bucket, Key=target.split("/", 4)[4])["Body"].read().startswith(b"{")


def test_the_signer_refuses_a_malformed_copy_source_and_a_virtual_host_foreign_bucket(client, minio, s3_warehouse):
    a = _table(client, s3_warehouse, name="a", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
    url, bucket = _signer(a), s3_warehouse["bucket"]
    target = f"{minio.endpoint}/{bucket}/{a['metadata']['location'].split('/', 3)[3]}/data/copied.json"
    r = _sign(url, "PUT", target, {"x-amz-copy-source": ["/"]})
    assert r.status_code == 400 and "x-amz-copy-source" in r.json()["error"]["message"], r.text
    key = a["metadata-location"].split("/", 3)[3]
    foreign = _sign(url, "GET", f"http://other-bucket.127.0.0.1:{minio.port}/{key}")
    assert foreign.status_code == 403, foreign.text
    for bad in ({"method": "get", "uri": target}, {"method": "GET", "uri": target, "headers": {"a": "b"}},
                {"method": "GET", "uri": f"ftp://127.0.0.1/{bucket}/{key}"}):
        r = httpx.post(url, json={"region": "us-east-1", "headers": {}, **bad})
        assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException", (bad, r.text)
    raw = httpx.post(url, content=b"{not json", headers={"Content-Type": "application/json"})
    assert raw.status_code == 400 and raw.json()["error"]["type"] == "BadRequestException"


def test_the_signer_signs_only_for_the_warehouses_endpoint(client, minio, s3_warehouse, log_length):
    a = _table(client, s3_warehouse, name="a", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
    url, key = _signer(a), a["metadata-location"].split("/", 3)[3]
    before = log_length()
    for host in ("evil.example", f"127.0.0.1:{minio.port + 1}", f"{s3_warehouse['bucket']}.evil.example"):
        r = _sign(url, "GET", f"http://{host}/{s3_warehouse['bucket']}/{key}")
        assert r.status_code == 403 and "storage endpoint" in r.json()["error"]["message"], (host, r.text)
    assert _sign(url, "GET", f"{minio.endpoint}/{s3_warehouse['bucket']}/{key}").status_code == 200
    assert log_length() == before


def test_misspelt_fields_on_the_storage_endpoints_are_400_not_ignored(client, s3_warehouse, minio, log_length):
    wid = s3_warehouse["id"]
    before = log_length()
    profile = minio.profile(s3_warehouse["bucket"], s3_warehouse["key-prefix"], **{"sts-enabled": True})
    for path, body in (("storage-credential", {"new-storage-credential": minio.credential(), "note": 1}),
                       ("storage-credential", {"storage-credential": minio.credential()}),
                       ("storage", {"storage-profile": profile, "storage-credentials": minio.credential()})):
        r = client.post(f"/management/v1/warehouse/{wid}/{path}", json=body)
        assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException", (body, r.text)
        assert minio.password not in r.text
    assert log_length() == before
