"""Table metadata as the JSON of a metadata file, without serialising every snapshot on every commit.

pyiceberg serialises each snapshot's summary through a Python callback: about 5 µs a snapshot, 5 ms a commit for a
table of a thousand snapshots, paid again for every commit although a commit adds one snapshot and keeps the rest.
The snapshots a commit keeps are the very objects of its base metadata (they are frozen), so their JSON is kept
per object, and the metadata is written as the rest of it followed by the snapshots. Keyed by the object itself
(its identity, checked through a weak reference, so an address reused by a later object is no hit), never by
snapshot id: an engine retrying a refused commit sends the same snapshot id with other contents."""

import threading
import weakref
from collections import OrderedDict
from typing import Any

# About 600 bytes each (the JSON and the entry); the snapshots themselves are held weakly, never kept alive here.
MAX_SNAPSHOTS_KEPT = 20_000

_kept: OrderedDict[int, tuple[weakref.ref, bytes]] = OrderedDict()
_lock = threading.Lock()


def to_json(metadata: Any) -> bytes:
    """What ``metadata.model_dump_json()`` says, with ``snapshots`` as the last field."""
    snapshots = metadata.snapshots
    if not snapshots or metadata.format_version < 2:  # v1 writes its snapshots without sequence numbers
        return metadata.model_dump_json().encode()
    rest = metadata.model_dump_json(exclude={"snapshots"}).encode()  # never "{}": the format's fields are required
    return rest[:-1] + b',"snapshots":[' + b",".join(_snapshots_json(snapshots)) + b"]}"


def _snapshots_json(snapshots: list) -> list[bytes]:
    found: list[bytes | None] = []
    with _lock:
        for snapshot in snapshots:
            hit = _kept.get(id(snapshot))
            if hit is not None and hit[0]() is snapshot:
                _kept.move_to_end(id(snapshot))
                found.append(hit[1])
            else:
                found.append(None)
    made = {i: snapshots[i].model_dump_json().encode() for i, data in enumerate(found) if data is None}
    if made:
        with _lock:
            for i, data in made.items():
                _kept[id(snapshots[i])] = (weakref.ref(snapshots[i]), data)
                _kept.move_to_end(id(snapshots[i]))
            while len(_kept) > MAX_SNAPSHOTS_KEPT:
                _kept.popitem(last=False)
    return [data if data is not None else made[i] for i, data in enumerate(found)]
