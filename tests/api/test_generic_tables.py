"""Generic tables (Lakekeeper's Generic Table API, /lakekeeper/v1) driven by Lakekeeper's own Python client,
pylakekeeper, against the real server over HTTP: create, load with credentials vended on an S3 warehouse on MinIO
(which reach the table's location and nothing beside it), list, rename, drop and undrop; one name space with
Iceberg tables and views; what the recycle bin, the history and a past prefix show; what bad input gets."""

import uuid

import pytest
from botocore.exceptions import ClientError
from pylakekeeper import Client, ConflictError, NotFoundError, StaticToken
from support import SCHEMA, wait_until

HOUR = {"type": "soft", "expiration-seconds": 3600}


def _client(server, warehouse_id: str) -> Client:
    return Client(base_url=server.url, warehouse=warehouse_id, auth=StaticToken("unused"))


def _namespace(client, prefix: str, *levels: str) -> str:
    r = client.post(f"{prefix}/namespaces", json={"namespace": list(levels)})
    assert r.status_code == 200, r.text
    return r.json()["namespace-uuid"]


def _vended(loaded) -> dict[str, str]:
    return {k: v for cred in (loaded.storage_credentials or []) for k, v in cred.config.items()}


def test_create_load_list_drop_with_vended_credentials(server, client, minio, s3_warehouse):
    _namespace(client, s3_warehouse["prefix"], "ai")
    with _client(server, s3_warehouse["id"]) as lk:
        created = lk.generic_tables.create("ai", "embeddings", format="lance", doc="image embeddings",
                                           properties={"embedding-dim": "768"})
        assert created.table.format == "lance" and created.table.doc == "image embeddings"
        assert created.table.properties == {"embedding-dim": "768"} and created.table.protected is False
        location = created.location
        assert location.startswith(f"s3://{s3_warehouse['bucket']}/{s3_warehouse['key-prefix']}/")
        assert created.storage_credentials is None  # as Lakekeeper: a create vends nothing, a load does

        loaded = lk.generic_tables.load("ai", "embeddings", vended=True)
        assert loaded.location == location and loaded.table.format == "lance"
        assert [c.prefix for c in loaded.storage_credentials or []] == [location]
        vended = _vended(loaded)
        assert vended["s3.session-token"] and vended["s3.endpoint"] == minio.endpoint
        s3 = minio.client(key=vended["s3.access-key-id"], secret=vended["s3.secret-access-key"],
                          token=vended["s3.session-token"])
        bucket, key = location.removeprefix("s3://").split("/", 1)
        s3.put_object(Bucket=bucket, Key=f"{key}/data/part-0.lance", Body=b"rows")
        assert s3.get_object(Bucket=bucket, Key=f"{key}/data/part-0.lance")["Body"].read() == b"rows"
        with pytest.raises(ClientError):  # the next table's prefix is not this table's
            s3.put_object(Bucket=bucket, Key=f"{key}-other/x", Body=b"no")

        lk.generic_tables.create("ai", "events", format="delta")
        assert sorted(i.name for i in lk.generic_tables.list("ai", page_size=1)) == ["embeddings", "events"]
        with pytest.raises(ConflictError):
            lk.generic_tables.create("ai", "events", format="delta")

        lk.generic_tables.drop("ai", "events")
        assert [i.name for i in lk.generic_tables.list("ai")] == ["embeddings"]
        with pytest.raises(NotFoundError):
            lk.generic_tables.load("ai", "events")


def test_credentials_endpoint(server, client, s3_warehouse):
    _namespace(client, s3_warehouse["prefix"], "raw")
    with _client(server, s3_warehouse["id"]) as lk:
        location = lk.generic_tables.create("raw", "drops", format="parquet").location
    r = client.get(f"/lakekeeper/v1/{s3_warehouse['id']}/namespaces/raw/generic-tables/drops/credentials")
    assert r.status_code == 200, r.text
    [credential] = r.json()["storage-credentials"]
    assert credential["prefix"] == location and credential["config"]["s3.access-key-id"]


def test_one_name_space_with_iceberg_tables_and_views(server, client, warehouse):
    _namespace(client, warehouse["prefix"], "ns")
    r = client.post(f"{warehouse['prefix']}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code == 200, r.text
    base = f"/lakekeeper/v1/{warehouse['id']}/namespaces/ns/generic-tables"
    r = client.post(base, json={"name": "t", "format": "lance"})
    assert r.status_code == 409 and "Table with same name already exists" in r.json()["error"]["message"]
    assert client.post(base, json={"name": "g", "format": "lance"}).status_code == 200
    r = client.post(f"{warehouse['prefix']}/namespaces/ns/tables", json={"name": "g", "schema": SCHEMA})
    assert r.status_code == 409 and "Generic table with same name already exists" in r.json()["error"]["message"]
    # an Iceberg load does not see the generic table, nor a generic load the Iceberg table
    assert client.get(f"{warehouse['prefix']}/namespaces/ns/tables/g").status_code == 404
    r = client.get(f"{base}/t")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchGenericTableException"
    assert client.get(f"{warehouse['prefix']}/namespaces/ns/tables").json()["identifiers"] == [
        {"namespace": ["ns"], "name": "t"}]


def test_rename(client, warehouse):
    _namespace(client, warehouse["prefix"], "a")
    _namespace(client, warehouse["prefix"], "b")
    base = f"/lakekeeper/v1/{warehouse['id']}"
    assert client.post(f"{base}/namespaces/a/generic-tables", json={"name": "x", "format": "csv"}).status_code == 200
    r = client.post(f"{base}/generic-tables/rename", json={"source": {"namespace": ["a"], "name": "x"},
                                                          "destination": {"namespace": ["b"], "name": "y"}})
    assert r.status_code == 204, r.text
    assert client.get(f"{base}/namespaces/a/generic-tables/x").status_code == 404
    r = client.get(f"{base}/namespaces/b/generic-tables/y")
    assert r.status_code == 200 and r.json()["table"]["format"] == "csv"


def test_soft_drop_undrop_and_recycle_bin(server, client, warehouse):
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/delete-profile", json={"delete-profile": HOUR})
    assert r.status_code == 200, r.text
    _namespace(client, warehouse["prefix"], "ns")
    with _client(server, warehouse["id"]) as lk:
        lk.generic_tables.create("ns", "vectors", format="lance", properties={"k": "v"})
        lk.generic_tables.drop("ns", "vectors")
        assert list(lk.generic_tables.list("ns")) == []
        deleted = client.get(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars").json()["tabulars"]
        [entry] = [d for d in deleted if d["name"] == "vectors"]
        assert entry["typ"] == "generic-table"
        r = client.post(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars/undrop",
                        json={"targets": [{"type": "generic-table", "id": entry["id"]}]})
        assert r.status_code == 204, r.text
        back = lk.generic_tables.load("ns", "vectors")
        assert back.table.format == "lance" and back.table.properties == {"k": "v"}


def test_history_and_past_prefix(client, warehouse):
    _namespace(client, warehouse["prefix"], "ns")
    base = f"/lakekeeper/v1/{warehouse['id']}/namespaces/ns/generic-tables"
    r = client.post(base, json={"name": "old", "format": "lance", "schema": {"fields": ["a"]}})
    assert r.status_code == 200, r.text
    events = client.get(f"/management/v1/warehouse/{warehouse['id']}/history").json()["events"]
    [created] = [e for e in events if e["summary"] == "created lance generic table ns.old"]
    assert created["type"] == "generic-table.created" and created["entity"]["type"] == "generic-table"
    assert client.delete(f"{base}/old").status_code == 204
    events = client.get(f"/management/v1/warehouse/{warehouse['id']}/history").json()["events"]
    assert events[-1]["summary"] == "dropped generic-table ns.old (purge requested)"  # the warehouse default
    past = f"/lakekeeper/v1/{warehouse['id']}@seq:{created['sequence']}/namespaces/ns/generic-tables"
    r = client.get(f"{past}/old")
    assert r.status_code == 200, r.text
    assert r.json()["table"]["schema"] == {"fields": ["a"]}
    r = client.post(past, json={"name": "new", "format": "lance"})
    assert r.status_code == 403 and "read-only view" in r.json()["error"]["message"]
    [listed] = client.get(past).json()["identifiers"]
    assert listed["name"] == "old" and listed["namespace"] == ["ns"] and uuid.UUID(listed["id"])


@pytest.mark.parametrize("body, message", [
    ({"name": "t", "format": "Lance"}, "format must start with a lowercase letter"),
    ({"name": "t", "format": "lance", "schema": {"x": "y" * (1024 * 1024)}}, "exceeds the limit"),
    ({"name": "", "format": "lance"}, ""),
    ({"format": "lance"}, ""),
])
def test_bad_input_appends_nothing(client, warehouse, log_length, body, message):
    _namespace(client, warehouse["prefix"], "ns")
    before = log_length()
    r = client.post(f"/lakekeeper/v1/{warehouse['id']}/namespaces/ns/generic-tables", json=body)
    assert r.status_code == 400, r.text
    assert message in r.json()["error"]["message"]
    assert log_length() == before


def test_missing_namespace_and_warehouse(client, warehouse):
    r = client.get(f"/lakekeeper/v1/{warehouse['id']}/namespaces/nowhere/generic-tables/t")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchGenericTableException"
    r = client.get(f"/lakekeeper/v1/{uuid.uuid4()}/namespaces/ns/generic-tables")
    assert r.status_code == 404


def test_protection_refuses_a_drop_without_force(client, warehouse):
    _namespace(client, warehouse["prefix"], "ns")
    base = f"/lakekeeper/v1/{warehouse['id']}/namespaces/ns/generic-tables"
    assert client.post(base, json={"name": "kept", "format": "delta"}).status_code == 200
    [listed] = client.get(base).json()["identifiers"]
    protection = f"/management/v1/warehouse/{warehouse['id']}/generic-table/{listed['id']}/protection"
    r = client.post(protection, json={"protected": True})
    assert r.status_code == 200 and r.json()["protected"] is True, r.text
    assert client.get(f"{base}/kept").json()["table"]["protected"] is True
    r = client.delete(f"{base}/kept")
    assert r.status_code == 409, r.text
    assert client.delete(f"{base}/kept", params={"force": "true"}).status_code == 204
    assert client.get(protection).status_code == 404


def test_permissions_of_a_generic_table(client, warehouse):
    """Lakekeeper's permission endpoints under generic-table: with authorization off every action is allowed."""
    _namespace(client, warehouse["prefix"], "ns")
    base = f"/lakekeeper/v1/{warehouse['id']}/namespaces/ns/generic-tables"
    assert client.post(base, json={"name": "g", "format": "lance"}).status_code == 200
    [listed] = client.get(base).json()["identifiers"]
    r = client.get(f"/management/v1/permissions/warehouse/{warehouse['id']}/generic-table/{listed['id']}/access")
    assert r.status_code == 200, r.text
    actions = set(r.json()["allowed-actions"])
    assert {"drop", "undrop", "read_data", "write_data", "get_metadata", "rename"} <= actions
    r = client.post("/management/v1/permissions/check", json={"operation": {"generic-table": {
        "action": "read_data", "generic-table-id": listed["id"], "warehouse-id": warehouse["id"]}}})
    assert r.status_code == 200 and r.json()["allowed"] is True, r.text


def test_remote_signing_stays_inside_the_generic_tables_location(client, minio, bucket):
    """An S3 warehouse without STS: a generic table's load hands out Lakeledger's signer, which signs requests inside
    its location only."""
    name = f"sign-{uuid.uuid4().hex[:8]}"
    r = client.post("/management/v1/warehouse", json={"warehouse-name": name, "storage-profile": minio.profile(
        bucket, name), "storage-credential": minio.credential()})
    assert r.status_code == 201, r.text
    warehouse_id = r.json()["warehouse-id"]
    _namespace(client, f"/catalog/v1/{warehouse_id}", "ns")
    base = f"/lakekeeper/v1/{warehouse_id}/namespaces/ns/generic-tables"
    assert client.post(base, json={"name": "signed", "format": "parquet"}).status_code == 200
    r = client.get(f"{base}/signed", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
    assert r.status_code == 200, r.text
    config, location = r.json()["config"], r.json()["table"]["base-location"]
    assert config["s3.remote-signing-enabled"] == "true" and not r.json().get("storage-credentials")
    sign = f"/catalog/{config['s3.signer.endpoint']}"
    key = location.removeprefix(f"s3://{bucket}/")

    def signed(uri: str):
        return client.post(sign, json={"region": "us-east-1", "method": "PUT", "headers": {}, "uri": uri})

    assert signed(f"{minio.endpoint}/{bucket}/{key}/part-0.parquet").status_code == 200
    r = signed(f"{minio.endpoint}/{bucket}/{key}-beside/part-0.parquet")
    assert r.status_code == 403 and "outside the table's location" in r.json()["error"]["message"]


def test_a_purging_drop_removes_its_files(server, client, minio, s3_warehouse):
    """A final drop that asks for a purge (here the warehouse's default) has the purge worker delete the files
    engines wrote at its location; a drop with purgeRequested=false keeps them."""
    _namespace(client, s3_warehouse["prefix"], "ns")
    with _client(server, s3_warehouse["id"]) as lk:
        locations = {}
        for name in ("purged", "kept"):
            lk.generic_tables.create("ns", name, format="parquet")
            loaded = lk.generic_tables.load("ns", name, vended=True)
            vended = _vended(loaded)
            s3 = minio.client(key=vended["s3.access-key-id"], secret=vended["s3.secret-access-key"],
                              token=vended["s3.session-token"])
            bucket, key = loaded.location.removeprefix("s3://").split("/", 1)
            s3.put_object(Bucket=bucket, Key=f"{key}/part-0.parquet", Body=b"rows")
            locations[name] = key
    base = f"/lakekeeper/v1/{s3_warehouse['id']}/namespaces/ns/generic-tables"
    assert client.delete(f"{base}/purged").status_code == 204
    assert client.delete(f"{base}/kept", params={"purgeRequested": "false"}).status_code == 204
    bucket = s3_warehouse["bucket"]
    wait_until(lambda: not minio.keys(bucket, f"{locations['purged']}/"), 30, "the purge of the generic table")
    assert minio.keys(bucket, f"{locations['kept']}/") == [f"{locations['kept']}/part-0.parquet"]


def test_an_idempotent_create_is_answered_once(client, warehouse, log_length):
    _namespace(client, warehouse["prefix"], "ns")
    base = f"/lakekeeper/v1/{warehouse['id']}/namespaces/ns/generic-tables"
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = client.post(base, json={"name": "once", "format": "lance"}, headers=key)
    assert first.status_code == 200, first.text
    after = log_length()
    again = client.post(base, json={"name": "once", "format": "lance"}, headers=key)
    assert again.status_code == 200 and again.json() == first.json()
    assert again.headers.get("idempotent-replayed") == "true" and log_length() == after


def test_a_recursive_namespace_drop_takes_it_along_and_the_undrop_brings_it_back(client, warehouse):
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/delete-profile", json={"delete-profile": HOUR})
    assert r.status_code == 200, r.text
    namespace_id = _namespace(client, warehouse["prefix"], "landing")
    base = f"/lakekeeper/v1/{warehouse['id']}/namespaces/landing/generic-tables"
    assert client.post(base, json={"name": "csvs", "format": "csv"}).status_code == 200
    r = client.delete(f"{warehouse['prefix']}/namespaces/landing", params={"recursive": "true"})
    assert r.status_code == 204, r.text
    assert client.get(f"{base}/csvs").status_code == 404
    deleted = client.get(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars").json()["tabulars"]
    [entry] = [d for d in deleted if d["name"] == "csvs"]
    assert entry["typ"] == "generic-table" and entry["dropped-with"] == namespace_id
    r = client.post(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars/undrop",
                    json={"targets": [{"type": "namespace", "id": namespace_id}]})
    assert r.status_code == 204, r.text
    r = client.get(f"{base}/csvs")
    assert r.status_code == 200 and r.json()["table"]["format"] == "csv"
