"""What an engine is given to reach a table's files (the ``config`` and ``storage-credentials`` of a
LoadTableResult), by the access delegation it asks for in ``X-Iceberg-Access-Delegation``:

- ``vended-credentials``: short-lived STS credentials that allow only the table's own location;
- ``remote-signing``: no credentials at all; the engine sends each S3 request to the catalog's signer
  (lakeledger/api/routers/signer.py), which signs only requests inside this table's location.

An S3 warehouse with STS enabled vends credentials when asked to, or when nothing is asked; otherwise (STS off,
or remote signing asked for) engines sign remotely, unless the warehouse has remote signing turned off
(``remote-signing-enabled: false``): then it vends if it can, and else gives no access at all. File warehouses
need nothing."""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_credential import SecretRef
from lakeledger.domain.storage_profile import S3StorageProfile
from lakeledger.services.remote_signing import RemoteSigning
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.storage import Storages
from lakeledger.storage.s3_sts import S3CredentialVendor, SessionCredentials

VENDED_CREDENTIALS = "vended-credentials"
REMOTE_SIGNING = "remote-signing"
_MODES = (VENDED_CREDENTIALS, REMOTE_SIGNING)
SIGNER_ENDPOINT = "v1/aws/s3/sign"


@dataclass(frozen=True)
class Access:
    config: dict[str, str] = field(default_factory=dict)
    storage_credentials: list[dict[str, Any]] = field(default_factory=list)
    # part of a load's ETag: what the client holds changes whenever this does (fresh credentials), so a client
    # whose credentials have been replaced is never told "304 Not Modified"
    variant: str = ""


NO_ACCESS = Access()


def requested_modes(header: str | None) -> tuple[str, ...]:
    if not header:
        return ()
    modes = tuple(m.strip().lower() for m in header.split(",") if m.strip())
    unknown = [m for m in modes if m not in _MODES]
    if unknown:
        raise BadRequest(f"Unsupported access delegation {unknown[0]!r} in X-Iceberg-Access-Delegation: "
                         f"use {' or '.join(_MODES)}")
    return modes


class TableAccess:
    def __init__(self, storages: Storages, vendor: S3CredentialVendor, signing: RemoteSigning,
                 base_uri: str | None = None):
        self.storages = storages
        self.vendor = vendor
        self.signing = signing
        self.base_uri = base_uri

    def for_table(self, wh: WarehouseSettings, table_id: UUID, location: str, delegation: str | None,
                  request_base_url: str, staged: bool = False, write: bool = True) -> Access:
        """Access to the table at ``location`` (may call STS). A ``staged`` table is not in the catalog yet.
        Without ``write`` (a caller who may only read the table's data) vended credentials are read-only; a
        signer checks each request against its caller's rights itself."""
        access = self._access(wh, table_id, location, delegation, request_base_url, staged, False, write)
        assert access is not None  # only a cached-only lookup comes back without one
        return access

    def cached_for_table(self, wh: WarehouseSettings, table_id: UUID, location: str, delegation: str | None,
                         request_base_url: str | Callable[[], str], write: bool = True) -> Access | None:
        """The same without any I/O, or None when that would need STS (loadTable's fast path). The base URL may
        be given as a function: only a signer URL needs it, so a vended load does not pay for working it out."""
        return self._access(wh, table_id, location, delegation, request_base_url, False, True, write)

    def _access(self, wh: WarehouseSettings, table_id: UUID, location: str, delegation: str | None,
                request_base_url: str | Callable[[], str], staged: bool, cached_only: bool,
                write: bool) -> Access | None:
        modes = requested_modes(delegation)
        profile = wh.profile()
        if not isinstance(profile, S3StorageProfile):
            return NO_ACCESS
        config = _s3_client_config(profile)
        # remote signing turned off (Lakekeeper's remote-signing-enabled=false) leaves vended credentials, if any
        vend = profile.sts_enabled and (VENDED_CREDENTIALS in modes or not modes or not profile.signs_remotely())
        if not vend and not profile.signs_remotely():
            return Access(config, [], "no-access")
        if not vend:
            token = self.signing.scope_token(wh.id, table_id, location, staged)
            if callable(request_base_url):
                request_base_url = request_base_url()
            # The same signer URI for every table, the table's sealed scope in the endpoint path: Iceberg 1.10's
            # Java signer keeps one HTTP client per JVM, bound to the first signer URI it is given, and resolves
            # each table's endpoint against that.
            config.update({"s3.remote-signing-enabled": "true",
                           "s3.signer.uri": f"{(self.base_uri or request_base_url).rstrip('/')}/catalog",
                           "s3.signer.endpoint": f"signer/{token}/{SIGNER_ENDPOINT}",
                           "s3.signer": "S3V4RestSigner"})  # pyiceberg's FsspecFileIO picks its signer by name
            return Access(config, [], "remote-signing")
        secret = wh.secret()
        if cached_only:
            session = self.vendor.cached(_secret_key(secret), profile, location, write)
            if session is None:
                return None
        else:
            credential = self.storages.credential(wh)
            assert credential is not None  # an S3 warehouse always has one (parse_storage_credential)
            session = self.vendor.vend(_secret_key(secret), profile, credential, location, write)
        vended = {**config, **_session_config(session)}
        # the ETag names the kind too: a caller whose rights changed is never told its old credentials still do
        variant = f"vended:{session.expires_at_ms}" if write else f"vended-read:{session.expires_at_ms}"
        return Access(vended, [{"prefix": location, "config": vended}], variant)

    def credentials(self, wh: WarehouseSettings, table_id: UUID, location: str, request_base_url: str,
                    write: bool = True) -> Access:
        """loadCredentials: vended credentials for the table, if its warehouse vends them."""
        return self.for_table(wh, table_id, location, VENDED_CREDENTIALS, request_base_url, write=write)


def _secret_key(secret: SecretRef | None) -> object:
    return secret.secret_id if secret is not None else None


def _s3_client_config(profile: S3StorageProfile) -> dict[str, str]:
    config = {"client.region": profile.region, "s3.region": profile.region,
              "s3.path-style-access": "true" if profile.path_style() else "false"}
    if profile.endpoint:
        config["s3.endpoint"] = profile.endpoint
    return {**config, **profile.encryption_config()}


def _session_config(session: SessionCredentials) -> dict[str, str]:
    return {"s3.access-key-id": session.access_key_id, "s3.secret-access-key": session.secret_access_key,
            "s3.session-token": session.session_token,
            "s3.session-token-expires-at-ms": str(session.expires_at_ms)}
