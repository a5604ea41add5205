"""RFC 3339 instants as people and clients write them: a full date-time with an offset."""

import re
from datetime import datetime

# A "+" that arrived unencoded in a query string reads as a space.
_RFC3339 = re.compile(r"^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+ -]\d{2}:\d{2})$")


def parse_instant(text: str) -> datetime:
    """The instant ``text`` names; ValueError when it is not an RFC 3339 date-time with an offset."""
    m = _RFC3339.match(text)
    if m is None:
        raise ValueError(f"Not an RFC 3339 instant (like 2026-11-01T00:00:00Z): {text!r}")
    date, time, fraction, offset = m.groups()
    offset = "+00:00" if offset in ("Z", "z") else offset.replace(" ", "+")
    # Python reads at most microseconds; finer digits cannot matter to event timestamps.
    fraction = (fraction or ".0")[:7]
    try:
        return datetime.fromisoformat(f"{date}T{time}{fraction}{offset}")
    except ValueError:
        raise ValueError(f"Not a valid instant: {text!r}") from None
