"""A warehouse whose storage is down: every request that needs the store is a 503 ServiceUnavailableException with
Retry-After (the store, not the request, is at fault, and asking again may succeed), never a 500, and appends
nothing; once the store is back the same requests succeed. Its own MinIO, stopped and started again on the same
port and data."""

import uuid

import pytest
from support import SCHEMA, MinioServer


@pytest.fixture
def own_minio(tmp_path):
    home = tmp_path / "minio"
    home.mkdir()
    holder = {"home": home, "minio": MinioServer(home)}
    yield holder
    holder["minio"].stop()


def _unavailable(r) -> None:
    assert r.status_code == 503, (r.request.method, r.request.url, r.status_code, r.text)
    assert r.json()["error"]["type"] == "ServiceUnavailableException"
    assert "storage" in r.json()["error"]["message"]
    assert int(r.headers["retry-after"]) > 0


def test_requests_that_need_a_store_that_is_down_are_503_and_append_nothing(client, own_minio, log_length):
    minio = own_minio["minio"]
    bucket = minio.make_bucket("down")
    name = f"down-{uuid.uuid4().hex[:8]}"
    created = client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": minio.profile(bucket, name),
        "storage-credential": minio.credential(), "delete-profile": {"type": "hard"}})
    assert created.status_code == 201, created.text
    prefix = f"/catalog/v1/{created.json()['warehouse-id']}"
    assert client.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    table = client.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert table.status_code == 200, table.text
    metadata_location = table.json()["metadata-location"]

    minio.stop()
    before = log_length()
    _unavailable(client.post(f"{prefix}/namespaces/ns/tables", json={"name": "u", "schema": SCHEMA}))
    commit = {"requirements": [{"type": "assert-table-uuid", "uuid": table.json()["metadata"]["table-uuid"]}],
              "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    _unavailable(client.post(f"{prefix}/namespaces/ns/tables/t", json=commit))
    # a file the catalog never read, so not in its cache
    elsewhere = metadata_location.rsplit("/", 1)[0] + "/00000-elsewhere.metadata.json"
    _unavailable(client.post(f"{prefix}/namespaces/ns/register", json={
        "name": "again", "metadata-location": elsewhere}))
    assert log_length() == before

    own_minio["minio"] = MinioServer(own_minio["home"], port=minio.port)
    assert client.post(f"{prefix}/namespaces/ns/tables", json={"name": "u", "schema": SCHEMA}).status_code == 200
    committed = client.post(f"{prefix}/namespaces/ns/tables/t", json=commit)
    assert committed.status_code == 200, committed.text
    assert committed.json()["metadata"]["properties"]["k"] == "v"
