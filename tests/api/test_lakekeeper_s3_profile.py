"""Lakekeeper's further S3 profile fields (storage-layout, sts-session-tags, remote-signing-enabled,
push-s3-delete-disabled, aws-kms-key-arn, legacy-md5-behavior), each with its effect, on a real MinIO; and
Lakekeeper's ``<project-id>/<name>`` spelling of a warehouse in /config. Lakekeeper's own integration suite creates
its warehouses with exactly these fields (its tests/python/tests/conftest.py)."""

import uuid
from urllib.parse import quote

import pytest
from support import SCHEMA

from lakeledger.domain.storage_credential import S3AccessKeyCredential
from lakeledger.domain.storage_profile import S3StorageProfile
from lakeledger.storage.s3 import S3Storage

LAYOUT = {"type": "full-hierarchy", "namespace": "{name}-{uuid}", "tabular": "{name}-{uuid}"}


def _create(client, minio, bucket, name, delete_profile=None, project=None, **profile):
    body = {"warehouse-name": name, "project-id": project or "00000000-0000-0000-0000-000000000000",
            "storage-profile": minio.profile(bucket, name, **profile), "storage-credential": minio.credential()}
    if delete_profile:
        body["delete-profile"] = delete_profile
    return client.post("/management/v1/warehouse", json=body)


def _warehouse(client, minio, bucket, delete_profile=None, **profile) -> dict:
    name = f"lk-{uuid.uuid4().hex[:12]}"
    r = _create(client, minio, bucket, name, delete_profile, **profile)
    assert r.status_code == 201, r.text
    return {"name": name, "id": r.json()["warehouse-id"], "prefix": f"/catalog/v1/{r.json()['warehouse-id']}",
            "base": f"s3://{bucket}/{name}", "body": r.json()}


def _table(client, wh, namespace, name, headers=None):
    r = client.post(f"{wh['prefix']}/namespaces/{quote(chr(0x1f).join(namespace), safe='')}/tables",
                    json={"name": name, "schema": SCHEMA}, headers=headers or {})
    assert r.status_code == 200, r.text
    return r.json()


def test_the_lakekeeper_suites_warehouse_body_is_accepted_and_read_back(client, minio, bucket):
    # conftest.py's storage profile for MinIO, with the fields it leaves out set too
    wh = _warehouse(client, minio, bucket, flavor="minio", **{
        "sts-enabled": True, "legacy-md5-behavior": False, "storage-layout": LAYOUT,
        "sts-session-tags": {"team": "lake"}, "push-s3-delete-disabled": False, "remote-signing-enabled": True},
        delete_profile={"type": "soft", "expiration-seconds": 2})
    profile = client.get(f"/management/v1/warehouse/{wh['id']}").json()["storage-profile"]
    assert profile["storage-layout"] == LAYOUT
    assert profile["sts-session-tags"] == {"team": "lake"}
    assert (profile["legacy-md5-behavior"], profile["push-s3-delete-disabled"],
            profile["remote-signing-enabled"]) == (False, False, True)


def test_a_warehouse_without_the_new_fields_reads_as_before(client, minio, bucket):
    wh = _warehouse(client, minio, bucket)
    profile = client.get(f"/management/v1/warehouse/{wh['id']}").json()["storage-profile"]
    assert not {"storage-layout", "sts-session-tags", "push-s3-delete-disabled", "aws-kms-key-arn",
                "remote-signing-enabled", "legacy-md5-behavior"} & set(profile)
    ns = client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["ns"]}).json()
    created = _table(client, wh, ["ns"], "t")
    # Lakeledger's own layout: <namespace-uuid>/<table-uuid>
    assert created["metadata"]["location"] == \
        f"{wh['base']}/{ns['namespace-uuid']}/{created['metadata']['table-uuid']}"


def test_a_full_hierarchy_layout_names_every_level_and_the_table(client, minio, bucket):
    wh = _warehouse(client, minio, bucket, **{"storage-layout": LAYOUT})
    top = client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["sales team"]}).json()
    child = client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["sales team", "eu"]}).json()
    created = _table(client, wh, ["sales team", "eu"], "orders 2024")
    table_uuid = created["metadata"]["table-uuid"]
    assert created["metadata"]["location"] == (f"{wh['base']}/sales%20team-{top['namespace-uuid']}/"
                                               f"eu-{child['namespace-uuid']}/orders%202024-{table_uuid}")
    # the metadata file is where the location says
    assert any(k.startswith(f"{wh['name']}/sales%20team-") for k in minio.keys(bucket, wh["name"]))


@pytest.mark.parametrize("layout, expected", [
    ({"type": "default"}, "{uuid}"),
    ({"type": "tabular-only", "tabular": "t-{name}-{uuid}"}, "t-tab-{uuid}"),
])
def test_flat_layouts_put_tables_directly_below_the_warehouse(client, minio, bucket, layout, expected):
    wh = _warehouse(client, minio, bucket, **{"storage-layout": layout})
    client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["ns"]})
    created = _table(client, wh, ["ns"], "tab")
    assert created["metadata"]["location"] == \
        f"{wh['base']}/{expected.replace('{uuid}', created['metadata']['table-uuid'])}"


@pytest.mark.parametrize("change, says", [
    ({"storage-layout": {"type": "tabular-only", "tabular": "{name}"}}, "must contain {uuid}"),
    ({"storage-layout": {"type": "full-hierarchy", "namespace": "ns", "tabular": "{uuid}"}}, "{uuid} or {name}"),
    ({"storage-layout": {"type": "full-hierarchy", "namespace": "{name}/x", "tabular": "{uuid}"}}, "one path seg"),
    ({"storage-layout": {"type": "nested"}}, "storage-layout"),
    ({"sts-session-tags": {"team": 7}}, "Invalid STS session tag"),
    ({"sts-session-tags": ["team"]}, "sts-session-tags must be an object"),
    ({"remote-signing-enabled": "sometimes"}, "remote-signing-enabled"),
])
def test_bad_lakekeeper_fields_are_400_and_record_nothing(client, minio, bucket, log_length, change, says):
    before = log_length()
    r = _create(client, minio, bucket, f"bad-{uuid.uuid4().hex[:8]}", **change)
    assert r.status_code == 400 and says in r.text, r.text
    assert log_length() == before


def _load(client, wh, table, delegation):
    r = client.get(f"{wh['prefix']}/namespaces/ns/tables/{table}",
                   headers={"X-Iceberg-Access-Delegation": delegation})
    assert r.status_code == 200, r.text
    return r.json()


def test_remote_signing_disabled_offers_no_signer(client, minio, bucket):
    wh = _warehouse(client, minio, bucket, **{"remote-signing-enabled": False})
    client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["ns"]})
    _table(client, wh, ["ns"], "t")
    loaded = _load(client, wh, "t", "remote-signing")
    assert "s3.signer.uri" not in loaded["config"] and "s3.remote-signing-enabled" not in loaded["config"]
    assert not loaded.get("storage-credentials")
    # with STS on, a client asking for remote signing gets vended credentials instead
    vending = _warehouse(client, minio, bucket, **{"remote-signing-enabled": False, "sts-enabled": True})
    client.post(f"{vending['prefix']}/namespaces", json={"namespace": ["ns"]})
    _table(client, vending, ["ns"], "t")
    loaded = _load(client, vending, "t", "remote-signing")
    assert "s3.signer.uri" not in loaded["config"] and loaded["config"]["s3.session-token"]


def test_remote_signing_stays_on_by_default(client, minio, bucket):
    wh = _warehouse(client, minio, bucket)
    client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["ns"]})
    _table(client, wh, ["ns"], "t")
    assert _load(client, wh, "t", "remote-signing")["config"]["s3.signer.uri"]


def test_session_tags_go_to_assume_role_and_minio_vends_with_them(client, minio, bucket):
    wh = _warehouse(client, minio, bucket, **{"sts-enabled": True, "sts-session-tags": {"team": "lake", "env": "t"}})
    client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["ns"]})
    _table(client, wh, ["ns"], "t")
    config = _load(client, wh, "t", "vended-credentials")["config"]
    assert config["s3.session-token"]
    # the vended credential works on the table's own files
    import boto3
    s3 = boto3.client("s3", endpoint_url=minio.endpoint, region_name="us-east-1",
                      aws_access_key_id=config["s3.access-key-id"],
                      aws_secret_access_key=config["s3.secret-access-key"],
                      aws_session_token=config["s3.session-token"])
    location = _load(client, wh, "t", "vended-credentials")["metadata"]["location"]
    key = location.split("/", 3)[3]
    s3.put_object(Bucket=bucket, Key=f"{key}/data/x.parquet", Body=b"x")
    assert f"{key}/data/x.parquet" in minio.keys(bucket, key)


@pytest.mark.parametrize("delete_profile, push, expected", [
    ({"type": "soft", "expiration-seconds": 60}, None, {"s3.delete-enabled": "false"}),
    ({"type": "soft", "expiration-seconds": 60}, False, {}),
    (None, None, {}),
])
def test_soft_deleting_warehouses_tell_engines_not_to_delete(client, minio, bucket, delete_profile, push, expected):
    extra = {} if push is None else {"push-s3-delete-disabled": push}
    wh = _warehouse(client, minio, bucket, delete_profile=delete_profile, **extra)
    r = client.get("/catalog/v1/config", params={"warehouse": wh["name"]})
    assert r.status_code == 200 and r.json()["defaults"] == expected, r.text


def test_a_kms_key_is_asked_for_on_every_write(client, minio, bucket, log_length):
    # this MinIO has no KMS: the storage check's probe write asks for SSE-KMS with the key and is refused
    before = log_length()
    r = _create(client, minio, bucket, f"kms-{uuid.uuid4().hex[:8]}",
                **{"aws-kms-key-arn": "arn:aws:kms:us-east-1:000000000000:key/lakeledger-test"})
    assert r.status_code == 400 and "write a probe object" in r.text, r.text
    assert log_length() == before


def test_a_kms_key_is_in_the_vended_policy_and_the_engines_config():
    profile = S3StorageProfile.model_validate({"type": "s3", "bucket": "bkt", "region": "us-east-1",
                                               "aws-kms-key-arn": " arn:aws:kms:eu:1:key/k "})
    assert profile.aws_kms_key_arn == "arn:aws:kms:eu:1:key/k"
    assert profile.encryption_config() == {"s3.sse.type": "kms", "s3.sse.key": "arn:aws:kms:eu:1:key/k"}
    from lakeledger.domain.s3_policy import table_policy
    assert '"Action":["kms:Decrypt","kms:GenerateDataKey"],"Resource":["arn:aws:kms:eu:1:key/k"]' in \
        table_policy("bkt", "wh/t", True, "aws", profile.aws_kms_key_arn)
    assert "kms:" not in table_policy("bkt", "wh/t", True, "aws")


@pytest.mark.parametrize("legacy", [True, False])
def test_legacy_md5_behavior_sends_content_md5_on_delete_objects(minio, bucket, legacy):
    prefix = f"md5-{uuid.uuid4().hex[:8]}"
    profile = S3StorageProfile.model_validate({**minio.profile(bucket, prefix), "legacy-md5-behavior": legacy})
    credential = S3AccessKeyCredential.model_validate(minio.credential())
    storage = S3Storage(profile, credential)
    sent: list[dict] = []
    storage.client.meta.events.register("before-send.s3.DeleteObjects",
                                        lambda request, **_: sent.append(dict(request.headers)))
    for i in range(2):
        storage.write_new(f"s3://{bucket}/{prefix}/t/f{i}", b"x")
    assert storage.delete_tree(f"s3://{bucket}/{prefix}/t") == 2
    assert minio.keys(bucket, prefix) == []
    [headers] = sent
    checksums = [h for h in headers if h.lower().startswith("x-amz-checksum-")]
    if legacy:
        assert "Content-MD5" in headers and not checksums
    else:
        assert "Content-MD5" not in headers


def test_config_finds_a_warehouse_of_another_project_by_project_and_name(client, minio, bucket):
    project = client.post("/management/v1/project", json={"project-name": f"p-{uuid.uuid4().hex[:8]}"})
    assert project.status_code in (200, 201), project.text
    project_id = project.json()["project-id"]
    name = f"lk-{uuid.uuid4().hex[:12]}"
    created = _create(client, minio, bucket, name, project=project_id)
    assert created.status_code == 201, created.text
    r = client.get("/catalog/v1/config", params={"warehouse": f"{project_id}/{name}"})
    assert r.status_code == 200, r.text
    assert r.json()["overrides"]["prefix"] == created.json()["warehouse-id"]
    # not in the default project, and not under another project's id
    assert client.get("/catalog/v1/config", params={"warehouse": name}).status_code == 404
    other = client.get("/catalog/v1/config", params={"warehouse": f"00000000-0000-0000-0000-000000000000/{name}"})
    assert other.status_code == 404 and other.json()["error"]["type"] == "NoSuchWarehouseException"


def test_an_s3a_table_stays_writable_after_its_warehouse_stops_accepting_s3a(client, minio, bucket):
    # Lakekeeper's test_spark_s3a.py::test_disable_alternative_protocols, over HTTP
    wh = _warehouse(client, minio, bucket, **{"allow-alternative-protocols": True})
    client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["ns"]})
    spelt = f"s3a://{bucket}/{wh['name']}/ns/t"
    created = client.post(f"{wh['prefix']}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA,
                                                                        "location": spelt})
    assert created.status_code == 200, created.text
    changed = client.post(f"/management/v1/warehouse/{wh['id']}/storage", json={
        "storage-profile": minio.profile(bucket, wh["name"], **{"allow-alternative-protocols": False}),
        "storage-credential": minio.credential()})
    assert changed.status_code == 200, changed.text
    commit = client.post(f"{wh['prefix']}/namespaces/ns/tables/t", json={
        "requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]})
    assert commit.status_code == 200, commit.text
    assert commit.json()["metadata"]["location"] == spelt
    refused = client.post(f"{wh['prefix']}/namespaces/ns/tables", json={"name": "u", "schema": SCHEMA,
                                                                        "location": spelt + "-2"})
    assert refused.status_code == 400 and "allow-alternative-protocols" in refused.text
