"""The ADLS Gen2 storage profile and az credentials (Lakekeeper's shapes): locations, wasbs:// spellings, and
credential errors that never repeat the secret."""

import base64
from uuid import uuid4

import pytest

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_credential import (
    AzClientCredential,
    AzSharedAccessKeyCredential,
    parse_storage_credential,
)
from lakeledger.domain.storage_profile import AdlsStorageProfile, S3StorageProfile, normalize_location
from lakeledger.domain.warehouse import dump_storage_profile, parse_storage_profile

KEY = base64.b64encode(b"an-account-key-for-the-unit-tests").decode()


def _profile(**extra) -> AdlsStorageProfile:
    return parse_storage_profile({"type": "adls", "account-name": "acct", "filesystem": "lake", "key-prefix": "/wh/",
                                  **extra})


def test_locations_are_abfss_in_the_filesystem_under_the_key_prefix():
    profile = _profile()
    assert profile.base_location() == "abfss://lake@acct.dfs.core.windows.net/wh"
    ns, tid = uuid4(), uuid4()
    table = profile.default_table_location(ns, tid)
    assert table == f"abfss://lake@acct.dfs.core.windows.net/wh/{ns}/{tid}"
    assert profile.check_tabular_location(table + "/") == table
    assert profile.blob_name(table + "/metadata/00000.metadata.json") == f"wh/{ns}/{tid}/metadata/00000.metadata.json"
    for outside in ("abfss://lake@acct.dfs.core.windows.net/other/t", "abfss://other@acct.dfs.core.windows.net/wh/t",
                    "abfss://lake@acct2.dfs.core.windows.net/wh/t", "abfss://lake@acct.dfs.core.windows.net/wh",
                    "s3://lake/wh/t", "abfss://lake@acct.dfs.core.windows.net/wh/%2e%2e/x"):
        with pytest.raises(BadRequest):
            profile.check_tabular_location(outside)


def test_a_host_of_its_own_names_the_account_and_the_blob_endpoint():
    profile = _profile(host="dfs.core.chinacloudapi.cn")
    assert profile.base_location() == "abfss://lake@acct.dfs.core.chinacloudapi.cn/wh"
    assert profile.blob_url() == "https://acct.blob.core.chinacloudapi.cn"
    assert _profile().blob_url() == "https://acct.blob.core.windows.net"
    emulated = _profile(endpoint="http://127.0.0.1:10000/acct/")
    assert emulated.blob_url() == "http://127.0.0.1:10000/acct"
    assert emulated.base_location() == "abfss://lake@acct.dfs.core.windows.net/wh"  # the account's name stays


def test_wasbs_is_compared_as_abfss_and_accepted_only_when_allowed():
    spelt = "wasbs://lake@acct.blob.core.windows.net/wh/ns/t"
    assert normalize_location(spelt) == "abfss://lake@acct.dfs.core.windows.net/wh/ns/t"
    with pytest.raises(BadRequest, match="allow-alternative-protocols"):
        _profile().check_tabular_location(spelt)
    allowed = _profile(**{"allow-alternative-protocols": True})
    assert allowed.check_tabular_location(spelt) == "abfss://lake@acct.dfs.core.windows.net/wh/ns/t"


@pytest.mark.parametrize("bad", [
    {"account-name": "Has-Capitals"}, {"account-name": "ab"}, {"filesystem": "a--b"}, {"filesystem": "UPPER"},
    {"key-prefix": "a/../b"}, {"key-prefix": "a//b"}, {"host": "not a host"}, {"endpoint": "ftp://x"},
    {"sas-token-validity-seconds": 0}, {"sas-token-validity-seconds": 7 * 24 * 3600 + 1}, {"unknown": 1},
])
def test_invalid_profiles_are_refused(bad):
    with pytest.raises(BadRequest):
        _profile(**bad)


def test_the_profile_round_trips_through_its_event_shape():
    profile = _profile(host="dfs.core.windows.net", **{"sas-token-validity-seconds": 900,
                                                       "endpoint": "http://127.0.0.1:1/acct"})
    dumped = dump_storage_profile(profile)
    assert dumped["account-name"] == "acct" and dumped["sas-token-validity-seconds"] == 900
    assert parse_storage_profile(dumped) == profile
    assert profile.sas_validity_seconds() == 900 and _profile().sas_validity_seconds() == 3600


def test_az_credentials_of_both_kinds_are_parsed():
    profile = _profile()
    key = parse_storage_credential({"type": "az", "credential-type": "shared-access-key", "key": KEY}, profile)
    assert isinstance(key, AzSharedAccessKeyCredential) and key.key == KEY
    client = parse_storage_credential({"type": "az", "credential-type": "client-credentials", "client-id": "c",
                                       "tenant-id": "t", "client-secret": "s3cr3t"}, profile)
    assert isinstance(client, AzClientCredential) and client.client_secret == "s3cr3t"
    assert KEY not in repr(key) and "s3cr3t" not in repr(client)


def test_credential_errors_never_repeat_the_secret():
    profile = _profile()
    with pytest.raises(BadRequest) as not_base64:
        parse_storage_credential({"type": "az", "credential-type": "shared-access-key", "key": "not base64 !!"},
                                 profile)
    assert "not base64" not in str(not_base64.value)
    with pytest.raises(BadRequest, match="needs a storage-credential"):
        parse_storage_credential(None, profile)
    with pytest.raises(BadRequest, match="does not take a s3 credential"):
        parse_storage_credential({"type": "s3", "credential-type": "access-key", "aws-access-key-id": "a",
                                  "aws-secret-access-key": "b"}, profile)
    s3 = S3StorageProfile(bucket="lake")
    with pytest.raises(BadRequest, match="does not take a az credential"):
        parse_storage_credential({"type": "az", "credential-type": "shared-access-key", "key": KEY}, s3)
