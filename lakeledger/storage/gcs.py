"""Objects in a Google Cloud Storage bucket under a warehouse's key prefix, through google-cloud-storage (or an
emulator such as fake-gcs-server at the profile's ``endpoint``). Metadata files are written with
``ifGenerationMatch=0``, so an existing file is never overwritten."""

import contextlib
import time

import requests
from google.api_core import exceptions as gexceptions
from google.auth.exceptions import GoogleAuthError
from google.cloud import storage as gcs

from lakeledger.domain.errors import BadRequest, NotFound
from lakeledger.domain.storage_credential import GcsServiceAccountKeyCredential
from lakeledger.domain.storage_profile import GcsStorageProfile, is_within, normalize_location, split_gcs_location
from lakeledger.storage.gcs_sts import GcsCredential, source_credentials


def gcs_client(profile: GcsStorageProfile, credential: GcsCredential) -> gcs.Client:
    options = {"api_endpoint": profile.endpoint} if profile.endpoint else None
    project = credential.key.project_id if isinstance(credential, GcsServiceAccountKeyCredential) else None
    return gcs.Client(project=project, credentials=source_credentials(credential), client_options=options)


class GcsStorage:
    failures: tuple[type[BaseException], ...] = (gexceptions.GoogleAPIError, GoogleAuthError, requests.RequestException)

    def __init__(self, profile: GcsStorageProfile, credential: GcsCredential,
                 timeout: tuple[float, float] = (5, 30)):
        self.profile = profile
        self.client = gcs_client(profile, credential)
        self.bucket = self.client.bucket(profile.bucket)
        self.timeout = timeout

    def _key(self, location: str) -> str:
        bucket, key = split_gcs_location(normalize_location(location))
        if bucket != self.profile.bucket or not key:
            raise BadRequest(f"{location} is not an object in bucket {self.profile.bucket}")
        return key

    def _inside(self, location: str) -> str:
        location = normalize_location(location)
        base = self.profile.base_location()
        if not is_within(location, base) or location == base:
            raise BadRequest(f"Refusing to delete {location}: not strictly inside {base}")
        return self._key(location)

    def write_new(self, location: str, data: bytes) -> None:
        try:
            self.bucket.blob(self._key(location)).upload_from_string(data, if_generation_match=0,
                                                                     timeout=self.timeout)
        except gexceptions.PreconditionFailed:
            raise FileExistsError(location) from None

    def read(self, location: str) -> bytes:
        try:
            return self.bucket.blob(self._key(location)).download_as_bytes(timeout=self.timeout)
        except gexceptions.NotFound:
            raise NotFound(f"File does not exist: {location}") from None

    def prepare_table_location(self, location: str) -> None:
        """Object stores have no folders to make."""

    def delete(self, location: str) -> None:
        with contextlib.suppress(gexceptions.NotFound):
            self.bucket.blob(self._inside(location)).delete(timeout=self.timeout)

    def delete_tree(self, location: str, max_files_per_second: float = 0) -> int:
        key = self._inside(location)
        count = 0
        # the object at the location itself (a file-like location), then everything below it as a folder
        names = [key, *(blob.name for blob in self.client.list_blobs(self.bucket, prefix=key + "/",
                                                                      timeout=self.timeout))]
        for name in names:
            started = time.monotonic()
            try:
                self.bucket.blob(name).delete(timeout=self.timeout)
                count += 1
            except gexceptions.NotFound:
                continue
            if max_files_per_second > 0:
                time.sleep(max(0.0, 1 / max_files_per_second - (time.monotonic() - started)))
        return count
