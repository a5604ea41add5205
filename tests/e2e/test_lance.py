"""Lance as a real engine of a generic table: pylakekeeper creates a lance generic table on an S3 warehouse on
MinIO and loads it with vended credentials; Lance writes a dataset at the table's location and reads it back with
only those credentials (lance_storage_options, as Lakekeeper's documentation shows), and the same credentials
cannot write beside the table. The dataset's files stay through a soft drop and an undrop."""

import uuid

import lance
import pyarrow as pa
import pytest
from pylakekeeper import Client, StaticToken


@pytest.fixture
def soft_s3_warehouse(client, s3_warehouse):
    r = client.post(f"/management/v1/warehouse/{s3_warehouse['id']}/delete-profile",
                    json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    assert r.status_code == 200, r.text
    return s3_warehouse


def test_lance_writes_and_reads_with_only_vended_credentials(server, client, minio, soft_s3_warehouse):
    wh = soft_s3_warehouse
    assert client.post(f"{wh['prefix']}/namespaces", json={"namespace": ["ai"]}).status_code == 200
    rows = pa.table({"id": [1, 2, 3], "embedding": [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]],
                     "caption": ["a cat", "a dog", "a bird"]})
    with Client(base_url=server.url, warehouse=wh["id"], auth=StaticToken("unused")) as lk:
        lk.generic_tables.create("ai", "images", format="lance", properties={"embedding-dim": "2"})
        table = lk.generic_tables.load("ai", "images", vended=True)
        options = table.lance_storage_options
        # nothing of the warehouse's own (root) credential reaches the engine
        assert options["aws_access_key_id"] != minio.user and options["aws_session_token"]
        lance.write_dataset(rows, table.location, storage_options=options, mode="overwrite")

        again = lk.generic_tables.load("ai", "images", vended=True)
        dataset = lance.dataset(again.location, storage_options=again.lance_storage_options)
        assert dataset.count_rows() == 3
        assert dataset.to_table(columns=["caption"]).column("caption").to_pylist() == ["a cat", "a dog", "a bird"]

        beside = f"{table.location}-{uuid.uuid4().hex[:6]}"
        with pytest.raises(OSError, match="(?i)access ?denied|403|forbidden"):
            lance.write_dataset(rows, beside, storage_options=options, mode="overwrite")

        bucket, key = table.location.removeprefix("s3://").split("/", 1)
        assert any(k.endswith(".lance") for k in minio.keys(bucket, key))
        lk.generic_tables.drop("ai", "images")
        [entry] = [t for t in client.get(f"/management/v1/warehouse/{wh['id']}/deleted-tabulars").json()["tabulars"]
                   if t["name"] == "images"]
        r = client.post(f"/management/v1/warehouse/{wh['id']}/deleted-tabulars/undrop",
                        json={"targets": [{"type": "generic-table", "id": entry["id"]}]})
        assert r.status_code == 204, r.text
        back = lk.generic_tables.load("ai", "images", vended=True)
        assert lance.dataset(back.location, storage_options=back.lance_storage_options).count_rows() == 3
