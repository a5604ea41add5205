"""How an event is named outside the log: a stable id and a type. The history API, CloudEvents and the
replay sinks all use these, so one event has one id wherever it appears (a consumer de-duplicates on it)."""

from functools import lru_cache
from hashlib import sha1
from uuid import UUID

_EVENTS = UUID("0b6c7f3e-8a41-5d2c-9e17-4c1f2a9d6b30")


# uuid5's own steps, done once: a rebuild names every event, and the library's uuid5 was a tenth of its time
_PREFIX = _EVENTS.bytes
_KEEP = ~(0xF000 << 64) & ~(0xC000 << 48)  # version and variant bits cleared...
_SET = (5 << 76) | (0x8000 << 48)  # ...then set to version 5, RFC 4122 variant


def event_id(originator_id: UUID, originator_version: int) -> UUID:
    """Deterministic: an event's aggregate and version identify it for ever (``uuid5`` of both)."""
    digest = sha1(_PREFIX + f"{originator_id}:{originator_version}".encode()).digest()
    return UUID(int=int.from_bytes(digest[:16], "big") & _KEEP | _SET)


@lru_cache(maxsize=1024)  # a few dozen topics, named for every event a rebuild or a sink handles
def event_type(topic: str) -> str:
    """``lakeledger.domain.table:Table.Committed`` → ``table.committed``; ``NameClaim.Created`` →
    ``name-claim.created``."""
    qualname = topic.rpartition(":")[2]
    parts = qualname.split(".")
    return ".".join(_kebab(part) for part in parts[-2:])


def _kebab(name: str) -> str:
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i:
            out.append("-")
        out.append(c.lower())
    return "".join(out)


def event_type_of(topic: str, event: object) -> str:
    """``event_type``, except that renames and drops, recorded once for tables and views alike
    (``tabular.renamed``), are named for the kind they carry: ``table.renamed``, ``view.dropped``."""
    name = event_type(topic)
    typ = getattr(event, "typ", None)
    if name.startswith("tabular.") and isinstance(typ, str):
        return f"{typ}.{name.removeprefix('tabular.')}"
    return name
