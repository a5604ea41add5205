"""The vended-credential cache hands out a table's credentials only while enough of their life is left."""

from lakeledger.domain.s3_policy import table_policy
from lakeledger.domain.storage_profile import S3StorageProfile
from lakeledger.storage.s3_sts import S3CredentialVendor, SessionCredentials

LOCATION = "s3://bucket/prefix/ns/t"


def _vendor_at(now: list[float]) -> S3CredentialVendor:
    return S3CredentialVendor(clock=lambda: now[0])


def _seed(vendor: S3CredentialVendor, profile: S3StorageProfile, expires_at_s: float) -> SessionCredentials:
    credentials = SessionCredentials("AK", "SK", "TOKEN", int(expires_at_s * 1000))
    vendor._cache.put("secret", profile, LOCATION, True, credentials)  # as vend() leaves it after an STS call
    return credentials


def test_credentials_are_reused_until_a_quarter_of_their_life_is_left():
    profile = S3StorageProfile(bucket="bucket", **{"sts-token-validity-seconds": 3600})
    now = [1_000_000.0]
    vendor = _vendor_at(now)
    seeded = _seed(vendor, profile, now[0] + 3600)
    assert vendor.cached("secret", profile, LOCATION, True) is seeded
    now[0] += 2699  # 901 s left: still handed out
    assert vendor.cached("secret", profile, LOCATION, True) is seeded
    now[0] += 2  # 899 s left: a client would get too little time
    assert vendor.cached("secret", profile, LOCATION, True) is None


def test_short_lived_credentials_keep_at_least_five_minutes():
    profile = S3StorageProfile(bucket="bucket", **{"sts-token-validity-seconds": 900})
    now = [0.0]
    vendor = _vendor_at(now)
    _seed(vendor, profile, 900)
    now[0] = 599
    assert vendor.cached("secret", profile, LOCATION, True) is not None
    now[0] = 601
    assert vendor.cached("secret", profile, LOCATION, True) is None


def test_credentials_are_per_table_location_and_secret():
    profile = S3StorageProfile(bucket="bucket")
    now = [0.0]
    vendor = _vendor_at(now)
    _seed(vendor, profile, 3600)
    assert vendor.cached("secret", profile, LOCATION + "2", True) is None
    assert vendor.cached("other-secret", profile, LOCATION, True) is None
    assert vendor.cached("secret", profile, LOCATION + "/", True) is not None  # the same location, normalised


def test_the_session_policy_names_only_the_tables_own_prefix():
    policy = table_policy("bucket", "prefix/ns/t", write=True, flavor="aws")
    assert '"arn:aws:s3:::bucket/prefix/ns/t/*"' in policy
    assert '"s3:prefix":["prefix/ns/t/*"]' in policy
    assert "s3:PutObject" in policy
    assert "s3:PutObject" not in table_policy("bucket", "prefix/ns/t", write=False, flavor="aws")
