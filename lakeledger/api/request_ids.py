"""Request ids minted for requests that bring none: version-4 UUIDs cut from a buffer of the system's random bytes.

``os.urandom`` lets go of the GIL for its system call; taking it back behind the threads that run commits held the
event loop for about a tenth of a millisecond per request under load. One call per 256 ids pays that once."""

import os
import threading
import uuid

_IDS_PER_DRAW = 256
_lock = threading.Lock()
_random = b""
_at = 0


def new_request_id() -> str:
    global _random, _at
    with _lock:
        if _at >= len(_random):
            _random, _at = os.urandom(16 * _IDS_PER_DRAW), 0
        drawn = _random[_at:_at + 16]
        _at += 16
    return str(uuid.UUID(bytes=drawn, version=4))


def _forget_drawn() -> None:
    """A forked process draws its own: ids left in the parent's buffer would be minted twice."""
    global _random, _at
    _random, _at = b"", 0


os.register_at_fork(after_in_child=_forget_drawn)
