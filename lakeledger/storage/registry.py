import threading
from collections.abc import Callable
from typing import Protocol, TypeVar
from uuid import UUID

from lakeledger.domain.errors import StorageUnavailable, Unsupported
from lakeledger.domain.storage_credential import (
    AzClientCredential,
    AzSharedAccessKeyCredential,
    GcsServiceAccountKeyCredential,
    GcsSystemIdentityCredential,
    S3AccessKeyCredential,
    SecretRef,
    StorageCredential,
    credential_from_secret,
)
from lakeledger.domain.storage_profile import (
    AdlsStorageProfile,
    FileStorageProfile,
    GcsStorageProfile,
    S3StorageProfile,
    StorageProfile,
)
from lakeledger.secretstore import SecretStore
from lakeledger.storage.base import Storage
from lakeledger.storage.file import FileStorage


class HasStorage(Protocol):
    """A warehouse as commands and workers see it: the aggregate, or its settings from the read model."""

    def profile(self) -> StorageProfile: ...

    def secret(self) -> SecretRef | None: ...


T = TypeVar("T")


class Guarded:
    """A storage adapter whose failures of the store itself (unreachable, overloaded, refusing the catalog's own
    credential: the adapter's ``failures``) leave as StorageUnavailable, answered 503 with Retry-After: nothing was
    changed and asking again may succeed. What the adapter means to raise (a file that exists, a missing one, a
    location it refuses) passes through."""

    def __init__(self, inner: Storage, failures: tuple[type[BaseException], ...]):
        self.inner = inner
        self.failures = failures

    def _guard(self, what: str, location: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except FileExistsError:
            raise
        except self.failures as e:
            raise StorageUnavailable(f"The warehouse's storage could not {what} {location}: "
                                     f"{type(e).__name__}: {str(e)[:300]}") from e

    def write_new(self, location: str, data: bytes) -> None:
        self._guard("write", location, lambda: self.inner.write_new(location, data))

    def read(self, location: str) -> bytes:
        return self._guard("read", location, lambda: self.inner.read(location))

    def prepare_table_location(self, location: str) -> None:
        self._guard("prepare", location, lambda: self.inner.prepare_table_location(location))

    def delete(self, location: str) -> None:
        self._guard("delete", location, lambda: self.inner.delete(location))

    def delete_tree(self, location: str, max_files_per_second: float = 0) -> int:
        return self._guard("delete", location, lambda: self.inner.delete_tree(location, max_files_per_second))


def open_storage(profile: StorageProfile, credential: StorageCredential | None) -> Storage:
    adapter = _adapter(profile, credential)
    return Guarded(adapter, adapter.failures)


def _adapter(profile: StorageProfile, credential: StorageCredential | None) -> Storage:
    if isinstance(profile, FileStorageProfile):
        return FileStorage(profile)
    if isinstance(profile, S3StorageProfile):
        from lakeledger.storage.s3 import S3Storage  # boto3 loads only where S3 is used

        # an S3 warehouse always has an S3 credential (parse_storage_credential)
        assert isinstance(credential, S3AccessKeyCredential)
        return S3Storage(profile, credential)
    if isinstance(profile, AdlsStorageProfile):
        from lakeledger.storage.adls import AdlsStorage  # the Azure SDK loads only where ADLS is used

        assert isinstance(credential, (AzSharedAccessKeyCredential, AzClientCredential))
        return AdlsStorage(profile, credential)
    if isinstance(profile, GcsStorageProfile):
        from lakeledger.storage.gcs import GcsStorage  # google-cloud-storage loads only where GCS is used

        assert isinstance(credential, GcsServiceAccountKeyCredential | GcsSystemIdentityCredential)
        return GcsStorage(profile, credential)
    raise Unsupported(f"Storage of type {profile.type} is not available in this release")


class Storages:
    """Opens a warehouse's storage with its credential from the secret store. Clients are kept per (profile,
    secret): a profile change or a credential rotation is a new key, so nothing is ever invalidated."""

    def __init__(self, secrets: SecretStore):
        self.secrets = secrets
        self._open: dict[tuple[StorageProfile, UUID | None], Storage] = {}
        self._lock = threading.Lock()

    def credential(self, warehouse: HasStorage) -> StorageCredential | None:
        ref = warehouse.secret()
        return credential_from_secret(self.secrets.get(ref.secret_id)) if ref is not None else None

    def of(self, warehouse: HasStorage) -> Storage:
        profile, ref = warehouse.profile(), warehouse.secret()
        key = (profile, ref.secret_id if ref else None)
        with self._lock:
            found = self._open.get(key)
        if found is None:
            found = open_storage(profile, self.credential(warehouse))
            with self._lock:
                self._open[key] = found
        return found
