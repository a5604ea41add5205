"""A read-only pyiceberg FileIO over a warehouse's Storage (lakeledger/storage/base.py), so that pyiceberg's own scan
planning reads manifest lists and manifests with the catalog's storage credential, whatever the storage kind, and
a store that fails is the same 503 as any other storage call (registry.Guarded). Manifests are small: each is
read whole, once per open."""

import io

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile

from lakeledger.storage.base import Storage


class _StoredFile(InputFile):
    def __init__(self, location: str, storage: Storage):
        super().__init__(location)
        self._storage = storage
        self._data: bytes | None = None

    def _bytes(self) -> bytes:
        if self._data is None:
            self._data = self._storage.read(self.location)
        return self._data

    def __len__(self) -> int:
        return len(self._bytes())

    def exists(self) -> bool:
        try:
            self._bytes()
        except FileNotFoundError:
            return False
        return True

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._bytes())


class StorageFileIO(FileIO):
    def __init__(self, storage: Storage):
        super().__init__()
        self._storage = storage

    def new_input(self, location: str) -> InputFile:
        return _StoredFile(location, self._storage)

    def new_output(self, location: str) -> OutputFile:
        raise PermissionError("scan planning only reads")

    def delete(self, location: str | InputFile | OutputFile) -> None:
        raise PermissionError("scan planning only reads")
