"""Reading and writing the files a warehouse's storage profile points at, and the access engines are given to
them. One module per storage kind; a new kind (GCS, ADLS) is one more profile, one more ``Storage`` and one more
credential vendor."""

from lakeledger.storage.base import Storage
from lakeledger.storage.file import FileStorage
from lakeledger.storage.registry import Storages

__all__ = ["Storage", "FileStorage", "Storages"]
