"""Table metadata files, cached by location.

A metadata file is never changed once written, so its location is a perfect cache key: the bytes
we serve for loadTable and the parsed metadata a commit builds on can be kept for as long as memory
allows, in every process, without invalidation."""

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import orjson

from lakeledger.domain.errors import BadRequest, InvalidArgument
from lakeledger.domain.table_metadata import TableMetadata, parse, serialize
from lakeledger.storage import Storage

ALL_SNAPSHOTS = "all"
REFS_SNAPSHOTS = "refs"


def referenced_snapshots_only(metadata: TableMetadata) -> TableMetadata:
    """The metadata with only the snapshots a branch or tag points at (loadTable's snapshots=refs)."""
    referenced = {ref.snapshot_id for ref in metadata.refs.values()}
    return metadata.model_copy(update={"snapshots": [s for s in metadata.snapshots if s.snapshot_id in referenced]})


def load_result_body(metadata_location: str | None, metadata: bytes) -> bytes:
    """An Iceberg LoadTableResult, assembled around the stored metadata bytes (never re-serialised)."""
    return (b'{"metadata-location":' + orjson.dumps(metadata_location) + b',"metadata":' + metadata
            + b',"config":{}}')


# Parsed metadata (pydantic models) holds about 5.7 times the bytes of its JSON (measured on a 100-snapshot table)
PARSED_WEIGHT = 6


@dataclass
class _Entry:
    data: bytes
    parsed: TableMetadata | None = None
    response: dict[str, bytes] = field(default_factory=dict)  # rendered response bodies, keyed by their variant
    weight: int = 0  # estimated bytes held: the file, its parsed form, the rendered responses


class MetadataFiles:
    """An LRU of metadata files bounded by count and by the memory they hold (``max_bytes``, estimated): every
    commit adds a new file, and without the byte bound the superseded versions of big tables fill the memory."""

    def __init__(self, capacity: int = 2048, max_bytes: int = 32 * 2**20):
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _get(self, location: str) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(location)
            if entry is not None:
                self._entries.move_to_end(location)
            return entry

    def _put(self, location: str, entry: _Entry) -> _Entry:
        entry.weight = len(entry.data) * (1 + (PARSED_WEIGHT if entry.parsed is not None else 0))
        with self._lock:
            old = self._entries.pop(location, None)
            if old is not None:
                self._bytes -= old.weight
            self._entries[location] = entry
            self._bytes += entry.weight
            self._evict()
        return entry

    def _grew(self, location: str, entry: _Entry, added: int) -> None:
        with self._lock:
            entry.weight += added
            if self._entries.get(location) is entry:
                self._bytes += added
                self._evict()

    def _evict(self) -> None:
        # the newest entry stays even if it alone is over the bound: it is about to be used
        while len(self._entries) > 1 and (len(self._entries) > self._capacity or self._bytes > self._max_bytes):
            self._bytes -= self._entries.popitem(last=False)[1].weight

    @property
    def bytes_held(self) -> int:
        return self._bytes

    def entry(self, location: str, storage: Storage) -> _Entry:
        entry = self._get(location)
        if entry is None:
            entry = self._put(location, _Entry(data=storage.read(location)))
        return entry

    def data(self, location: str, storage: Storage) -> bytes:
        return self.entry(location, storage).data

    def parsed(self, location: str, storage: Storage) -> TableMetadata:
        return self._parse(location, self.entry(location, storage))

    def _parse(self, location: str, entry: _Entry) -> TableMetadata:
        if entry.parsed is None:
            try:
                entry.parsed = parse(entry.data)
            except Exception as e:
                # invalid metadata is an invalid argument, as Iceberg's reference server answers it
                raise InvalidArgument(f"Cannot read table metadata at {location}: {e}") from None
            self._grew(location, entry, len(entry.data) * PARSED_WEIGHT)
        return entry.parsed

    def write(self, location: str, metadata: TableMetadata, storage: Storage,
              base: TableMetadata | None = None) -> bytes:
        """Writes ``metadata`` as a new file; ``base`` is the metadata it was committed on, if any."""
        data = serialize(metadata, base)
        try:
            storage.write_new(location, data)
        except FileExistsError:
            raise BadRequest(f"Metadata file already exists: {location}") from None
        self._put(location, _Entry(data=data, parsed=metadata))
        return data

    def response_body(self, location: str, snapshots: str = ALL_SNAPSHOTS) -> bytes | None:
        """The LoadTableResult for ``location`` if its file is cached; None means a storage read is needed.
        ``snapshots`` is the loadTable parameter: "all", or "refs" for only the snapshots of branches and tags."""
        entry = self._get(location)
        if entry is None:
            return None
        return self._response_body(location, entry, snapshots)

    def _response_body(self, location: str, entry: _Entry, snapshots: str) -> bytes:
        body = entry.response.get(snapshots)
        if body is None:
            if snapshots == REFS_SNAPSHOTS:
                data = serialize(referenced_snapshots_only(self._parse(location, entry)))
            else:
                data = entry.data
            body = entry.response[snapshots] = load_result_body(location, data)
            self._grew(location, entry, len(body))
        return body

    def load_response_body(self, location: str, storage: Storage, snapshots: str = ALL_SNAPSHOTS) -> bytes:
        # from the entry itself: looked up again, it may have been evicted meanwhile by another thread's put
        return self._response_body(location, self.entry(location, storage), snapshots)

    def forget(self, location: str) -> None:
        with self._lock:
            entry = self._entries.pop(location, None)
            if entry is not None:
                self._bytes -= entry.weight
