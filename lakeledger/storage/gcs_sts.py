"""Short-lived GCS tokens for one table: the warehouse's service account gets an OAuth2 access token, which
Google's Security Token Service exchanges for a downscoped one under a Credential Access Boundary that names only
the table's location (lakeledger/domain/gcs_boundary.py), so an engine holding it can touch nothing else.

Tokens are cached per table location until shortly before they expire, as S3 session credentials are
(lakeledger/storage/s3_sts.py): a busy table costs one exchange per cache period, not one per load."""

import datetime
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakeledger.domain.errors import BadRequest, StorageUnavailable
from lakeledger.domain.gcs_boundary import bucket_resource, table_condition, table_roles
from lakeledger.domain.storage_credential import (
    GcsServiceAccountKeyCredential,
    GcsSystemIdentityCredential,
    StorageCredential,
)
from lakeledger.domain.storage_profile import GcsStorageProfile, normalize_location, split_gcs_location
from lakeledger.storage.credential_cache import CredentialCache

CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"
GcsCredential = GcsServiceAccountKeyCredential | GcsSystemIdentityCredential
STS_ENDPOINT = "https://sts.googleapis.com/v1/token"
_TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
_ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"


def source_credentials(credential: GcsCredential) -> Any:
    """The google-auth credentials a warehouse's own requests (and the token exchange) start from."""
    if isinstance(credential, GcsSystemIdentityCredential):
        raise BadRequest("gcp-system-identity credentials are not enabled on this server (see server-info's "
                         "gcp-system-identities-enabled): use a service-account-key credential")
    from google.oauth2 import service_account

    try:
        return service_account.Credentials.from_service_account_info(credential.key.model_dump(),
                                                                     scopes=[CLOUD_PLATFORM])
    except (ValueError, TypeError):
        # the library's message may quote the key: say what is wrong, never what it is
        raise BadRequest("Invalid storage-credential: the service account's private_key cannot be read as a "
                         "PEM private key") from None


@dataclass(frozen=True)
class DownscopedToken:
    token: str
    expires_at_ms: int
    obtained_at_ms: int
    project_id: str | None = None


def downscope(profile: GcsStorageProfile, credential: GcsCredential, key_prefix: str, write: bool,
              timeout: float = 30) -> DownscopedToken:
    """A token for the objects below ``key_prefix`` of the profile's bucket, exchanged at the profile's
    ``sts-endpoint`` (Google's STS unless set). Raises google-auth's errors (see ``explain``)."""
    from google.auth import downscoped
    from google.auth.transport.requests import Request
    from google.oauth2 import sts

    request = functools.partial(Request(), timeout=timeout)
    source = source_credentials(credential)
    source.refresh(request)
    boundary = downscoped.CredentialAccessBoundary(rules=[downscoped.AccessBoundaryRule(
        available_resource=bucket_resource(profile.bucket),
        available_permissions=list(table_roles(write)),
        availability_condition=downscoped.AvailabilityCondition(
            expression=table_condition(profile.bucket, key_prefix), title="table-location"))])
    now_ms = int(time.time() * 1000)
    answer = sts.Client(profile.sts_endpoint or STS_ENDPOINT).exchange_token(
        request=request, grant_type=_TOKEN_EXCHANGE, subject_token=source.token, subject_token_type=_ACCESS_TOKEN,
        requested_token_type=_ACCESS_TOKEN, additional_options=boundary.to_json())
    if answer.get("expires_in"):
        expires_at_ms = now_ms + int(answer["expires_in"]) * 1000
    else:  # STS may leave it out: a downscoped token lives as long as the token it was made from
        expiry = source.expiry.replace(tzinfo=datetime.UTC) if source.expiry else None
        expires_at_ms = int(expiry.timestamp() * 1000) if expiry else now_ms + 3600_000
    return DownscopedToken(str(answer["access_token"]), expires_at_ms, now_ms, project_of(credential))


def explain(step: str, e: Exception) -> str:
    """What went wrong, in words that never repeat a token or the key (google-auth's messages may quote the token
    endpoint's answer, which does not hold them, but are kept out all the same)."""
    from google.auth import exceptions as gauth

    if isinstance(e, gauth.TransportError):
        return f"{step}: the token endpoint cannot be reached"
    if isinstance(e, gauth.RefreshError):
        return f"{step}: the service account's token endpoint refused the key"
    if isinstance(e, gauth.OAuthError):
        return f"{step}: the token exchange (STS) refused the request"
    return f"{step}: {type(e).__name__}"


def google_auth_errors() -> tuple[type[Exception], ...]:
    """What a token refresh or exchange raises when it fails (KeyError, ValueError: an answer without a token)."""
    from google.auth import exceptions as gauth

    return (gauth.GoogleAuthError, KeyError, ValueError)


class GcsTokenVendor:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        # a token's validity is what the exchange answered, not a setting
        self._cache: CredentialCache[GcsStorageProfile, DownscopedToken] = CredentialCache(
            lambda _, token: token.expires_at_ms - token.obtained_at_ms, clock)

    def cached(self, secret_key: object, profile: GcsStorageProfile, location: str,
               write: bool) -> DownscopedToken | None:
        return self._cache.get(secret_key, profile, location, write)

    def vend(self, secret_key: object, profile: GcsStorageProfile, credential: StorageCredential | None,
             location: str, write: bool = True, renew: bool = False) -> DownscopedToken:
        """``renew``: made now even if the cache holds fresh ones (a client refreshing its credentials)."""
        found = None if renew else self._cache.get(secret_key, profile, location, write)
        if found is not None:
            return found
        assert isinstance(credential, GcsServiceAccountKeyCredential | GcsSystemIdentityCredential)
        bucket, key_prefix = split_gcs_location(normalize_location(location))
        if bucket != profile.bucket or not key_prefix:
            raise BadRequest(f"{location} is not a table location in bucket {profile.bucket}")
        try:
            fresh = downscope(profile, credential, key_prefix, write)
        except google_auth_errors() as e:
            raise StorageUnavailable(f"GCS credentials could not be vended ({explain('downscope', e)})") from None
        return self._cache.put(secret_key, profile, location, write, fresh)


def project_of(credential: GcsCredential) -> str | None:
    return credential.key.project_id if isinstance(credential, GcsServiceAccountKeyCredential) else None
