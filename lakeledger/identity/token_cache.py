"""Tokens already verified, so that a client sending the same bearer token on every call (every engine does, for
the token's whole lifetime) pays one signature check, not one per request."""

import threading
import time
from collections import OrderedDict

from lakeledger.identity.principal import Principal


class VerifiedTokens:
    """A bounded LRU of token -> (principal, until). Keyed by the whole token, never by its signature alone: a
    signature copied onto another header and payload must miss and be verified (and fail)."""

    def __init__(self, max_entries: int = 10_000):
        self.max_entries = max_entries
        self._entries: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        # verification runs on worker threads (a JWKS fetch blocks), lookups on the event loop
        self._lock = threading.Lock()

    def get(self, token: str) -> Principal | None:
        with self._lock:
            entry = self._entries.get(token)
            if entry is None:
                return None
            if time.time() >= entry[1]:
                del self._entries[token]
                return None
            self._entries.move_to_end(token)
            return entry[0]

    def put(self, token: str, principal: Principal, until: float) -> None:
        """``until``: the wall-clock second (as ``exp``, leeway included) after which the token is refused again."""
        with self._lock:
            self._entries[token] = (principal, until)
            self._entries.move_to_end(token)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)
