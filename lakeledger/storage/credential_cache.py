"""Vended credentials kept per table until only a useful span of them is left: the one cache behind every storage
kind's vendor (S3 session credentials, ADLS SAS tokens, GCS downscoped tokens). A load that finds fresh enough
credentials here answers without calling the cloud, which is what lets loadTable's fast path serve vended tables."""

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from lakeledger.domain.storage_profile import normalize_location


class Expiring(Protocol):
    @property
    def expires_at_ms(self) -> int: ...


T = TypeVar("T", bound=Expiring)
P = TypeVar("P", bound=Hashable)

# beyond this many entries the expired ones are forgotten rather than the cache growing without bound
_BOUND = 100_000


def margin_ms(validity_ms: float) -> float:
    """How long before expiry a cached credential stops being handed out: a quarter of its validity, at least five
    minutes, at most half of it (what a client is left with is always a useful span)."""
    return min(max(300_000, validity_ms / 4), validity_ms / 2)


class CredentialCache(Generic[P, T]):
    """Credentials by (secret, profile, table location, write): a rotated secret or a changed profile is another
    key, so nothing is ever invalidated. ``validity_ms`` says how long a credential was made to last."""

    def __init__(self, validity_ms: Callable[[P, T], float], clock: Callable[[], float] = time.time) -> None:
        self._validity_ms = validity_ms
        self._clock = clock
        self._entries: dict[tuple[object, P, str, bool], T] = {}
        self._lock = threading.Lock()

    def get(self, secret_key: object, profile: P, location: str, write: bool) -> T | None:
        with self._lock:
            found = self._entries.get((secret_key, profile, normalize_location(location), write))
        if found is None:
            return None
        fresh = found.expires_at_ms - margin_ms(self._validity_ms(profile, found)) > self._clock() * 1000
        return found if fresh else None

    def put(self, secret_key: object, profile: P, location: str, write: bool, credential: T) -> T:
        with self._lock:
            self._entries[(secret_key, profile, normalize_location(location), write)] = credential
            if len(self._entries) > _BOUND:
                now_ms = self._clock() * 1000
                for key in [k for k, v in self._entries.items() if v.expires_at_ms <= now_ms]:
                    del self._entries[key]
        return credential
