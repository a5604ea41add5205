"""The S3 adapter against MinIO: every key is written, read and deleted exactly as named, whichever client carries it
(obstore for keys it keeps as they are, boto3 for those it would rewrite), an existing file is never overwritten,
and the environment's AWS settings do not reach a warehouse's own client."""

import uuid

import pytest

from lakeledger.domain.errors import NotFound
from lakeledger.domain.storage_credential import S3AccessKeyCredential
from lakeledger.domain.storage_profile import S3StorageProfile
from lakeledger.storage.s3 import S3Storage, _kept_by_object_store


def _storage(minio, bucket, prefix) -> S3Storage:
    return S3Storage(S3StorageProfile.model_validate(minio.profile(bucket, prefix)),
                     S3AccessKeyCredential.model_validate(minio.credential()))


@pytest.mark.parametrize("name", [
    "metadata/00000-a.metadata.json",      # what the catalog writes
    "a b/x=1/ü+%20?#.json",               # spaces, percent signs, query and fragment marks and Unicode stay as named
])
def test_a_key_is_written_read_and_deleted_as_named(minio, bucket, name):
    prefix = f"keys-{uuid.uuid4().hex[:8]}"
    storage = _storage(minio, bucket, prefix)
    location = f"s3://{bucket}/{prefix}/{name}"
    storage.write_new(location, b"first")
    assert minio.keys(bucket, prefix) == [f"{prefix}/{name}"]
    assert storage.read(location) == b"first"
    with pytest.raises(FileExistsError):
        storage.write_new(location, b"second")
    assert storage.read(location) == b"first"
    storage.delete(location)
    assert minio.keys(bucket, prefix) == []
    with pytest.raises(NotFound):
        storage.read(location)


def test_a_file_larger_than_a_multipart_chunk_is_written_once_and_never_overwritten(minio, bucket):
    # metadata files of tables with long histories pass obstore's 5 MB multipart threshold
    prefix = f"big-{uuid.uuid4().hex[:8]}"
    storage = _storage(minio, bucket, prefix)
    location = f"s3://{bucket}/{prefix}/metadata/00001-big.metadata.json"
    first = b"{" + b"0" * (6 * 2**20) + b"}"
    storage.write_new(location, first)
    with pytest.raises(FileExistsError):
        storage.write_new(location, b"{}")
    assert storage.read(location) == first


def test_keys_object_store_would_rewrite_go_through_boto3():
    # AWS keeps these keys as named; object_store refuses or rewrites them, and MinIO refuses them, so only the
    # choice is tested here
    assert _kept_by_object_store("p/metadata/00000-a.metadata.json")
    assert _kept_by_object_store("p/a b/..x/.y/x..")
    for key in ("p//a.json", "p/./a.json", "p/../a.json", "/p/a.json", "p/a/", "p/.", ""):
        assert not _kept_by_object_store(key), key


def test_the_environments_aws_settings_do_not_reach_a_warehouses_client(minio, bucket, monkeypatch):
    # obstore reads AWS_* variables as boto3 does; a session token or a role from the environment joined to the
    # warehouse's key would make MinIO refuse every request, and a skipped signature would be anonymous
    for variable, value in {"AWS_SESSION_TOKEN": "from-the-environment", "AWS_SKIP_SIGNATURE": "true",
                            "AWS_ACCESS_KEY_ID": "someone-else", "AWS_SECRET_ACCESS_KEY": "not-theirs",
                            "AWS_ENDPOINT": "http://127.0.0.1:9", "AWS_REGION": "eu-west-3"}.items():
        monkeypatch.setenv(variable, value)
    prefix = f"env-{uuid.uuid4().hex[:8]}"
    storage = _storage(minio, bucket, prefix)
    location = f"s3://{bucket}/{prefix}/metadata/v1.metadata.json"
    storage.write_new(location, b"{}")
    assert storage.read(location) == b"{}"
    assert minio.keys(bucket, prefix) == [f"{prefix}/metadata/v1.metadata.json"]
