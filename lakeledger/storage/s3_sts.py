"""Short-lived S3 credentials for one table: STS AssumeRole with a session policy that allows only the table's
own location, so an engine holding them can touch nothing else in the bucket, whatever it tries.

Credentials are cached per table location until shortly before they expire: a busy table costs one STS call
per cache period, not one per load. A client is never handed credentials about to expire."""

import time
from collections.abc import Callable
from dataclasses import dataclass

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.s3_policy import table_policy
from lakeledger.domain.storage_credential import S3AccessKeyCredential, StorageCredential
from lakeledger.domain.storage_profile import S3StorageProfile, normalize_location, split_s3_location
from lakeledger.storage.credential_cache import CredentialCache

# AWS requires a role to assume; S3-compatible stores (MinIO) ignore it, but the API still wants one spelt out.
_PLACEHOLDER_ROLE = "arn:aws:iam::000000000000:role/lakeledger"


@dataclass(frozen=True)
class SessionCredentials:
    access_key_id: str
    secret_access_key: str
    session_token: str
    expires_at_ms: int


def sts_endpoint(profile: S3StorageProfile) -> str | None:
    """Where STS is: the profile's ``sts-endpoint``; else the S3 endpoint itself for anything but AWS (MinIO serves
    STS on its S3 port); else AWS's regional STS (None: boto3's default for the region)."""
    if profile.sts_endpoint:
        return profile.sts_endpoint
    if profile.endpoint and ".amazonaws.com" not in profile.endpoint:
        return profile.endpoint
    return None


def role_arn(profile: S3StorageProfile) -> str:
    arn = profile.assume_role_arn or profile.sts_role_arn
    if arn:
        return arn
    if profile.flavor == "aws" and sts_endpoint(profile) is None:
        raise BadRequest("sts-enabled on AWS needs the role to assume: set assume-role-arn")
    return _PLACEHOLDER_ROLE


def assume_role(profile: S3StorageProfile, credential: S3AccessKeyCredential, policy: str,
                timeouts: tuple[float, float] = (5, 30), attempts: int = 3) -> SessionCredentials:
    import boto3  # loaded by the first S3 warehouse that needs it, not by every server
    from botocore.config import Config

    client = boto3.session.Session().client(
        "sts", endpoint_url=sts_endpoint(profile), region_name=profile.region,
        aws_access_key_id=credential.aws_access_key_id, aws_secret_access_key=credential.aws_secret_access_key,
        config=Config(connect_timeout=timeouts[0], read_timeout=timeouts[1],
                      retries={"max_attempts": attempts, "mode": "standard"}))
    # the profile's session tags (Lakekeeper's sts-session-tags), for role trust and attribute-based policies
    tags = [{"Key": key, "Value": value} for key, value in profile.session_tags().items()]
    answer = client.assume_role(RoleArn=role_arn(profile), RoleSessionName="lakeledger", Policy=policy,
                                DurationSeconds=profile.sts_token_validity_seconds,
                                **({"Tags": tags} if tags else {}))["Credentials"]
    return SessionCredentials(answer["AccessKeyId"], answer["SecretAccessKey"], answer["SessionToken"],
                              int(answer["Expiration"].timestamp() * 1000))


class S3CredentialVendor:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._cache: CredentialCache[S3StorageProfile, SessionCredentials] = CredentialCache(
            lambda profile, _: profile.sts_token_validity_seconds * 1000, clock)

    def cached(self, secret_key: object, profile: S3StorageProfile, location: str,
               write: bool) -> SessionCredentials | None:
        """The cached credentials for the table at ``location``, if they are still fresh enough to hand out."""
        return self._cache.get(secret_key, profile, location, write)

    def vend(self, secret_key: object, profile: S3StorageProfile, credential: StorageCredential | None,
             location: str, write: bool = True, renew: bool = False) -> SessionCredentials:
        """``renew``: made now even if the cache holds fresh ones (a client refreshing its credentials)."""
        found = None if renew else self._cache.get(secret_key, profile, location, write)
        if found is not None:
            return found
        assert isinstance(credential, S3AccessKeyCredential)  # an S3 warehouse's only kind (parse_storage_credential)
        bucket, key_prefix = split_s3_location(normalize_location(location))
        fresh = assume_role(profile, credential, table_policy(bucket, key_prefix, write, profile.flavor,
                                                                   profile.aws_kms_key_arn))
        return self._cache.put(secret_key, profile, location, write, fresh)
