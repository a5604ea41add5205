"""Reading and writing the files a warehouse's storage profile points at."""

from lakeledger.domain.errors import Unsupported
from lakeledger.domain.storage_profile import FileStorageProfile, StorageProfile
from lakeledger.storage.base import Storage
from lakeledger.storage.file import FileStorage


def storage_for(profile: StorageProfile) -> Storage:
    if isinstance(profile, FileStorageProfile):
        return FileStorage(profile)
    raise Unsupported(f"Storage of type {profile.type} is not available in this release")


__all__ = ["Storage", "FileStorage", "storage_for"]
