"""Proof that a warehouse's S3 storage works before the warehouse is recorded: write, read, list and delete a
probe object under the key prefix (and, with STS, obtain a session credential scoped to the prefix). Every
failure is a 400 whose message says what failed; the message never repeats a secret."""

from uuid import uuid4

from botocore.exceptions import BotoCoreError, ClientError, ConnectTimeoutError, EndpointConnectionError

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.s3_policy import table_policy
from lakeledger.domain.storage_credential import S3AccessKeyCredential
from lakeledger.domain.storage_profile import S3StorageProfile
from lakeledger.storage.s3 import error_code, s3_client, sse_arguments
from lakeledger.storage.s3_sts import assume_role, role_arn

_WRONG_KEY = {"InvalidAccessKeyId": "the access key id is not known to the storage",
              "SignatureDoesNotMatch": "the secret access key does not match the access key id",
              "InvalidClientTokenId": "the access key id is not known to STS",
              "AccessDenied": "the credential is not allowed to do this",
              "403": "the credential is not allowed to do this"}
_TIMEOUTS = (3, 10)


def _explain(profile: S3StorageProfile, step: str, e: Exception) -> BadRequest:
    where = f"bucket {profile.bucket}" + (f" at {profile.endpoint}" if profile.endpoint else "")
    if isinstance(e, (EndpointConnectionError, ConnectTimeoutError)):
        return BadRequest(f"Storage validation failed ({step}): the endpoint {profile.endpoint or 'of AWS S3'} "
                          f"cannot be reached")
    code = error_code(e)
    if code in ("NoSuchBucket", "404") and step != "read the probe object":
        return BadRequest(f"Storage validation failed ({step}): the bucket {profile.bucket} does not exist")
    if code in _WRONG_KEY:
        return BadRequest(f"Storage validation failed ({step} in {where}): {_WRONG_KEY[code]} ({code})")
    if isinstance(e, ClientError):
        message = e.response.get("Error", {}).get("Message", "")
        return BadRequest(f"Storage validation failed ({step} in {where}): {code} {message}".rstrip())
    return BadRequest(f"Storage validation failed ({step} in {where}): {type(e).__name__}: {e}")


def prove_access(profile: S3StorageProfile, credential: S3AccessKeyCredential) -> None:
    # every table lies below the key prefix: one that no policy can name exactly is refused whether or not STS is
    # on now (it may be turned on later)
    probe_policy = table_policy(profile.bucket, profile.key_prefix or "lakeledger-probe", False, profile.flavor,
                                profile.aws_kms_key_arn)
    client = s3_client(profile, credential, timeouts=_TIMEOUTS, attempts=1)
    prefix = f"{profile.key_prefix}/" if profile.key_prefix else ""
    key = f"{prefix}.lakeledger-probe-{uuid4().hex}"
    body = b"lakeledger storage validation"
    steps = [
        ("write a probe object", lambda: client.put_object(Bucket=profile.bucket, Key=key, Body=body,
                                                                      **sse_arguments(profile))),
        (
            "read the probe object",
            lambda: _same(client.get_object(Bucket=profile.bucket, Key=key)["Body"].read(), body),
        ),
        ("list the key prefix", lambda: client.list_objects_v2(Bucket=profile.bucket, Prefix=prefix, MaxKeys=1)),
        ("delete the probe object", lambda: client.delete_object(Bucket=profile.bucket, Key=key)),
    ]
    for step, act in steps:
        try:
            act()
        except (BotoCoreError, ClientError) as e:
            raise _explain(profile, step, e) from None
    if profile.sts_enabled:
        try:
            role_arn(profile)
            assume_role(profile, credential, probe_policy,
                        timeouts=_TIMEOUTS, attempts=1)
        except (BotoCoreError, ClientError) as e:
            raise _explain(profile, "obtain a session credential from STS", e) from None


def _same(read: bytes, written: bytes) -> None:
    if read != written:
        raise BadRequest("Storage validation failed: the probe object read back differs from what was written")
