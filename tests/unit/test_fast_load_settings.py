"""loadTable's fast path reads a warehouse's storage from the table lookup's columns (lakeledger/services/resolve.py
storage_settings); what it builds must be the same settings the route builds, or the vended-credential cache,
keyed by the secret, is never hit from the fast path."""

import uuid
from datetime import UTC, datetime

import orjson

from lakeledger.domain.storage_credential import SecretRef
from lakeledger.domain.warehouse import PURGE
from lakeledger.projections.catalog_queries import WarehouseRow
from lakeledger.services.resolve import settings_of, storage_settings

PROFILE = {"type": "s3", "bucket": "lakeledger-bench", "key-prefix": "wh", "region": "us-east-1",
           "endpoint": "http://127.0.0.1:9000", "path-style-access": True, "sts-enabled": True}
SECRET = {"secret-id": str(uuid.uuid4()), "fingerprint": "hmac-sha256:00"}


def test_the_fast_paths_settings_carry_the_secret_reference():
    wh_id = uuid.uuid4()
    fast = storage_settings(wh_id, orjson.dumps(PROFILE).decode(), orjson.dumps(SECRET).decode())
    assert fast.secret() == SecretRef.from_event(SECRET)
    assert fast.drop_purge_default == PURGE
    now = datetime.now(UTC)
    route = settings_of(WarehouseRow(id=wh_id, project_id=uuid.uuid4(), name="wh", storage_profile=PROFILE,
                                     storage_secret=SECRET, delete_profile={"type": "hard"},
                                     drop_purge_default=PURGE, status="active", protected=False, created_at=now,
                                     updated_at=None, name_matching="exact"))
    assert (fast.secret(), fast.profile()) == (route.secret(), route.profile())


def test_a_warehouse_without_a_secret_has_none():
    fast = storage_settings(uuid.uuid4(), orjson.dumps(PROFILE).decode(), None)
    assert fast.secret() is None
