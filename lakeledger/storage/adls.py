"""Files of an ADLS Gen2 warehouse, through the Blob service API of its storage account (azure-storage-blob): it
serves hierarchical-namespace accounts as well as flat ones and emulators such as Azurite, which has no Data Lake
(dfs) endpoint. Metadata files are written with ``If-None-Match: *``, so an existing file is never overwritten."""

import contextlib
import time
from typing import Any

from azure.core.exceptions import (
    AzureError,
    HttpResponseError,
    ResourceExistsError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.storage.blob import BlobServiceClient, ContainerClient

from lakeledger.domain.errors import BadRequest, NotFound
from lakeledger.domain.storage_credential import AzClientCredential, AzCredential, AzSharedAccessKeyCredential
from lakeledger.domain.storage_profile import AdlsStorageProfile, is_within, normalize_location


def token_credential(profile: AdlsStorageProfile, credential: AzClientCredential) -> Any:
    from azure.identity import ClientSecretCredential  # only client-credentials warehouses need Entra ID

    kwargs = {"authority": profile.authority_host} if profile.authority_host else {}
    return ClientSecretCredential(credential.tenant_id, credential.client_id, credential.client_secret, **kwargs)


def blob_service(profile: AdlsStorageProfile, credential: AzCredential, *, timeouts: tuple[float, float] = (5, 30),
                 attempts: int = 3) -> BlobServiceClient:
    secret: Any
    if isinstance(credential, AzSharedAccessKeyCredential):
        secret = {"account_name": profile.account_name, "account_key": credential.key}
    else:
        secret = token_credential(profile, credential)
    return BlobServiceClient(profile.blob_url(), credential=secret, connection_timeout=timeouts[0],
                             read_timeout=timeouts[1], retry_total=max(0, attempts - 1))


class AdlsStorage:
    failures: tuple[type[BaseException], ...] = (HttpResponseError, ServiceRequestError, ServiceResponseError)

    def __init__(self, profile: AdlsStorageProfile, credential: AzCredential):
        self.profile = profile
        self.container: ContainerClient = blob_service(profile, credential).get_container_client(profile.filesystem)

    def _inside(self, location: str) -> str:
        location = normalize_location(location)
        base = self.profile.base_location()
        if not is_within(location, base) or location == base:
            raise BadRequest(f"Refusing to delete {location}: not strictly inside {base}")
        return self.profile.blob_name(location)

    def write_new(self, location: str, data: bytes) -> None:
        try:
            self.container.upload_blob(self.profile.blob_name(location), data, overwrite=False)
        except ResourceExistsError:
            raise FileExistsError(location) from None

    def read(self, location: str) -> bytes:
        try:
            return self.container.download_blob(self.profile.blob_name(location)).readall()
        except ResourceNotFoundError:
            raise NotFound(f"File does not exist: {location}") from None

    def prepare_table_location(self, location: str) -> None:
        """Blobs need no folders; a hierarchical namespace makes a file's directories itself."""

    def delete(self, location: str) -> None:
        with contextlib.suppress(ResourceNotFoundError):
            self.container.delete_blob(self._inside(location))

    def delete_tree(self, location: str, max_files_per_second: float = 0) -> int:
        name = self._inside(location)
        # deepest first: on a hierarchical namespace a directory (listed as a blob too) goes only once it is empty
        names = sorted(self.container.list_blob_names(name_starts_with=name + "/"), key=lambda n: -n.count("/"))
        names.append(name)
        count = 0
        for blob in names:
            started = time.monotonic()
            try:
                self.container.delete_blob(blob)
                count += 1
            except ResourceNotFoundError:
                pass
            if max_files_per_second > 0:
                time.sleep(max(0.0, 1 / max_files_per_second - (time.monotonic() - started)))
        return count


__all__ = ["AdlsStorage", "AzureError", "blob_service", "token_credential"]
