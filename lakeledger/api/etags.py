"""ETags of table loads. A metadata file never changes once written, so its location (plus which snapshots
a response includes) identifies a load response exactly: the tag is derived from them without
reading or hashing the body, and a client revalidating with ``If-None-Match`` costs one lookup."""

import hashlib
from functools import lru_cache

from lakeledger.services.metadata_files import ALL_SNAPSHOTS


@lru_cache(maxsize=8192)  # hot tables are revalidated over and over; a tag is ~40 bytes
def etag(metadata_location: str, snapshots: str = ALL_SNAPSHOTS) -> str:
    digest = hashlib.blake2b(f"{snapshots}\n{metadata_location}".encode(), digest_size=16).hexdigest()
    return f'"{digest}"'


def matches(if_none_match: str | None, tag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``tag`` (weak comparison, as RFC 9110 asks for it)."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == tag:
            return True
    return False
