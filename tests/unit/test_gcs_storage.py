"""GCS warehouses without a server: the profile's rules, the credential's shapes, the access boundary's condition
and the token cache."""

import pytest

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.gcs_boundary import cel_literal, table_condition, table_roles
from lakeledger.domain.storage_credential import (
    GcsServiceAccountKeyCredential,
    GcsSystemIdentityCredential,
    parse_storage_credential,
)
from lakeledger.domain.storage_profile import GcsStorageProfile, S3StorageProfile, split_gcs_location
from lakeledger.domain.warehouse import parse_storage_profile
from lakeledger.storage.gcs_sts import DownscopedToken, GcsTokenVendor

KEY = {"type": "service_account", "project_id": "p", "private_key_id": "k1",
       "private_key": "-----BEGIN PRIVATE KEY-----\nMIIsecret\n-----END PRIVATE KEY-----\n",
       "client_email": "sa@p.iam.gserviceaccount.com", "client_id": "1", "auth_uri": "https://a",
       "token_uri": "https://oauth2.googleapis.com/token", "auth_provider_x509_cert_url": "https://c",
       "client_x509_cert_url": "https://d", "universe_domain": "googleapis.com", "extra": "not kept"}


def test_a_gcs_profile_in_lakekeepers_shape():
    profile = parse_storage_profile({"type": "gcs", "bucket": "my-bucket", "key-prefix": "/wh/one/"})
    assert isinstance(profile, GcsStorageProfile)
    assert profile.base_location() == "gs://my-bucket/wh/one"
    assert profile.sts_enabled  # on unless turned off, as in Lakekeeper
    assert profile.check_tabular_location("gs://my-bucket/wh/one/ns/t/") == "gs://my-bucket/wh/one/ns/t"
    for outside in ("gs://my-bucket/wh/other/t", "gs://other/wh/one/t", "s3://my-bucket/wh/one/t",
                    "gs://my-bucket/wh/one/../two/t"):
        with pytest.raises(BadRequest):
            profile.check_tabular_location(outside)
    assert split_gcs_location("gs://b/k/x") == ("b", "k/x")


@pytest.mark.parametrize("bucket", ["ab", "Upper", "-dash", "goog-bucket", "1.2.3.4", "a..b", "x" * 64])
def test_bad_bucket_names_are_refused(bucket):
    with pytest.raises(BadRequest):
        parse_storage_profile({"type": "gcs", "bucket": bucket})


@pytest.mark.parametrize("prefix", ["a//b", "a/../b", ".well-known/acme-challenge/x"])
def test_bad_key_prefixes_are_refused(prefix):
    with pytest.raises(BadRequest):
        parse_storage_profile({"type": "gcs", "bucket": "bucket", "key-prefix": prefix})


def test_the_emulator_endpoints_must_be_http_urls():
    profile = parse_storage_profile({"type": "gcs", "bucket": "bucket", "endpoint": "http://127.0.0.1:4443/",
                                     "sts-endpoint": "http://127.0.0.1:9/v1/token"})
    assert profile.endpoint == "http://127.0.0.1:4443"
    with pytest.raises(BadRequest):
        parse_storage_profile({"type": "gcs", "bucket": "bucket", "endpoint": "ftp://x"})


def test_gcs_credentials_in_lakekeepers_shapes_never_repeat_the_key():
    profile = GcsStorageProfile(bucket="bucket")
    credential = parse_storage_credential({"type": "gcs", "credential-type": "service-account-key", "key": KEY},
                                          profile)
    assert isinstance(credential, GcsServiceAccountKeyCredential)
    assert "MIIsecret" not in repr(credential)
    assert "extra" not in credential.key.model_dump()
    system = parse_storage_credential({"type": "gcs", "credential-type": "gcp-system-identity"}, profile)
    assert isinstance(system, GcsSystemIdentityCredential)
    with pytest.raises(BadRequest) as refused:
        parse_storage_credential({"type": "gcs", "credential-type": "service-account-key",
                                  "key": {**KEY, "private_key": "MIIsecret-without-pem"}}, profile)
    assert "MIIsecret" not in str(refused.value)
    with pytest.raises(BadRequest, match="does not take a gcs credential"):
        parse_storage_credential({"type": "gcs", "credential-type": "gcp-system-identity"},
                                 S3StorageProfile(bucket="bucket"))
    with pytest.raises(BadRequest, match="needs a storage-credential"):
        parse_storage_credential(None, profile)


def test_the_boundary_names_the_table_folder_and_nothing_beside_it():
    condition = table_condition("bucket", "wh/ns/t")
    # a trailing slash: the table at .../t does not reach .../t2
    assert "objects/wh/ns/t/'" in condition and "startsWith('wh/ns/t/')" in condition
    assert table_roles(True) == ("inRole:roles/storage.objectUser",)
    assert table_roles(False) == ("inRole:roles/storage.objectViewer",)


def test_quotes_and_backslashes_cannot_end_the_cel_literal():
    assert cel_literal("it's\\x") == "it\\'s\\\\x"
    assert "'" not in cel_literal("a'b").replace("\\'", "")
    with pytest.raises(BadRequest):
        cel_literal("a\nb")


def test_tokens_are_reused_until_a_quarter_of_their_life_is_left():
    profile = GcsStorageProfile(bucket="bucket")
    now = [1_000_000.0]
    vendor = GcsTokenVendor(clock=lambda: now[0])
    token = DownscopedToken("t", int((now[0] + 3600) * 1000), int(now[0] * 1000), "p")
    vendor._cache.put("secret", profile, "gs://bucket/ns/t", True, token)
    assert vendor.cached("secret", profile, "gs://bucket/ns/t/", True) is token
    assert vendor.cached("secret", profile, "gs://bucket/ns/t", False) is None  # read-only is another token
    now[0] += 2699
    assert vendor.cached("secret", profile, "gs://bucket/ns/t", True) is token
    now[0] += 2
    assert vendor.cached("secret", profile, "gs://bucket/ns/t", True) is None
