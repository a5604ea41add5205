"""Proof that a warehouse's GCS storage works before the warehouse is recorded: write, read, list and delete a
probe object under the key prefix (and, with sts-enabled, exchange a token downscoped to the prefix). Every
failure is a 400 whose message says what failed; the message never repeats the key or a token."""

from collections.abc import Callable
from uuid import uuid4

import requests
from google.api_core import exceptions as gexceptions
from google.auth import exceptions as gauth

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_profile import GcsStorageProfile
from lakeledger.storage.gcs import gcs_client
from lakeledger.storage.gcs_sts import GcsCredential, downscope, explain

_TIMEOUT = (3, 10)


def _explain(profile: GcsStorageProfile, step: str, e: Exception) -> BadRequest:
    where = f"bucket {profile.bucket}" + (f" at {profile.endpoint}" if profile.endpoint else "")
    if isinstance(e, requests.exceptions.RequestException):
        return BadRequest(f"Storage validation failed ({step}): the endpoint {profile.endpoint or 'of GCS'} cannot "
                          "be reached")
    if isinstance(e, gexceptions.NotFound) and step != "read the probe object":
        return BadRequest(f"Storage validation failed ({step}): the bucket {profile.bucket} does not exist")
    if isinstance(e, (gexceptions.Forbidden, gexceptions.Unauthorized)):
        return BadRequest(f"Storage validation failed ({step} in {where}): the credential is not allowed to do "
                          f"this ({e.code})")
    if isinstance(e, gexceptions.GoogleAPICallError):
        return BadRequest(f"Storage validation failed ({step} in {where}): {e.code} {e.message}".rstrip())
    return BadRequest(f"Storage validation failed ({explain(step + ' in ' + where, e)})")


def prove_access(profile: GcsStorageProfile, credential: GcsCredential) -> None:
    client = gcs_client(profile, credential)
    bucket = client.bucket(profile.bucket)
    prefix = f"{profile.key_prefix}/" if profile.key_prefix else ""
    probe = bucket.blob(f"{prefix}.lakeledger-probe-{uuid4().hex}")
    body = b"lakeledger storage validation"
    steps: list[tuple[str, Callable[[], object]]] = [
        ("write a probe object",
         lambda: probe.upload_from_string(body, if_generation_match=0, timeout=_TIMEOUT, retry=None)),
        ("read the probe object", lambda: _same(probe.download_as_bytes(timeout=_TIMEOUT, retry=None), body)),
        ("list the key prefix",
         lambda: list(client.list_blobs(bucket, prefix=prefix, max_results=1, timeout=_TIMEOUT, retry=None))),
        ("delete the probe object", lambda: probe.delete(timeout=_TIMEOUT, retry=None)),
    ]
    for step, act in steps:
        try:
            act()
        except (gexceptions.GoogleAPIError, requests.exceptions.RequestException, gauth.GoogleAuthError) as e:
            raise _explain(profile, step, e) from None
    if profile.sts_enabled:
        try:
            downscope(profile, credential, profile.key_prefix or "lakeledger-probe", True, timeout=_TIMEOUT[1])
        except (gauth.GoogleAuthError, KeyError, ValueError) as e:
            raise BadRequest(f"Storage validation failed ({explain('obtain a downscoped token', e)})") from None


def _same(read: bytes, written: bytes) -> None:
    if read != written:
        raise BadRequest("Storage validation failed: the probe object read back differs from what was written")
