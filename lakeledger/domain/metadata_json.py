"""Table metadata as the JSON of a metadata file, without serialising every snapshot on every commit.

pyiceberg serialises each snapshot's summary through a Python callback: about 5 µs a snapshot, 5 ms a commit for a
table of a thousand snapshots, paid again for every commit although a commit adds one snapshot and keeps the rest.
The same holds, more cheaply, for the snapshot log. A commit's metadata keeps its base's snapshots and log entries
as the very objects (they are frozen) and adds one or two, so the file is written as the rest of the metadata
followed by the two arrays, and each array is the base's bytes followed by the JSON of what is new:

- the base written here (``to_json`` with its own base): its output is remembered with where the two arrays sit
  in it, for as long as the metadata object itself lives (the metadata file cache holds both), so no bytes are
  kept that the cache has let go;
- any other base (a file read back, an expired snapshot): each snapshot's JSON is kept per snapshot object,
  identity checked through a weak reference, so an address reused by a later object is no hit. Never keyed by
  snapshot id: an engine retrying a refused commit sends the same snapshot id with other contents."""

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from operator import is_

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.typedef import IcebergBaseModel

# About 600 bytes each (the JSON and the entry); the snapshots themselves are held weakly, never kept alive here.
MAX_SNAPSHOTS_KEPT = 20_000

_kept: OrderedDict[int, tuple[weakref.ref[Snapshot], bytes]] = OrderedDict()
_lock = threading.Lock()

_LOG_FIELD = b'{"snapshot-log":['
_BETWEEN = b'],"snapshots":['


class _Written:
    """A metadata's output and where its snapshot log and snapshots sit in it."""

    __slots__ = ("ref", "log", "snapshots")

    def __init__(self, ref: weakref.ref[TableMetadata], data: bytes, log: tuple[int, int], snapshots: tuple[int, int]):
        self.ref = ref
        view = memoryview(data)
        self.log = view[log[0]:log[1]]
        self.snapshots = view[snapshots[0]:snapshots[1]]


_written: dict[int, _Written] = {}


def to_json(metadata: TableMetadata, base: TableMetadata | None = None) -> bytes:
    """What ``metadata.model_dump_json()`` says, with ``snapshot-log`` and ``snapshots`` as the last fields.
    ``base``: the metadata this one was committed on, if any."""
    snapshots = metadata.snapshots
    if not snapshots or metadata.format_version < 2:  # v1 writes its snapshots without sequence numbers
        return metadata.model_dump_json().encode()
    before = _written_for(base)
    log = _array(metadata.snapshot_log, base.snapshot_log if before and base else None, before.log if before else None,
                 lambda: _log_json(metadata))
    kept = _array(snapshots, base.snapshots if before and base else None, before.snapshots if before else None,
                  lambda: b",".join(_snapshots_json(snapshots)))
    # never "{}": the format's fields are required
    head = metadata.model_dump_json(exclude={"snapshots", "snapshot_log"}).encode()[:-1] + b',"snapshot-log":['
    # one copy of the whole: a table's arrays are most of its metadata, a hundred kilobytes at a few hundred snapshots
    data = b"".join((head, *log, _BETWEEN, *kept, b"]}"))
    log_at = len(head)
    log_end = log_at + sum(map(len, log))
    snapshots_at = log_end + len(_BETWEEN)
    _remember(metadata, data, (log_at, log_end), (snapshots_at, snapshots_at + sum(map(len, kept))))
    return data


def _array(items: Sequence[IcebergBaseModel], base_items: Sequence[IcebergBaseModel] | None,
           base_json: memoryview | None, every: Callable[[], bytes]) -> list[bytes | memoryview]:
    """The JSON inside an array's brackets, in parts: the base's bytes and the new items' when ``items`` starts with
    the base's very objects, otherwise ``every()``."""
    if base_items is not None and base_json is not None and len(items) >= len(base_items) \
            and all(map(is_, items, base_items)):
        added = [item.model_dump_json().encode() for item in items[len(base_items):]]
        if not base_items:
            return [b",".join(added)]
        return [base_json, b",", b",".join(added)] if added else [base_json]
    return [every()]


def _log_json(metadata: TableMetadata) -> bytes:
    return metadata.model_dump_json(include={"snapshot_log"}).encode()[len(_LOG_FIELD):-2]


def _written_for(base: TableMetadata | None) -> _Written | None:
    if base is None:
        return None
    found = _written.get(id(base))
    return found if found is not None and found.ref() is base else None


def _remember(metadata: TableMetadata, data: bytes, log: tuple[int, int], snapshots: tuple[int, int]) -> None:
    key = id(metadata)

    def forget(ref: weakref.ref[TableMetadata]) -> None:
        found = _written.get(key)
        if found is not None and found.ref is ref:
            _written.pop(key, None)

    _written[key] = _Written(weakref.ref(metadata, forget), data, log, snapshots)


def _snapshots_json(snapshots: Sequence[Snapshot]) -> list[bytes]:
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
