import threading
from typing import Protocol
from uuid import UUID

from lakeledger.domain.errors import Unsupported
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


def open_storage(profile: StorageProfile, credential: StorageCredential | None) -> Storage:
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
