"""pyiceberg 0.12 on an S3 warehouse (the session's MinIO) holding no S3 keys of its own: create, append and scan
through vended STS credentials (PyArrowFileIO, pyiceberg's default) and through the catalog's remote signer
(FsspecFileIO with s3.signer=S3V4RestSigner, which the table's config picks: the client names no FileIO)."""

import pyarrow as pa
import pytest
import s3fs
from pyiceberg.catalog.rest import RestCatalog

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([1.5, 2.5, 3.5], pa.float64())})
KEYS = ("s3.access-key-id", "s3.secret-access-key", "s3.session-token")


@pytest.fixture(autouse=True)
def no_ambient_aws_credentials(monkeypatch, tmp_path):
    """Neither botocore (s3fs) nor the AWS SDK in pyarrow may find keys of their own: whatever reaches MinIO
    must come from the catalog."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def _table_files(minio, s3_warehouse, location: str) -> list[str]:
    bucket = s3_warehouse["bucket"]
    assert location.startswith(f"s3://{bucket}/{s3_warehouse['key-prefix']}/"), location
    return minio.keys(bucket, location.split("/", 3)[3] + "/")


def test_vended_credentials_create_append_scan(server, minio, s3_warehouse):
    catalog = RestCatalog("vended", uri=f"{server.url}/catalog", warehouse=s3_warehouse["name"])
    assert not [k for k in KEYS if k in catalog.properties]
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", schema=ROWS.schema)
    # pyiceberg asks for vended credentials by default and hands them to PyArrowFileIO: STS session keys,
    # never the warehouse's own
    assert type(table.io).__name__ == "PyArrowFileIO"
    assert table.io.properties["s3.session-token"]
    assert table.io.properties["s3.access-key-id"] != minio.user
    assert table.io.properties["s3.endpoint"] == minio.endpoint
    table.append(ROWS)
    table.append(ROWS.slice(0, 1))

    loaded = RestCatalog("reader", uri=f"{server.url}/catalog", warehouse=s3_warehouse["name"]) \
        .load_table("sales.orders")
    result = loaded.scan().to_arrow().sort_by("id")
    assert result.column("id").to_pylist() == [1, 1, 2, 3]
    assert len(loaded.metadata.snapshots) == 2
    files = _table_files(minio, s3_warehouse, loaded.metadata.location)
    assert len([k for k in files if k.endswith(".parquet")]) == 2
    assert len([k for k in files if k.endswith(".metadata.json")]) == 3  # create + two appends


@pytest.fixture
def uncached_s3fs(monkeypatch):
    # pyiceberg 0.12's FsspecFileIO builds an s3fs filesystem per thread with botocore signing off, then
    # unregisters and re-registers its remote signer on it. fsspec caches async filesystems across threads, so
    # every scan thread gets the same instance, and a request another thread sends between that unregister and
    # register goes out unsigned (a 403 on a HEAD: 1 run in 8 here, about 1 in 4 elsewhere). Uncached instances
    # avoid it; docs/storage.md tells users to set the same.
    monkeypatch.setattr(s3fs.S3FileSystem, "cachable", False)


def test_remote_signing_create_append_scan(server, minio, s3_warehouse, uncached_s3fs):
    # no py-io-impl of the client's own: pyiceberg's default FileIO (PyArrow) cannot sign, so the table's config
    # must pick FsspecFileIO, as Lakekeeper's does
    catalog = RestCatalog("signing", uri=f"{server.url}/catalog", warehouse=s3_warehouse["name"], **{
        "header.X-Iceberg-Access-Delegation": "remote-signing"})
    assert not [k for k in KEYS if k in catalog.properties] and "py-io-impl" not in catalog.properties
    catalog.create_namespace("signed")
    table = catalog.create_table("signed.orders", schema=ROWS.schema)
    assert type(table.io).__name__ == "FsspecFileIO"
    properties = table.io.properties
    assert not [k for k in KEYS if k in properties], "the signing case must carry no S3 keys"
    assert properties["s3.remote-signing-enabled"] == "true"
    assert properties["s3.signer"] == "S3V4RestSigner"
    assert properties["py-io-impl"] == "pyiceberg.io.fsspec.FsspecFileIO"
    assert properties["s3.signer.uri"] == f"{server.url}/catalog"
    assert properties["s3.signer.endpoint"].startswith("signer/")
    # several data files, so the scan below reads them on concurrent threads (where the pitfall showed)
    for k in range(4):
        table.append(pa.table({"id": pa.array([10 * k + i for i in range(3)], pa.int64()),
                               "amount": pa.array([0.5] * 3, pa.float64())}))

    reader = RestCatalog("signing-reader", uri=f"{server.url}/catalog", warehouse=s3_warehouse["name"], **{
        "header.X-Iceberg-Access-Delegation": "remote-signing"})
    loaded = reader.load_table("signed.orders")  # loadTable's cached fast path: the same config as the route's
    assert type(loaded.io).__name__ == "FsspecFileIO"
    assert not [k for k in KEYS if k in loaded.io.properties]
    for _ in range(3):
        ids = sorted(loaded.scan().to_arrow().column("id").to_pylist())
        assert ids == sorted(10 * k + i for k in range(4) for i in range(3))
    assert loaded.scan(row_filter="id >= 30").to_arrow().num_rows == 3
    files = _table_files(minio, s3_warehouse, loaded.metadata.location)
    assert len([k for k in files if k.endswith(".parquet")]) == 4
    assert len([k for k in files if k.endswith(".metadata.json")]) == 5
