"""Proof that a warehouse's ADLS storage works before the warehouse is recorded: write, read, list and delete a
probe blob under the key prefix, and (with SAS enabled) sign a SAS as vending will. Every failure is a 400 whose
message says what failed; the message never repeats a secret."""

from collections.abc import Callable
from uuid import uuid4

from azure.core.exceptions import AzureError, HttpResponseError, ServiceRequestError

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_credential import AzCredential
from lakeledger.domain.storage_profile import AdlsStorageProfile
from lakeledger.storage.adls import blob_service
from lakeledger.storage.adls_sas import directory_sas

_REFUSED = "the credential was refused (a wrong account key, an unknown client secret, or no right to do this)"
# Azure answers a wrong account key with AuthenticationFailed, Azurite with AuthorizationFailure
_WRONG_KEY = {"AuthenticationFailed": _REFUSED, "AuthorizationFailure": _REFUSED,
              "AuthorizationPermissionMismatch": "the credential is not allowed to do this"}
_TIMEOUTS = (3, 10)


def _explain(profile: AdlsStorageProfile, step: str, e: Exception) -> BadRequest:
    where = f"filesystem {profile.filesystem} of account {profile.account_name} at {profile.blob_url()}"
    if isinstance(e, ServiceRequestError):
        return BadRequest(f"Storage validation failed ({step}): the endpoint {profile.blob_url()} cannot be reached")
    code = getattr(e, "error_code", None) or ""
    code = str(getattr(code, "value", code))  # the SDK's StorageErrorCode, or the service's own spelling
    if code == "ContainerNotFound":
        return BadRequest(f"Storage validation failed ({step}): the filesystem {profile.filesystem} does not exist "
                          f"in account {profile.account_name}")
    if code in _WRONG_KEY:
        return BadRequest(f"Storage validation failed ({step} in {where}): {_WRONG_KEY[code]} ({code})")
    if isinstance(e, HttpResponseError):
        return BadRequest(f"Storage validation failed ({step} in {where}): {e.status_code} {code}".rstrip())
    # Entra ID refusals and the like: the exception's own words (azure-identity never repeats the secret)
    return BadRequest(f"Storage validation failed ({step} in {where}): {type(e).__name__}: {e}")


def prove_access(profile: AdlsStorageProfile, credential: AzCredential) -> None:
    container = blob_service(profile, credential, timeouts=_TIMEOUTS, attempts=1) \
        .get_container_client(profile.filesystem)
    prefix = f"{profile.key_prefix}/" if profile.key_prefix else ""
    name = f"{prefix}.lakeledger-probe-{uuid4().hex}"
    body = b"lakeledger storage validation"
    steps: list[tuple[str, Callable[[], object]]] = [
        ("write a probe blob", lambda: container.upload_blob(name, body, overwrite=False)),
        ("read the probe blob", lambda: _same(container.download_blob(name).readall(), body)),
        ("list the key prefix", lambda: next(iter(container.list_blob_names(name_starts_with=prefix or None,
                                                                              results_per_page=1)), None)),
        ("delete the probe blob", lambda: container.delete_blob(name)),
    ]
    if profile.sas_enabled:
        steps.append(("sign a SAS token for engines",
                      lambda: directory_sas(profile, credential, profile.base_location() + "/probe", True)))
    for step, act in steps:
        try:
            act()
        except (AzureError, ValueError) as e:
            raise _explain(profile, step, e) from None


def _same(read: bytes, written: bytes) -> None:
    if read != written:
        raise BadRequest("Storage validation failed: the probe blob read back differs from what was written")
