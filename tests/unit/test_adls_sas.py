"""The SAS tokens an ADLS warehouse vends, signed with a shared key (no I/O): scoped to the table's directory, with
the caller's rights and the profile's validity, and cached like STS credentials."""

import base64
from datetime import UTC, datetime
from urllib.parse import parse_qs

from lakeledger.domain.storage_credential import AzSharedAccessKeyCredential
from lakeledger.domain.warehouse import parse_storage_profile
from lakeledger.storage.adls_sas import AdlsSasVendor, directory_sas

KEY = AzSharedAccessKeyCredential.model_validate(
    {"credential-type": "shared-access-key", "key": base64.b64encode(b"unit-test-account-key").decode()})
PROFILE = parse_storage_profile({"type": "adls", "account-name": "acct", "filesystem": "lake", "key-prefix": "wh",
                                 "sas-token-validity-seconds": 1800})
TABLE = "abfss://lake@acct.dfs.core.windows.net/wh/ns-id/table-id"


def _fields(token: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(token).items()}


def test_a_directory_sas_on_the_table_with_the_callers_rights_and_the_profiles_validity():
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    writer = directory_sas(PROFILE, KEY, TABLE, write=True, now=now)
    fields = _fields(writer.token)
    assert fields["sr"] == "d" and fields["sdd"] == "3"  # wh/ns-id/table-id
    assert fields["sp"] == "racwdl"
    assert fields["se"] == "2026-01-02T03:34:05Z" and fields["st"] == "2026-01-02T03:03:05Z"
    assert writer.expires_at_ms == int(datetime(2026, 1, 2, 3, 34, 5, tzinfo=UTC).timestamp() * 1000)
    assert KEY.key not in writer.token
    assert _fields(directory_sas(PROFILE, KEY, TABLE, write=False, now=now).token)["sp"] == "rl"


def test_tokens_are_cached_per_table_and_right_until_the_margin_before_expiry():
    now = [1_800_000_000.0]
    vendor = AdlsSasVendor(clock=lambda: now[0])
    first = vendor.vend("secret", PROFILE, KEY, TABLE, write=True)
    assert vendor.vend("secret", PROFILE, KEY, TABLE + "/", write=True) == first
    assert vendor.cached("secret", PROFILE, TABLE, write=False) is None
    assert vendor.cached("secret", PROFILE, TABLE + "-other", write=True) is None
    now[0] += 1800 - 450 + 1  # a quarter of 1800 s left: no longer handed out
    assert vendor.cached("secret", PROFILE, TABLE, write=True) is None
    assert vendor.vend("secret", PROFILE, KEY, TABLE, write=True) != first
