"""Iceberg 1.11's table-scoped storage endpoints on a real MinIO: credential refresh (loadTable's config names the
table's loadCredentials endpoint; each call answers new credentials confined to the table) and the per-table
signer (``POST .../tables/{table}/sign``), which shares the sealed signer URL's checks, and signs in the sealed scope
that a load's ``remote-signing-config`` (Iceberg main) hands Iceberg 1.12+ clients to send along."""

import uuid

import httpx
from support import SCHEMA, java_endpoint

VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}
SIGNING = {"X-Iceberg-Access-Delegation": "remote-signing"}


def _table(client, warehouse, name="t", headers=None, ns="ns"):
    client.post(f"{warehouse['prefix']}/namespaces", json={"namespace": [ns]})
    r = client.post(f"{warehouse['prefix']}/namespaces/{ns}/tables", json={"name": name, "schema": SCHEMA},
                    headers=headers or {})
    assert r.status_code == 200, r.text
    return r.json()


def _key(location: str) -> str:
    return location.split("/", 3)[3]


def test_a_vended_load_names_the_tables_credentials_endpoint_and_it_answers_fresh_credentials(
        client, server, minio, s3_warehouse):
    created = _table(client, s3_warehouse, headers=VENDED)
    other = _table(client, s3_warehouse, name="other")
    path = f"{s3_warehouse['prefix']}/namespaces/ns/tables/t"
    endpoint = f"v1/{s3_warehouse['id']}/namespaces/ns/tables/t/credentials"
    fast = client.get(path, headers=VENDED).json()
    routed = client.get(f"{path}?snapshots=all", headers=VENDED).json()
    for answer in (created, fast, routed):
        for config in (answer["config"], answer["storage-credentials"][0]["config"]):
            assert config["client.refresh-credentials-endpoint"] == endpoint
            assert config["client.refresh-credentials-enabled"] == "true"
    held = fast["config"]["s3.session-token"]
    # what Iceberg Java's VendedCredentialsProvider asks: the endpoint resolved against the catalog URI
    tokens = set()
    for plan in (None, "plan-1"):
        r = httpx.get(f"{server.url}/catalog/{endpoint}", params={"planId": plan} if plan else None)
        assert r.status_code == 200, r.text
        [credential] = r.json()["storage-credentials"]
        assert credential["prefix"] == created["metadata"]["location"]
        config = credential["config"]
        tokens.add(config["s3.session-token"])
        as_refreshed = minio.client(key=config["s3.access-key-id"], secret=config["s3.secret-access-key"],
                                    token=config["s3.session-token"])
        bucket = s3_warehouse["bucket"]
        assert as_refreshed.get_object(Bucket=bucket, Key=_key(created["metadata-location"]))["Body"].read()
        try:
            as_refreshed.get_object(Bucket=bucket, Key=_key(other["metadata-location"]))
            raise AssertionError("refreshed credentials reached another table")
        except Exception as denied:  # botocore's ClientError
            assert "AccessDenied" in str(denied)
    assert len(tokens) == 2 and held not in tokens  # new ones each call, never the ones about to expire
    # a remote-signing load holds no credentials, so it names nothing to refresh
    signing = client.get(path, headers=SIGNING).json()["config"]
    assert "client.refresh-credentials-endpoint" not in signing


def test_the_refresh_endpoint_keeps_the_clients_spelling_of_the_path(client, server, s3_warehouse):
    """A namespace of two levels, sent with the unit separator, by the root alias: the endpoint comes back as the
    client spelt the path, relative to the catalog URI it uses."""
    for ns in (["a"], ["a", "b"]):
        assert client.post(f"{s3_warehouse['prefix']}/namespaces", json={"namespace": ns}).status_code == 200
    r = client.post(f"{s3_warehouse['prefix']}/namespaces/a%1Fb/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code == 200, r.text
    loaded = httpx.get(f"{server.url}/v1/{s3_warehouse['id']}/namespaces/a%1Fb/tables/t", headers=VENDED)
    assert loaded.status_code == 200, loaded.text
    endpoint = loaded.json()["config"]["client.refresh-credentials-endpoint"]
    assert endpoint == f"v1/{s3_warehouse['id']}/namespaces/a%1Fb/tables/t/credentials"
    assert httpx.get(f"{server.url}/{endpoint}").status_code == 200


def test_credentials_of_a_missing_table_are_404(client, s3_warehouse):
    _table(client, s3_warehouse)
    r = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/nope/credentials", params={"planId": "p"})
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchTableException"


def _sign(client, warehouse, table, method, uri, **extra):
    return client.post(f"{warehouse['prefix']}/namespaces/ns/tables/{table}/sign",
                       json={"region": "us-east-1", "method": method, "uri": uri, "headers": {}, **extra})


def test_the_per_table_signer_signs_inside_its_table_only(client, minio, s3_warehouse, log_length):
    a = _table(client, s3_warehouse, name="a", headers=SIGNING)
    b = _table(client, s3_warehouse, name="b")
    bucket = s3_warehouse["bucket"]
    own = f"{minio.endpoint}/{bucket}/{_key(a['metadata-location'])}"
    signed = _sign(client, s3_warehouse, "a", "GET", own, provider="s3", properties={"any": "thing"})
    assert signed.status_code == 200, signed.text
    got = httpx.get(signed.json()["uri"], headers={k: v[0] for k, v in signed.json()["headers"].items()})
    assert got.status_code == 200 and b'"table-uuid"' in got.content
    put_uri = f"{minio.endpoint}/{bucket}/{_key(a['metadata']['location'])}/data/f.parquet"
    signed_put = _sign(client, s3_warehouse, "a", "PUT", put_uri).json()
    assert httpx.put(put_uri, content=b"data",
                     headers={k: v[0] for k, v in signed_put["headers"].items()}).status_code == 200
    before = log_length()
    for uri in (f"{minio.endpoint}/{bucket}/{_key(b['metadata-location'])}",  # another table
                f"{minio.endpoint}/{bucket}/{s3_warehouse['key-prefix']}/x"):  # outside any table
        r = _sign(client, s3_warehouse, "a", "GET", uri)
        assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException", r.text
    gcs = _sign(client, s3_warehouse, "a", "GET", own, provider="gcs")
    assert gcs.status_code == 400 and "gcs" in gcs.json()["error"]["message"]
    missing = _sign(client, s3_warehouse, "nope", "GET", own)
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    assert client.post(f"/catalog/v1/{uuid.uuid4()}/namespaces/ns/tables/a/sign",
                       json={"region": "us-east-1", "method": "GET", "uri": own, "headers": {}}).status_code == 404
    assert log_length() == before


def _send(signed: dict, method: str, content: bytes | None = None) -> httpx.Response:
    return httpx.request(method, signed["uri"], content=content,
                         headers={k: v[0] for k, v in signed["headers"].items()})


def test_a_signing_load_serves_the_sealed_signer_to_older_clients_and_the_per_table_one_to_newer(
        client, server, minio, s3_warehouse):
    """Iceberg Java up to 1.11 (and pyiceberg) sign at s3.signer.uri + s3.signer.endpoint; Java 1.12 and main read
    neither and post to ResourcePaths.remoteSign (the table's path + /sign) at the catalog URI, with the load's
    remote-signing-config properties in every request. Both signatures are accepted by MinIO."""
    _table(client, s3_warehouse, name="gen", headers=SIGNING)
    loaded = client.get(f"{s3_warehouse['prefix']}/namespaces/ns/tables/gen", headers=SIGNING).json()
    config, signing = loaded["config"], loaded["remote-signing-config"]
    assert config["s3.remote-signing-enabled"] == "true"
    assert "signer.uri" not in config and "signer.endpoint" not in config  # they would override the per-table one
    assert set(signing) == {"properties"} and list(signing["properties"]) == ["lakeledger.signer-scope"]
    location = loaded["metadata"]["location"]
    data = f"{minio.endpoint}/{s3_warehouse['bucket']}/{_key(location)}/data/gen.parquet"
    sealed = java_endpoint(config["s3.signer.uri"], config["s3.signer.endpoint"])
    per_table = java_endpoint(f"{server.url}/catalog", f"v1/{s3_warehouse['id']}/namespaces/ns/tables/gen/sign")
    for number, (endpoint, properties) in enumerate(((sealed, {}), (per_table, signing["properties"]),
                                                     (per_table, {}))):
        content = f"written through signer {number}".encode()
        request = {"region": "us-east-1", "method": "PUT", "uri": data, "headers": {}, "properties": properties}
        put = client.post(endpoint, json=request)
        assert put.status_code == 200, put.text
        assert put.headers["cache-control"] == "no-cache"  # the spec's RemoteSignResponse: each one judged anew
        assert _send(put.json(), "PUT", content).status_code == 200
        get = client.post(endpoint, json={**request, "method": "GET"})
        assert _send(get.json(), "GET").content == content


def test_the_scope_in_the_signing_config_signs_a_staged_table_at_its_per_table_endpoint(
        client, server, minio, s3_warehouse):
    """A staged create's table is not at its path yet: an Iceberg 1.12 client writing its data (Spark's CTAS)
    reaches the per-table endpoint of a table that does not exist, and is signed by the scope it carries."""
    other = _table(client, s3_warehouse, name="taken", headers=SIGNING)
    staged = client.post(f"{s3_warehouse['prefix']}/namespaces/ns/tables",
                         json={"name": "staged", "schema": SCHEMA, "stage-create": True}, headers=SIGNING)
    assert staged.status_code == 200, staged.text
    assert staged.json()["metadata-location"] is None
    properties = staged.json()["remote-signing-config"]["properties"]
    endpoint = f"{s3_warehouse['prefix']}/namespaces/ns/tables/staged/sign"
    bucket = s3_warehouse["bucket"]
    data = f"{minio.endpoint}/{bucket}/{_key(staged.json()['metadata']['location'])}/data/ctas.parquet"
    request = {"region": "us-east-1", "method": "PUT", "uri": data, "headers": {}}
    unknown = client.post(endpoint, json=request)
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "NoSuchTableException"
    signed = client.post(endpoint, json={**request, "properties": properties})
    assert signed.status_code == 200, signed.text
    assert _send(signed.json(), "PUT", b"staged data").status_code == 200
    # the scope is the staged table's: another table's files are not signed with it, whatever the path
    foreign = f"{minio.endpoint}/{bucket}/{_key(other['metadata-location'])}"
    for path in (endpoint, f"{s3_warehouse['prefix']}/namespaces/ns/tables/taken/sign"):
        refused = client.post(path, json={**request, "method": "GET", "uri": foreign, "properties": properties})
        assert refused.status_code == 403, refused.text
    forged = client.post(endpoint, json={**request, "properties": {"lakeledger.signer-scope": "not-sealed-here"}})
    assert forged.status_code == 403, forged.text


def test_after_a_drop_the_scope_in_the_signing_config_signs_reads_and_deletes_only(client, minio, s3_warehouse):
    """An engine's own purge after its drop (Spark's DROP TABLE ... PURGE) at the per-table endpoint of an Iceberg
    1.12 client: the path names no table any more; the scope it carries gets reads and deletes signed, no writes."""
    created = _table(client, s3_warehouse, name="dropped", headers=SIGNING)
    properties = created["remote-signing-config"]["properties"]
    endpoint = f"{s3_warehouse['prefix']}/namespaces/ns/tables/dropped/sign"
    metadata = f"{minio.endpoint}/{s3_warehouse['bucket']}/{_key(created['metadata-location'])}"
    dropped = client.delete(f"{s3_warehouse['prefix']}/namespaces/ns/tables/dropped",
                            params={"purgeRequested": "false"})
    assert dropped.status_code == 204, dropped.text
    request = {"region": "us-east-1", "method": "GET", "uri": metadata, "headers": {}}
    assert client.post(endpoint, json=request).status_code == 404
    read = client.post(endpoint, json={**request, "properties": properties})
    assert read.status_code == 200, read.text
    assert b'"table-uuid"' in _send(read.json(), "GET").content
    write = client.post(endpoint, json={**request, "method": "PUT", "properties": properties})
    assert write.status_code == 403, write.text
    delete = client.post(endpoint, json={**request, "method": "DELETE", "properties": properties})
    assert delete.status_code == 200, delete.text
    assert _send(delete.json(), "DELETE").status_code == 204
