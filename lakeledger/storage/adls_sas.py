"""SAS tokens for one table of an ADLS Gen2 warehouse: a directory SAS (``sr=d``) on the table's location, so an
engine holding one reaches that directory and nothing else in the account, with read and list only, or also add,
create, write and delete, as the caller's rights allow.

A shared-key warehouse signs them with its account key; a client-credentials warehouse with a user delegation key
obtained from Entra ID. Tokens are cached per table location until a margin before they expire, as S3 session
credentials are (lakeledger/storage/s3_sts.py): a load answered from the cache keeps its ETag."""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from lakeledger.domain.storage_credential import AzCredential, AzSharedAccessKeyCredential
from lakeledger.domain.storage_profile import AdlsStorageProfile, normalize_location

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
        self._cache: dict[tuple, SasToken] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _margin_ms(profile: AdlsStorageProfile) -> int:
        """As for S3 session credentials: a quarter of the validity, at least five minutes, at most half of it."""
        validity = profile.sas_validity_seconds()
        return int(min(max(300, validity / 4), validity / 2) * 1000)

    def cached(self, secret_key: object, profile: AdlsStorageProfile, location: str, write: bool) -> SasToken | None:
        key = (secret_key, profile, normalize_location(location), write)
        with self._lock:
            found = self._cache.get(key)
        if found is not None and found.expires_at_ms - self._margin_ms(profile) > self._clock() * 1000:
            return found
        return None

    def vend(self, secret_key: object, profile: AdlsStorageProfile,
             credential: AzCredential, location: str,
             write: bool = True) -> SasToken:
        found = self.cached(secret_key, profile, location, write)
        if found is not None:
            return found
        fresh = directory_sas(profile, credential, location, write,
                              now=datetime.fromtimestamp(self._clock(), UTC))
        with self._lock:
            self._cache[(secret_key, profile, normalize_location(location), write)] = fresh
            if len(self._cache) > 100_000:  # forget the expired ones rather than grow without bound
                now_ms = self._clock() * 1000
                for k in [k for k, v in self._cache.items() if v.expires_at_ms <= now_ms]:
                    del self._cache[k]
        return fresh
