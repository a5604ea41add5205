"""ADLS Gen2 warehouses on Azurite (the session's emulator of Azure Blob Storage, `make azurite-deps`): the
connection test at creation, the directory SAS pyiceberg is given and the catalog's own metadata files, the storage
adapter, a purge that removes the files, and an account key that never reaches the event log.

Engines' data I/O with the vended SAS is not here: Azurite 3.37.0, the newest on npm, refuses every directory SAS
(``sr=d``: "Signed resource type d is invalid"); docs/storage.md says what that leaves unproven."""

import base64
import time
import uuid
from datetime import datetime
from urllib.parse import parse_qs

import httpx
import psycopg
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from support import java_endpoint, wait_until

from lakeledger.domain.errors import BadRequest, NotFound
from lakeledger.domain.storage_credential import parse_storage_credential
from lakeledger.domain.warehouse import parse_storage_profile
from lakeledger.storage.adls import AdlsStorage

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([1.5, 2.5, 3.5], pa.float64())})


@pytest.fixture(scope="module")
def filesystem(azurite) -> str:
    return azurite.make_filesystem(f"fs-{uuid.uuid4().hex[:12]}")


@pytest.fixture(autouse=True)
def no_ambient_azure_credentials(monkeypatch):
    """adlfs must find no account or key of its own: whatever reaches Azurite comes from the catalog."""
    for name in ("AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY",
                 "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_CLIENT_ID",
                 "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def adls_warehouse(client, azurite, filesystem) -> dict:
    name = f"adls-{uuid.uuid4().hex[:12]}"
    response = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": azurite.profile(filesystem, name),
        "storage-credential": azurite.credential()})
    assert response.status_code == 201, response.text
    return {"name": name, "id": response.json()["warehouse-id"], "filesystem": filesystem, "key-prefix": name,
            "prefix": f"/catalog/v1/{response.json()['warehouse-id']}"}


def _blob_prefix(azurite, warehouse: dict, location: str) -> str:
    root = f"abfss://{warehouse['filesystem']}@{azurite.account}.dfs.core.windows.net/"
    assert location.startswith(root + warehouse["key-prefix"] + "/"), location
    return location[len(root):] + "/"


def test_a_wrong_account_key_or_filesystem_is_refused_and_nothing_is_created(client, azurite, filesystem):
    name = f"adls-{uuid.uuid4().hex[:12]}"
    wrong_key = base64.b64encode(b"not-the-account-key-of-this-azurite").decode()
    refused = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": azurite.profile(filesystem, name),
        "storage-credential": azurite.credential(wrong_key)})
    assert refused.status_code == 400, refused.text
    message = refused.json()["error"]["message"]
    assert "write a probe blob" in message and "the credential was refused" in message, message
    assert wrong_key not in refused.text

    missing = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": azurite.profile("no-such-filesystem", name),
        "storage-credential": azurite.credential()})
    assert missing.status_code == 400, missing.text
    assert "the filesystem no-such-filesystem does not exist" in missing.json()["error"]["message"]

    listed = client.get("/management/v1/warehouse").json()["warehouses"]
    assert name not in [w["name"] for w in listed]


def test_pyiceberg_is_given_a_directory_sas_and_the_catalog_keeps_metadata_in_the_filesystem(
        server, client, azurite, adls_warehouse):
    catalog = RestCatalog("adls", uri=f"{server.url}/catalog", warehouse=adls_warehouse["name"])
    assert not [k for k in catalog.properties if k.startswith("adls.")]
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", schema=ROWS.schema)
    assert type(table.io).__name__ == "FsspecFileIO"  # pyiceberg's choice for abfss:// with adlfs installed
    properties = table.io.properties
    host = f"{azurite.account}.dfs.core.windows.net"
    sas = parse_qs(properties[f"adls.sas-token.{host}"])
    # a directory SAS on the table's location (key prefix, namespace id, table id: three levels) that may write
    assert sas["sr"] == ["d"] and sas["sdd"] == ["3"] and sas["sp"] == ["racwdl"], sas
    assert int(properties[f"adls.sas-token-expires-at-ms.{host}"]) > 0
    assert properties[f"adls.connection-string.{host}"] == azurite.endpoint
    assert properties["adls.connection-string"].startswith(f"BlobEndpoint={azurite.endpoint};SharedAccessSignature=")
    assert "adls.account-key" not in properties
    assert not [k for k, v in properties.items() if azurite.key in str(v)]

    # the catalog's own writes (metadata files) go to Azurite with the warehouse's key
    with table.transaction() as change:
        change.set_properties(owner="sales")
    loaded = catalog.load_table("sales.orders")
    assert loaded.properties["owner"] == "sales"
    blobs = azurite.blobs(adls_warehouse["filesystem"], _blob_prefix(azurite, adls_warehouse,
                                                                     loaded.metadata.location))
    assert len([b for b in blobs if b.endswith(".metadata.json")]) == 2  # create + the commit
    assert _blob_name(azurite, adls_warehouse, loaded.metadata_location) in blobs

    # loadCredentials answers the same kind of token for the table's own location
    credentials = client.get(f"{adls_warehouse['prefix']}/namespaces/sales/tables/orders/credentials")
    assert credentials.status_code == 200, credentials.text
    (entry,) = credentials.json()["storage-credentials"]
    assert entry["prefix"] == loaded.metadata.location
    assert parse_qs(entry["config"][f"adls.sas-token.{host}"])["sr"] == ["d"]


def test_the_storage_adapter_on_azurite_never_overwrites_and_deletes_only_below_a_location(azurite, filesystem):
    profile = parse_storage_profile(azurite.profile(filesystem, "adapter"))
    credential = parse_storage_credential(azurite.credential(), profile)
    storage = AdlsStorage(profile, credential)
    base = profile.base_location()
    storage.write_new(f"{base}/t1/metadata/00000.metadata.json", b"first")
    with pytest.raises(FileExistsError):
        storage.write_new(f"{base}/t1/metadata/00000.metadata.json", b"second")
    assert storage.read(f"{base}/t1/metadata/00000.metadata.json") == b"first"
    with pytest.raises(NotFound):
        storage.read(f"{base}/t1/metadata/missing.json")
    storage.write_new(f"{base}/t1/data/a.parquet", b"a")
    storage.write_new(f"{base}/t1-sibling/keep.parquet", b"k")
    with pytest.raises(BadRequest):
        storage.delete_tree(base)
    assert storage.delete_tree(f"{base}/t1") == 2
    assert azurite.blobs(filesystem, "adapter/") == ["adapter/t1-sibling/keep.parquet"]
    storage.delete(f"{base}/t1-sibling/keep.parquet")
    storage.delete(f"{base}/t1-sibling/keep.parquet")  # already gone: no error
    assert azurite.blobs(filesystem, "adapter/") == []


def test_drop_with_purge_removes_the_table_files(client, azurite, adls_warehouse):
    prefix = adls_warehouse["prefix"]
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["gone"]}).status_code == 200
    locations = {}
    for name in ("orders", "kept"):
        created = client.post(f"{prefix}/namespaces/gone/tables", json={"name": name, "schema": SCHEMA})
        assert created.status_code == 200, created.text
        locations[name] = _blob_prefix(azurite, adls_warehouse, created.json()["metadata"]["location"])
    # data an engine wrote, at two depths
    container = azurite.container(adls_warehouse["filesystem"])
    container.upload_blob(locations["orders"] + "data/a.parquet", b"a")
    container.upload_blob(locations["orders"] + "data/p=1/b.parquet", b"b")
    assert len(azurite.blobs(adls_warehouse["filesystem"], locations["orders"])) == 3
    dropped = client.delete(f"{prefix}/namespaces/gone/tables/orders", params={"purgeRequested": "true"})
    assert dropped.status_code == 204, dropped.text
    wait_until(lambda: not azurite.blobs(adls_warehouse["filesystem"], locations["orders"]), 60,
               "the purge of the table's blobs")
    assert azurite.blobs(adls_warehouse["filesystem"], locations["kept"])


def test_the_account_key_never_reaches_the_event_log_or_history(client, pg_url, server, azurite, adls_warehouse):
    prefix = adls_warehouse["prefix"]
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["k"]}).status_code == 200
    created = client.post(f"{prefix}/namespaces/k/tables", json={"name": "t", "schema": SCHEMA},
                          headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert created.status_code == 200, created.text
    rotated = client.post(f"/management/v1/warehouse/{adls_warehouse['id']}/storage-credential",
                          json={"new-storage-credential": azurite.credential()})
    assert rotated.status_code in (200, 204), rotated.text
    with psycopg.connect(pg_url) as conn:
        states = b"\n".join(bytes(r[0]) for r in conn.execute("SELECT state FROM lakeledger_events"))
    history = client.get(f"/management/v1/warehouse/{adls_warehouse['id']}/history", params={"pageSize": 100})
    assert history.status_code == 200, history.text
    # not vacuous: the warehouse's profile is in both
    assert adls_warehouse["key-prefix"].encode() in states and adls_warehouse["key-prefix"] in history.text
    raw = azurite.key.encode()
    for form in (raw, base64.b64decode(raw), raw.hex().encode(), base64.b64encode(raw)):
        assert form not in states and form not in history.content
    assert azurite.key.encode() not in server.log_path.read_bytes()


def _blob_name(azurite, warehouse: dict, location: str) -> str:
    root = f"abfss://{warehouse['filesystem']}@{azurite.account}.dfs.core.windows.net/"
    assert location.startswith(root), location
    return location[len(root):]


SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def test_without_sas_or_with_remote_signing_only_no_token_is_vended(client, azurite, filesystem):
    name = f"adls-{uuid.uuid4().hex[:12]}"
    created = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": azurite.profile(filesystem, name, **{"sas-enabled": False}),
        "storage-credential": azurite.credential()})
    assert created.status_code == 201, created.text
    prefix = f"/catalog/v1/{created.json()['warehouse-id']}"
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    table = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA},
                        headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
    assert table.status_code == 200, table.text
    host = f"{azurite.account}.dfs.core.windows.net"
    assert f"adls.sas-token.{host}" not in table.json()["config"] and not table.json().get("storage-credentials")
    assert table.json()["config"][f"adls.connection-string.{host}"] == azurite.endpoint


def test_wasbs_locations_are_taken_only_when_allowed_and_compared_as_abfss(client, azurite, filesystem):
    name = f"adls-{uuid.uuid4().hex[:12]}"
    prefixes = {}
    for allowed in (False, True):
        created = client.post("/management/v1/warehouse", json={
            "warehouse-name": f"{name}-{allowed}".lower(), "storage-credential": azurite.credential(),
            "storage-profile": azurite.profile(filesystem, f"{name}-{allowed}".lower(),
                                               **{"allow-alternative-protocols": allowed})})
        assert created.status_code == 201, created.text
        prefixes[allowed] = f"/catalog/v1/{created.json()['warehouse-id']}"
        assert client.post(f"{prefixes[allowed]}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    blob_root = f"wasbs://{filesystem}@{azurite.account}.blob.core.windows.net"
    refused = client.post(f"{prefixes[False]}/namespaces/ns/tables", json={
        "name": "t", "schema": SCHEMA, "location": f"{blob_root}/{name}-false/ns/t"})
    assert refused.status_code == 400 and "allow-alternative-protocols" in refused.text, refused.text
    taken = client.post(f"{prefixes[True]}/namespaces/ns/tables", json={
        "name": "t", "schema": SCHEMA, "location": f"{blob_root}/{name}-true/ns/t"})
    assert taken.status_code == 200, taken.text
    spelt = f"{blob_root}/{name}-true/ns/t"
    assert taken.json()["metadata"]["location"] == spelt  # kept as spelt, as s3a:// is
    assert azurite.blobs(filesystem, f"{name}-true/ns/t/metadata/")
    # the same place spelt abfss:// overlaps it
    same = f"abfss://{filesystem}@{azurite.account}.dfs.core.windows.net/{name}-true/ns/t/u"
    clash = client.post(f"{prefixes[True]}/namespaces/ns/tables", json={"name": "u", "schema": SCHEMA,
                                                                         "location": same})
    assert clash.status_code == 400 and "overlaps" in clash.text, clash.text


def test_a_generic_table_is_vended_a_sas_for_its_own_directory(server, client, azurite, adls_warehouse):
    """Generic tables get a table's access (services/table_access.py): pylakekeeper loads one with a directory SAS
    on its location, never the account key. (Using it is what Azurite cannot show: it rejects every directory SAS,
    docs/storage.md.)"""
    from pylakekeeper import Client, StaticToken

    assert client.post(f"{adls_warehouse['prefix']}/namespaces", json={"namespace": ["ai"]}).status_code == 200
    with Client(base_url=server.url, warehouse=adls_warehouse["id"], auth=StaticToken("unused")) as lk:
        lk.generic_tables.create("ai", "frames", format="lance")
        loaded = lk.generic_tables.load("ai", "frames", vended=True)
    [credential] = loaded.storage_credentials or []
    assert credential.prefix == loaded.location
    _blob_prefix(azurite, adls_warehouse, loaded.location)  # inside the warehouse's key prefix
    host = f"{azurite.account}.dfs.core.windows.net"
    sas = parse_qs(credential.config[f"adls.sas-token.{host}"])
    # a directory SAS on the generic table's location (key prefix, namespace id, its id: three levels) that may write
    assert sas["sr"] == ["d"] and sas["sdd"] == ["3"] and sas["sp"] == ["racwdl"], sas
    assert not [v for v in credential.config.values() if azurite.key in v]


def _signed_for_directory(azurite, filesystem: str, directory: str, sas: dict[str, list[str]]) -> bool:
    """Whether ``sas`` is the directory SAS the account key signs for ``directory`` with its own permissions and
    times (azure-storage-file-datalake signs it again): what Azure checks, and Azurite cannot (it rejects sr=d)."""
    from azure.storage.filedatalake import generate_directory_sas

    def instant(field: str) -> datetime:
        return datetime.fromisoformat(sas[field][0].replace("Z", "+00:00"))

    again = parse_qs(generate_directory_sas(azurite.account, filesystem, directory, azurite.key,
                                            permission=sas["sp"][0], start=instant("st"), expiry=instant("se")))
    return again["sig"] == sas["sig"]


def test_the_sas_is_renewed_at_the_endpoint_java_resolves_from_the_load_and_only_for_that_table(
        server, client, azurite, adls_warehouse, warehouse):
    prefix = adls_warehouse["prefix"]
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["renew"]}).status_code == 200
    created = client.post(f"{prefix}/namespaces/renew/tables", json={"name": "t", "schema": SCHEMA})
    assert created.status_code == 200, created.text
    loaded = client.get(f"{prefix}/namespaces/renew/tables/t",
                        headers={"X-Iceberg-Access-Delegation": "vended-credentials"}).json()
    location, host = loaded["metadata"]["location"], f"{azurite.account}.dfs.core.windows.net"
    held = loaded["config"]
    # where Iceberg Java's ADLSFileIO (AzureProperties, 1.10 to main) sends its VendedAdlsCredentialProvider
    url = f"{server.url}{prefix}/namespaces/renew/tables/t/credentials"
    for config in (held, loaded["storage-credentials"][0]["config"]):
        assert java_endpoint(f"{server.url}/catalog", config["adls.refresh-credentials-endpoint"]) == url
        assert config["adls.refresh-credentials-enabled"] == "true"
    plan = client.post(f"{prefix}/namespaces/renew/tables/t/plan", json={})
    assert plan.status_code == 200, plan.text
    time.sleep(1.1)  # a SAS's times are in seconds: one signed within the same second would be the held one
    directory = _blob_name(azurite, adls_warehouse, location)
    for params in (None, {"planId": plan.json()["plan-id"]}):
        renewed = httpx.get(url, params=params)
        assert renewed.status_code == 200, renewed.text
        # the provider takes the one credential whose prefix names the account's host, and its two keys
        [credential] = renewed.json()["storage-credentials"]
        assert credential["prefix"] == location and host in credential["prefix"]
        config = credential["config"]
        token = config[f"adls.sas-token.{host}"]
        assert token != held[f"adls.sas-token.{host}"]
        assert int(config[f"adls.sas-token-expires-at-ms.{host}"]) > int(held[f"adls.sas-token-expires-at-ms.{host}"])
        sas = parse_qs(token)
        assert sas["sr"] == ["d"] and sas["sdd"] == ["3"] and sas["sp"] == ["racwdl"], sas
        assert sas["se"][0] > parse_qs(held[f"adls.sas-token.{host}"])["se"][0]
        assert _signed_for_directory(azurite, adls_warehouse["filesystem"], directory, sas)
        assert not _signed_for_directory(azurite, adls_warehouse["filesystem"], directory + "-other", sas)
        assert config["adls.connection-string"] == f"BlobEndpoint={azurite.endpoint};SharedAccessSignature={token}"
        assert not [v for v in config.values() if azurite.key in v]
    for missing in (f"{prefix}/namespaces/renew/tables/nope/credentials",
                    f"{warehouse['prefix']}/namespaces/renew/tables/t/credentials",
                    f"/catalog/v1/{uuid.uuid4()}/namespaces/renew/tables/t/credentials"):
        r = client.get(missing)
        assert r.status_code == 404 and r.json()["error"]["type"].startswith("NoSuch"), r.text
