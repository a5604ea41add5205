"""Rotating a warehouse's storage credential, as the aggregate decides it."""

from uuid import uuid4

import pytest

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_credential import SecretRef
from lakeledger.domain.storage_profile import FileStorageProfile, HardDelete, S3StorageProfile
from lakeledger.domain.warehouse import Warehouse

BY = Provenance(actor="tester", request_id="r-1")


def _s3_warehouse() -> Warehouse:
    profile = S3StorageProfile(bucket="lake", region="us-east-1", key_prefix="p")
    return Warehouse.create(uuid4(), uuid4(), "w", profile, HardDelete(), BY, storage_secret=_secret())


def _secret() -> SecretRef:
    return SecretRef(secret_id=uuid4(), fingerprint="f")


def test_a_credential_replaces_the_last_one():
    wh, new = _s3_warehouse(), _secret()
    wh.rotate_credential(new, BY)
    assert wh.secret() == new


def test_a_file_warehouse_takes_no_credential():
    wh = Warehouse.create(uuid4(), uuid4(), "w", FileStorageProfile(location="file:///w"), HardDelete(), BY)
    with pytest.raises(BadRequest, match="file storage, which takes no credential"):
        wh.rotate_credential(_secret(), BY)


def test_a_warehouse_that_needs_a_credential_refuses_none():
    # the service read a profile without a credential; the warehouse's storage changed to S3 before the command ran
    wh = _s3_warehouse()
    with pytest.raises(BadRequest, match="s3 storage, which needs a credential"):
        wh.rotate_credential(None, BY)
    assert not [e for e in wh.collect_events() if type(e).__name__ == "StorageCredentialRotated"]
