"""GCS warehouses end to end on fake-gcs-server (the session's `fake_gcs`): the connection test at creation, the
storage adapter, credential vending to pyiceberg (gcsfs) and a purge.

Google's token endpoints cannot be reached from here, and fake-gcs-server has none: `TokenEndpoints` stands in
for them, and only for them. It issues the service account's access token (checking the key's signed JWT with the
key's public half, as Google does) and answers the STS token exchange, recording the Credential Access Boundary
the catalog asked for. Every object is read and written on fake-gcs-server, which takes any bearer token: that the
boundary confines a token is Google's to enforce and is not proven here (docs/storage.md says so)."""

import importlib
import json
import time
import uuid

import httpx
import psycopg
import pyarrow as pa
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from gcs_tokens import TokenEndpoints, service_account_key
from pyiceberg.catalog.rest import RestCatalog
from support import java_endpoint, wait_until

from lakeledger.domain.storage_credential import GcsServiceAccountKeyCredential
from lakeledger.domain.storage_profile import GcsStorageProfile
from lakeledger.storage.gcs import GcsStorage

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([1.5, 2.5, 3.5], pa.float64())})
BUCKET = "lakeledger-gcs-tests"


@pytest.fixture(scope="module")
def private_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def tokens(private_key):
    endpoints = TokenEndpoints(private_key.public_key(), "lakeledger@lakeledger-tests.iam.gserviceaccount.com")
    yield endpoints
    endpoints.stop()


@pytest.fixture(scope="module")
def service_key(private_key, tokens) -> dict:
    return service_account_key(private_key, tokens)


@pytest.fixture(scope="module")
def gcs_bucket(fake_gcs) -> str:
    return fake_gcs.make_bucket(BUCKET)


def _profile(fake_gcs, tokens, key_prefix: str, bucket: str = BUCKET, **extra) -> dict:
    return {"type": "gcs", "bucket": bucket, "key-prefix": key_prefix, "endpoint": fake_gcs.endpoint,
            "sts-endpoint": f"{tokens.url}/v1/token", **extra}


def _credential(service_key: dict) -> dict:
    return {"type": "gcs", "credential-type": "service-account-key", "key": service_key}


@pytest.fixture
def gcs_warehouse(client, fake_gcs, tokens, service_key, gcs_bucket) -> dict:
    name = f"gcs-{uuid.uuid4().hex[:12]}"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": _profile(fake_gcs, tokens, name),
        "storage-credential": _credential(service_key)})
    assert response.status_code == 201, response.text
    return {"name": name, "id": response.json()["warehouse-id"], "key-prefix": name}


@pytest.fixture
def plain_gcsfs(monkeypatch):
    """gcsfs (since 2026.8) by default asks the bucket's type of Google's Storage Control API over gRPC before it
    opens a file; sent to an emulator's HTTP port, that call hangs. Its plain file system is the one for emulators
    (docs/storage.md says so); the flag is read when gcsfs is imported."""
    monkeypatch.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    import gcsfs

    importlib.reload(gcsfs)
    assert gcsfs.GCSFileSystem.__name__ == "GCSFileSystem", gcsfs.GCSFileSystem
    yield
    monkeypatch.undo()
    importlib.reload(gcsfs)


def _table_key(location: str) -> str:
    assert location.startswith(f"gs://{BUCKET}/"), location
    return location[len(f"gs://{BUCKET}/"):]


def test_pyiceberg_writes_and_reads_with_only_the_vended_config_and_a_purge_removes_the_files(
        server, client, fake_gcs, tokens, gcs_warehouse, plain_gcsfs, monkeypatch, tmp_path):
    # gcsfs may find no Google credentials of its own: whatever reaches the storage comes from the catalog
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))
    # gcsfs (2026.10) asks Google's tokeninfo endpoint when a raw token expires, which cannot be reached from here;
    # the expiry is in the vended config anyway (gcs.oauth2.token-expires-at)
    monkeypatch.setenv("FETCH_RAW_TOKEN_EXPIRY", "false")
    shown = client.get(f"/management/v1/warehouse/{gcs_warehouse['id']}").json()
    assert shown["storage-profile"]["type"] == "gcs"
    assert "key" not in json.dumps(shown.get("storage-credential") or {})

    catalog = RestCatalog("gcs", uri=f"{server.url}/catalog", warehouse=gcs_warehouse["name"],
                          **{"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO"})
    assert not [k for k in catalog.properties if k.startswith("gcs.")]
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", schema=ROWS.schema)
    properties = table.io.properties
    assert type(table.io).__name__ == "FsspecFileIO"
    # the token is the one STS issued for a boundary naming this table's location, never the service account's own
    exchange = next(e for e in tokens.exchanges if e["token"] == properties["gcs.oauth2.token"])
    assert properties["gcs.oauth2.token"] not in tokens.issued
    assert int(properties["gcs.oauth2.token-expires-at"]) > 0
    assert properties["gcs.project-id"] == "lakeledger-tests"
    assert properties["gcs.service.host"] == fake_gcs.endpoint
    key = _table_key(table.metadata.location)
    assert key.startswith(f"{gcs_warehouse['key-prefix']}/")
    (rule,) = exchange["options"]["accessBoundary"]["accessBoundaryRules"]
    assert rule["availableResource"] == f"//storage.googleapis.com/projects/_/buckets/{BUCKET}"
    assert rule["availablePermissions"] == ["inRole:roles/storage.objectUser"]
    assert rule["availabilityCondition"]["expression"] == (
        f"resource.name.startsWith('projects/_/buckets/{BUCKET}/objects/{key}/')"
        f" || resource.name.startsWith('projects/_/buckets/{BUCKET}/managedFolders/{key}/')"
        f" || api.getAttribute('storage.googleapis.com/objectListPrefix', '').startsWith('{key}/')")
    assert exchange["form"]["subject_token"] in tokens.issued
    assert exchange["form"]["requested_token_type"] == "urn:ietf:params:oauth:token-type:access_token"

    table.append(ROWS)
    table.append(ROWS.slice(0, 1))
    loaded = RestCatalog("reader", uri=f"{server.url}/catalog", warehouse=gcs_warehouse["name"],
                         **{"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO"}).load_table("sales.orders")
    assert loaded.scan().to_arrow().sort_by("id").column("id").to_pylist() == [1, 1, 2, 3]
    names = fake_gcs.names(BUCKET, key + "/")
    assert len([n for n in names if n.endswith(".parquet")]) == 2
    assert len([n for n in names if n.endswith(".metadata.json")]) == 3  # create + two appends

    prefix = f"/catalog/v1/{gcs_warehouse['id']}"
    assert client.delete(f"{prefix}/namespaces/sales/tables/orders",
                         params={"purgeRequested": "true"}).status_code == 204
    wait_until(lambda: not fake_gcs.names(BUCKET, key + "/"), 60, "the purge of the table's objects")


def test_the_connection_test_refuses_a_missing_bucket(client, fake_gcs, tokens, service_key):
    name = f"gcs-missing-{uuid.uuid4().hex[:8]}"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": _profile(fake_gcs, tokens, name, bucket="no-such-bucket-here"),
        "storage-credential": _credential(service_key)})
    assert response.status_code == 400, response.text
    assert "the bucket no-such-bucket-here does not exist" in response.json()["error"]["message"]
    assert name not in [w["name"] for w in client.get("/management/v1/warehouse").json()["warehouses"]]


def test_a_system_identity_and_an_unreadable_key_are_refused_without_quoting_the_key(
        client, fake_gcs, tokens, service_key, gcs_bucket):
    name = f"gcs-refused-{uuid.uuid4().hex[:8]}"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": _profile(fake_gcs, tokens, name),
        "storage-credential": {"type": "gcs", "credential-type": "gcp-system-identity"}})
    assert response.status_code == 400, response.text
    assert "gcp-system-identity credentials are not enabled" in response.json()["error"]["message"]

    garbage = "-----BEGIN PRIVATE KEY-----\nnot-a-key-but-secret-0451\n-----END PRIVATE KEY-----\n"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": _profile(fake_gcs, tokens, name),
        "storage-credential": _credential({**service_key, "private_key": garbage})})
    assert response.status_code == 400, response.text
    assert "private_key" in response.json()["error"]["message"]
    assert "not-a-key-but-secret-0451" not in response.text


def test_write_new_never_overwrites_and_delete_tree_stays_inside(fake_gcs, tokens, service_key, gcs_bucket):
    profile = GcsStorageProfile.model_validate(_profile(fake_gcs, tokens, f"adapter-{uuid.uuid4().hex[:8]}"))
    storage = GcsStorage(profile, GcsServiceAccountKeyCredential.model_validate(_credential(service_key)))
    base = profile.base_location()
    storage.write_new(f"{base}/t/metadata/00000.metadata.json", b"first")
    with pytest.raises(FileExistsError):
        storage.write_new(f"{base}/t/metadata/00000.metadata.json", b"second")
    assert storage.read(f"{base}/t/metadata/00000.metadata.json") == b"first"
    storage.write_new(f"{base}/t/data/a.parquet", b"a")
    storage.write_new(f"{base}/t2/data/b.parquet", b"b")  # a sibling whose name begins like the table's
    assert storage.delete_tree(f"{base}/t") == 2
    assert fake_gcs.names(BUCKET, f"{profile.key_prefix}/") == [f"{profile.key_prefix}/t2/data/b.parquet"]


def test_the_service_account_key_and_tokens_never_enter_the_event_log(
        server, client, pg_url, tokens, service_key, gcs_warehouse):
    prefix = f"/catalog/v1/{gcs_warehouse['id']}"
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    created = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": {
        "type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}},
        headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert created.status_code == 200, created.text
    vended = created.json()["config"]["gcs.oauth2.token"]
    rotated = client.post(f"/management/v1/warehouse/{gcs_warehouse['id']}/storage-credential",
                          json={"new-storage-credential": _credential(service_key)})
    assert rotated.status_code == 200, rotated.text
    # the PEM's body: the key whatever line breaks or escaping a dump gives it
    key_body = "".join(line for line in service_key["private_key"].splitlines() if "-----" not in line)
    with psycopg.connect(pg_url) as conn:  # the whole log of the session's database, every event in it
        text = "\n".join(f"{originator} {state}" for originator, state in conn.execute(
            "SELECT originator_id::text, convert_from(state, 'UTF8') FROM lakeledger_events").fetchall())
    # the search is not vacuous: the warehouse, its GCS profile and its credential's fingerprint are there
    assert gcs_warehouse["id"] in text and f'"bucket": "{BUCKET}"'.replace(" ", "") in text.replace(" ", "")
    assert "fingerprint" in text
    for secret in (key_body[:64], key_body[-64:], vended, *tokens.issued):
        assert secret not in text.replace("\\n", "")


def test_pyiceberg_default_file_io_pyarrow_writes_and_reads_with_only_the_vended_config(
        server, fake_gcs, gcs_warehouse, monkeypatch):
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(name, raising=False)
    catalog = RestCatalog("arrow", uri=f"{server.url}/catalog", warehouse=gcs_warehouse["name"])
    catalog.create_namespace("arrow")
    table = catalog.create_table("arrow.orders", schema=ROWS.schema)
    assert type(table.io).__name__ == "PyArrowFileIO"
    assert table.io.properties["gcs.oauth2.token"].startswith("downscoped-")
    table.append(ROWS)
    assert catalog.load_table("arrow.orders").scan().to_arrow().sort_by("id").column("id").to_pylist() == [1, 2, 3]
    assert [n for n in fake_gcs.names(BUCKET, _table_key(table.metadata.location) + "/") if n.endswith(".parquet")]


def test_without_sts_or_with_remote_signing_asked_for_no_token_is_vended(client, fake_gcs, tokens, service_key,
                                                                        gcs_bucket, gcs_warehouse):
    name = f"gcs-nosts-{uuid.uuid4().hex[:8]}"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": _profile(fake_gcs, tokens, name, **{"sts-enabled": False}),
        "storage-credential": _credential(service_key)})
    assert response.status_code == 201, response.text
    table = {"name": "t", "schema": {"type": "struct", "schema-id": 0,
                                     "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}}
    for warehouse_id, delegation in ((response.json()["warehouse-id"], "vended-credentials"),
                                     (gcs_warehouse["id"], "remote-signing")):
        prefix = f"/catalog/v1/{warehouse_id}"
        assert client.post(f"{prefix}/namespaces", json={"namespace": ["plain"]}).status_code == 200
        exchanges = len(tokens.exchanges)
        created = client.post(f"{prefix}/namespaces/plain/tables", json=table,
                              headers={"X-Iceberg-Access-Delegation": delegation})
        assert created.status_code == 200, created.text
        assert created.json()["config"] == {"gcs.service.host": fake_gcs.endpoint}
        assert not created.json().get("storage-credentials")
        assert len(tokens.exchanges) == exchanges  # no token was even asked for


def test_a_generic_table_is_vended_a_token_bounded_to_its_location(server, client, tokens, gcs_warehouse):
    """Generic tables get a table's access (services/table_access.py): pylakekeeper's load carries a downscoped
    token whose access boundary names the generic table's location, never the service account's own token."""
    from pylakekeeper import Client, StaticToken

    prefix = f"/catalog/v1/{gcs_warehouse['id']}"
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["raw"]}).status_code == 200
    with Client(base_url=server.url, warehouse=gcs_warehouse["id"], auth=StaticToken("unused")) as lk:
        lk.generic_tables.create("raw", "drops", format="parquet")
        loaded = lk.generic_tables.load("raw", "drops", vended=True)
    [credential] = loaded.storage_credentials or []
    assert credential.prefix == loaded.location
    token = credential.config["gcs.oauth2.token"]
    assert token not in tokens.issued
    exchange = next(e for e in tokens.exchanges if e["token"] == token)
    (rule,) = exchange["options"]["accessBoundary"]["accessBoundaryRules"]
    key = _table_key(loaded.location)
    assert f"objects/{key}/')" in rule["availabilityCondition"]["expression"]


def _put_and_get(fake_gcs, token: str, name: str, data: bytes) -> bytes:
    """An object written and read back through the storage JSON API with ``token`` as the bearer."""
    auth = {"Authorization": f"Bearer {token}"}
    put = httpx.post(f"{fake_gcs.endpoint}/upload/storage/v1/b/{BUCKET}/o", params={"uploadType": "media",
                                                                                   "name": name},
                     content=data, headers=auth)
    assert put.status_code == 200, put.text
    got = httpx.get(f"{fake_gcs.endpoint}/storage/v1/b/{BUCKET}/o/{name.replace('/', '%2F')}",
                    params={"alt": "media"}, headers=auth)
    assert got.status_code == 200, got.text
    return got.content


def test_the_token_is_renewed_at_the_endpoint_java_resolves_from_the_load_and_only_for_that_table(
        server, client, fake_gcs, tokens, gcs_warehouse, warehouse):
    prefix = f"/catalog/v1/{gcs_warehouse['id']}"
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["renew"]}).status_code == 200
    created = client.post(f"{prefix}/namespaces/renew/tables", json={"name": "t", "schema": {
        "type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}})
    assert created.status_code == 200, created.text
    loaded = client.get(f"{prefix}/namespaces/renew/tables/t",
                        headers={"X-Iceberg-Access-Delegation": "vended-credentials"}).json()
    location = loaded["metadata"]["location"]
    key, held = _table_key(location), loaded["config"]
    # where Iceberg Java's GCSFileIO (OAuth2RefreshCredentialsHandler, 1.10 to main) asks for a new token
    url = f"{server.url}{prefix}/namespaces/renew/tables/t/credentials"
    for config in (held, loaded["storage-credentials"][0]["config"]):
        assert java_endpoint(f"{server.url}/catalog", config["gcs.oauth2.refresh-credentials-endpoint"]) == url
        assert config["gcs.oauth2.refresh-credentials-enabled"] == "true"
    plan = client.post(f"{prefix}/namespaces/renew/tables/t/plan", json={})
    assert plan.status_code == 200, plan.text
    time.sleep(0.01)  # expiries are in milliseconds: a later token expires later
    for number, params in enumerate((None, {"planId": plan.json()["plan-id"]})):
        renewed = httpx.get(url, params=params)
        assert renewed.status_code == 200, renewed.text
        # the handler takes the one credential whose prefix starts with gs, and its token and expiry
        [credential] = renewed.json()["storage-credentials"]
        assert credential["prefix"] == location
        config = credential["config"]
        token = config["gcs.oauth2.token"]
        assert token != held["gcs.oauth2.token"] and token not in tokens.issued
        assert int(config["gcs.oauth2.token-expires-at"]) > int(held["gcs.oauth2.token-expires-at"])
        # STS downscoped it to this table's key, for a writer
        exchange = next(e for e in tokens.exchanges if e["token"] == token)
        (rule,) = exchange["options"]["accessBoundary"]["accessBoundaryRules"]
        assert rule["availablePermissions"] == ["inRole:roles/storage.objectUser"]
        assert f"objects/{key}/')" in rule["availabilityCondition"]["expression"]
        data = f"written with renewed token {number}".encode()
        assert _put_and_get(fake_gcs, token, f"{key}/data/renewed-{number}.txt", data) == data
    for missing in (f"{prefix}/namespaces/renew/tables/nope/credentials",
                    f"{warehouse['prefix']}/namespaces/renew/tables/t/credentials",
                    f"/catalog/v1/{uuid.uuid4()}/namespaces/renew/tables/t/credentials"):
        r = client.get(missing)
        assert r.status_code == 404 and r.json()["error"]["type"].startswith("NoSuch"), r.text
