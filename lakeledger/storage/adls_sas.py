"""SAS tokens for one table of an ADLS Gen2 warehouse: a directory SAS (``sr=d``) on the table's location, so an
engine holding one reaches that directory and nothing else in the account, with read and list only, or also add,
create, write and delete, as the caller's rights allow.

A shared-key warehouse signs them with its account key; a client-credentials warehouse with a user delegation key
obtained from Entra ID. Tokens are cached per table location until a margin before they expire, as S3 session
credentials are (lakeledger/storage/s3_sts.py): a load answered from the cache keeps its ETag."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from lakeledger.domain.storage_credential import (
    AzClientCredential,
    AzCredential,
    AzSharedAccessKeyCredential,
    StorageCredential,
)
from lakeledger.domain.storage_profile import AdlsStorageProfile, normalize_location
from lakeledger.storage.credential_cache import CredentialCache

READ_PERMISSIONS = "rl"
WRITE_PERMISSIONS = "racwdl"
# a client whose clock runs a little behind the storage's may use a token at once
_START_BACKSHIFT = timedelta(seconds=60)


@dataclass(frozen=True)
class SasToken:
    token: str
    expires_at_ms: int


def directory_sas(profile: AdlsStorageProfile, credential: AzCredential,
                  location: str, write: bool, now: datetime | None = None) -> SasToken:
    """A SAS for the directory ``location`` names (one I/O call for a client-credentials warehouse: the user
    delegation key)."""
    from azure.storage.filedatalake import generate_directory_sas  # the Data Lake SDK spells directory SAS

    now = now or datetime.now(UTC)
    start, expiry = now - _START_BACKSHIFT, now + timedelta(seconds=profile.sas_validity_seconds())
    signing_key: Any
    if isinstance(credential, AzSharedAccessKeyCredential):
        signing_key = credential.key
    else:
        from lakeledger.storage.adls import blob_service

        signing_key = blob_service(profile, credential).get_user_delegation_key(start, expiry)
    token = generate_directory_sas(profile.account_name, profile.filesystem,
                                   profile.blob_name(normalize_location(location)), signing_key,
                                   permission=WRITE_PERMISSIONS if write else READ_PERMISSIONS,
                                   expiry=expiry, start=start)
    return SasToken(token, int(expiry.timestamp() * 1000))


class AdlsSasVendor:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._cache: CredentialCache[AdlsStorageProfile, SasToken] = CredentialCache(
            lambda profile, _: profile.sas_validity_seconds() * 1000, clock)

    def cached(self, secret_key: object, profile: AdlsStorageProfile, location: str, write: bool) -> SasToken | None:
        return self._cache.get(secret_key, profile, location, write)

    def vend(self, secret_key: object, profile: AdlsStorageProfile, credential: StorageCredential | None,
             location: str, write: bool = True, renew: bool = False) -> SasToken:
        """``renew``: made now even if the cache holds fresh ones (a client refreshing its credentials)."""
        found = None if renew else self._cache.get(secret_key, profile, location, write)
        if found is not None:
            return found
        # an ADLS warehouse always has an az credential (parse_storage_credential)
        assert isinstance(credential, (AzSharedAccessKeyCredential, AzClientCredential))
        fresh = directory_sas(profile, credential, location, write, now=datetime.fromtimestamp(self._clock(), UTC))
        return self._cache.put(secret_key, profile, location, write, fresh)
