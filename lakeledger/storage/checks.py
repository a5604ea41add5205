"""Proof that a storage profile works, run before a warehouse is created or its storage changed: a failure is a
400 that says what failed, and nothing is recorded."""

import os

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_credential import (
    AzClientCredential,
    AzSharedAccessKeyCredential,
    GcsServiceAccountKeyCredential,
    GcsSystemIdentityCredential,
    S3AccessKeyCredential,
    StorageCredential,
)
from lakeledger.domain.storage_profile import (
    AdlsStorageProfile,
    FileStorageProfile,
    GcsStorageProfile,
    S3StorageProfile,
    StorageProfile,
    check_no_dot_segments,
)


def prove_access(profile: StorageProfile, credential: StorageCredential | None) -> None:
    check_no_dot_segments(profile.base_location())  # every table's location begins with it
    if isinstance(profile, FileStorageProfile):
        _prepare_directory(profile)
    elif isinstance(profile, S3StorageProfile):
        from lakeledger.storage.s3_check import prove_access as prove_s3

        # an S3 profile always comes with an S3 credential (parse_storage_credential)
        assert isinstance(credential, S3AccessKeyCredential)
        prove_s3(profile, credential)
    elif isinstance(profile, AdlsStorageProfile):
        from lakeledger.storage.adls_check import prove_access as prove_adls

        assert isinstance(credential, (AzSharedAccessKeyCredential, AzClientCredential))
        prove_adls(profile, credential)
    elif isinstance(profile, GcsStorageProfile):
        from lakeledger.storage.gcs_check import prove_access as prove_gcs  # google-cloud-storage loads only here

        assert isinstance(credential, GcsServiceAccountKeyCredential | GcsSystemIdentityCredential)
        prove_gcs(profile, credential)


def _prepare_directory(profile: FileStorageProfile) -> None:
    path = profile.local_path(profile.location)
    try:
        os.makedirs(path, exist_ok=True)
    except (OSError, ValueError) as e:
        raise BadRequest(f"Cannot use {profile.location} as warehouse storage: {getattr(e, 'strerror', None) or e}") \
            from None
    if not os.access(path, os.W_OK):
        raise BadRequest(f"Cannot use {profile.location} as warehouse storage: not writable")
