"""What an engine is given to reach a table's files (the ``config`` and ``storage-credentials`` of a
LoadTableResult), by the access delegation it asks for in ``X-Iceberg-Access-Delegation``:

- ``vended-credentials``: short-lived STS credentials that allow only the table's own location;
- ``remote-signing``: no credentials at all; the engine sends each S3 request to the catalog's signer
  (lakeledger/api/routers/signer.py), which signs only requests inside this table's location.

A GCS warehouse with sts-enabled vends a downscoped OAuth2 token that allows only the table's own location
(lakeledger/storage/gcs_sts.py); GCS has no remote signing, so without vending engines get no token at all.

An S3 warehouse with STS enabled vends credentials when asked to, or when nothing is asked; otherwise (STS off,
or remote signing asked for) engines sign remotely, unless the warehouse has remote signing turned off
(``remote-signing-enabled: false``): then it vends if it can, and else gives no access at all. An ADLS warehouse
with SAS enabled vends a SAS token scoped to the table's directory (lakeledger/storage/adls_sas.py) unless only
remote signing is asked for, which Azure does not have. File warehouses need nothing.

``client-managed`` (Lakekeeper's value) asked for alone says the engine brings its own storage credentials: it is
given the storage's client settings (region, endpoint ...) but no credentials and no signer, whatever the warehouse
offers. The header is a hint (the Iceberg REST spec: the server may use any or none of the mechanisms asked for), so
a value the catalog does not know is ignored, as Lakekeeper ignores it, rather than refused: an engine that asks for a
mechanism this catalog lacks still reads what it may without one, and the answer is the same on every path
(docs/storage.md, "Access delegation")."""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar
from uuid import UUID

from lakeledger.domain.storage_credential import SecretRef, StorageCredential
from lakeledger.domain.storage_profile import AdlsStorageProfile, GcsStorageProfile, S3StorageProfile
from lakeledger.domain.tabular import TABLE
from lakeledger.services.remote_signing import RemoteSigning
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.storage import Storages
from lakeledger.storage.adls_sas import AdlsSasVendor, SasToken
from lakeledger.storage.credential_cache import Expiring
from lakeledger.storage.gcs_sts import DownscopedToken, GcsTokenVendor
from lakeledger.storage.s3_sts import S3CredentialVendor, SessionCredentials

VENDED_CREDENTIALS = "vended-credentials"
REMOTE_SIGNING = "remote-signing"
CLIENT_MANAGED = "client-managed"
_DELEGATED = (VENDED_CREDENTIALS, REMOTE_SIGNING)
SIGNER_ENDPOINT = "v1/aws/s3/sign"
# the sealed scope in remote-signing-config's properties, which Iceberg 1.12+ signer clients send with each request
SIGNER_SCOPE_PROPERTY = "lakeledger.signer-scope"
# pyiceberg's default FileIO (PyArrow) cannot sign remotely: a pyiceberg client given a signing config without
# these holds no keys and fails on every read and write. The table's config picks the FileIO that can (Lakekeeper
# sends the same), and names the signer it asks for; other engines ignore both keys.
PYICEBERG_SIGNING_IO = {"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO", "s3.signer": "S3V4RestSigner"}
# Where Iceberg Java's FileIOs (AwsClientProperties, AzureProperties, GCPProperties; 1.10 to main) find the
# credentials endpoint to refresh vended credentials from before they expire, and the switch that enables it.
S3_REFRESH = ("client.refresh-credentials-endpoint", "client.refresh-credentials-enabled")
ADLS_REFRESH = ("adls.refresh-credentials-endpoint", "adls.refresh-credentials-enabled")
GCS_REFRESH = ("gcs.oauth2.refresh-credentials-endpoint", "gcs.oauth2.refresh-credentials-enabled")


@dataclass(frozen=True)
class Access:
    config: dict[str, str] = field(default_factory=dict)
    storage_credentials: list[dict[str, Any]] = field(default_factory=list)
    # part of a load's ETag: what the client holds changes whenever this does (fresh credentials), so a client
    # whose credentials have been replaced is never told "304 Not Modified"
    variant: str = ""
    # a LoadTableResult's ``remote-signing-config`` (Iceberg main): what signer clients send with every request
    remote_signing_config: dict[str, Any] | None = None


NO_ACCESS = Access()


def requested_modes(header: str | None) -> tuple[str, ...]:
    """The access delegation an ``X-Iceberg-Access-Delegation`` header asks for: the mechanisms it names that the
    catalog has (vended-credentials, remote-signing), in its order; or ``(CLIENT_MANAGED,)`` when it names
    client-managed and neither of those; or none. A comma-separated list, its values case-insensitive; values not
    known are ignored (see above). The one reading of the header for every route and fast path."""
    named = [m.strip().lower() for m in (header or "").split(",")]
    modes = tuple(dict.fromkeys(m for m in named if m in _DELEGATED))
    if not modes and CLIENT_MANAGED in named:
        return (CLIENT_MANAGED,)
    return modes


def delegates(header: str | None) -> bool:
    """Whether the header asks for delegated access at all (endpoints that give credentials only when asked)."""
    return requested_modes(header) not in ((), (CLIENT_MANAGED,))


P = TypeVar("P", contravariant=True)
C = TypeVar("C", bound=Expiring, covariant=True)


class Vendor(Protocol[P, C]):
    """A storage kind's vendor of short-lived credentials for one table (lakeledger/storage/*_sts.py, adls_sas.py)."""

    def cached(self, secret_key: object, profile: P, location: str, write: bool) -> C | None: ...

    def vend(self, secret_key: object, profile: P, credential: StorageCredential | None, location: str,
             write: bool = True, renew: bool = False) -> C: ...


class TableAccess:
    def __init__(self, storages: Storages, vendor: S3CredentialVendor, signing: RemoteSigning,
                 base_uri: str | None = None, sas_vendor: AdlsSasVendor | None = None,
                 gcs_vendor: GcsTokenVendor | None = None, renewal_margin_seconds: int = 0):
        self.storages = storages
        # clients are told the vended credentials expire this much earlier than they do, so they renew that much
        # sooner (clock skew between the client, the catalog and the storage; a long task started near expiry)
        self.renewal_margin_ms = renewal_margin_seconds * 1000
        self.vendor = vendor
        self.sas_vendor = sas_vendor or AdlsSasVendor()
        self.signing = signing
        self.base_uri = base_uri
        self.gcs_vendor = gcs_vendor or GcsTokenVendor()

    def for_table(self, wh: WarehouseSettings, table_id: UUID, location: str, delegation: str | None,
                  request_base_url: str, staged: bool = False, write: bool = True, kind: str = TABLE,
                  refresh_endpoint: str | None = None) -> Access:
        """Access to the table at ``location`` (may call STS). A ``staged`` table is not in the catalog yet.
        Without ``write`` (a caller who may only read the table's data) vended credentials are read-only; a
        signer checks each request against its caller's rights itself (on the ``kind`` of tabular: a table, a
        generic table). ``refresh_endpoint``: the table's loadCredentials path, relative to the catalog's URI,
        named in the config of vended credentials so that engines renew them there before they expire."""
        access = self._access(wh, table_id, location, delegation, request_base_url, staged, False, write, kind,
                              refresh_endpoint)
        assert access is not None  # only a cached-only lookup comes back without one
        return access

    def cached_for_table(self, wh: WarehouseSettings, table_id: UUID, location: str, delegation: str | None,
                         request_base_url: str | Callable[[], str], write: bool = True,
                         refresh_endpoint: str | None = None, staged: bool = False) -> Access | None:
        """The same without any I/O, or None when that would need STS (loadTable's fast path). The base URL may
        be given as a function: only a signer URL needs it, so a vended load does not pay for working it out."""
        return self._access(wh, table_id, location, delegation, request_base_url, staged, True, write,
                            refresh_endpoint=refresh_endpoint)

    def _access(self, wh: WarehouseSettings, table_id: UUID, location: str, delegation: str | None,
                request_base_url: str | Callable[[], str], staged: bool, cached_only: bool,
                write: bool, kind: str = TABLE, refresh_endpoint: str | None = None,
                renew: bool = False) -> Access | None:
        modes = requested_modes(delegation)
        profile = wh.profile()
        if modes == (CLIENT_MANAGED,):
            return Access(_client_config(profile), [], CLIENT_MANAGED)
        vending = _Vending(cached_only, write, refresh_endpoint, renew)
        if isinstance(profile, AdlsStorageProfile):
            return self._adls_access(wh, profile, location, modes, vending)
        if isinstance(profile, GcsStorageProfile):
            return self._gcs_access(wh, profile, location, modes, vending)
        if not isinstance(profile, S3StorageProfile):
            return NO_ACCESS
        config = _s3_client_config(profile)
        # remote signing turned off (Lakekeeper's remote-signing-enabled=false) leaves vended credentials, if any
        vend = profile.sts_enabled and (VENDED_CREDENTIALS in modes or not modes or not profile.signs_remotely())
        if not vend and not profile.signs_remotely():
            return Access(config, [], "no-access")
        if not vend:
            token = self.signing.scope_token(wh.id, table_id, location, staged, kind)
            if callable(request_base_url):
                request_base_url = request_base_url()
            # Two signers for two generations of clients (docs/storage.md, "Remote signing"). Iceberg Java up to
            # 1.11 and pyiceberg read s3.signer.uri and s3.signer.endpoint: the same signer URI for every table, the
            # table's sealed scope in the endpoint path (Iceberg 1.10's Java signer keeps one HTTP client per JVM,
            # bound to the first signer URI it is given, and resolves each table's endpoint against that). Iceberg
            # Java 1.12 and main read neither: they send each request to the table's own .../tables/{table}/sign
            # at the catalog URI, with remote-signing-config's properties in its body; the scope goes there, so that
            # a staged table, which that path does not name yet, and an engine's purge after a drop are signed as
            # on the sealed URL. No signer.uri or signer.endpoint (deprecated by Iceberg main): they would take
            # 1.12's clients away from the per-table endpoint.
            config.update({"s3.remote-signing-enabled": "true",
                           "s3.signer.uri": f"{(self.base_uri or request_base_url).rstrip('/')}/catalog",
                           "s3.signer.endpoint": f"signer/{token}/{SIGNER_ENDPOINT}",
                           **PYICEBERG_SIGNING_IO})
            return Access(config, [], "remote-signing", {"properties": {SIGNER_SCOPE_PROPERTY: token}})
        return self._vended(wh, self.vendor, profile, location, vending, config, _session_config, S3_REFRESH)

    def _adls_access(self, wh: WarehouseSettings, profile: AdlsStorageProfile, location: str,
                     modes: tuple[str, ...], vending: "_Vending") -> Access | None:
        config = _adls_client_config(profile)
        if not profile.sas_enabled or (modes and VENDED_CREDENTIALS not in modes):
            return Access(config, [], "")
        return self._vended(wh, self.sas_vendor, profile, location, vending, config,
                            lambda sas: _sas_config(profile, sas), ADLS_REFRESH)

    def _gcs_access(self, wh: WarehouseSettings, profile: GcsStorageProfile, location: str, modes: tuple[str, ...],
                    vending: "_Vending") -> Access | None:
        config = _gcs_client_config(profile)
        if not (profile.sts_enabled and (VENDED_CREDENTIALS in modes or not modes)):
            return Access(config)
        return self._vended(wh, self.gcs_vendor, profile, location, vending, config, _token_config, GCS_REFRESH)

    def _vended(self, wh: WarehouseSettings, vendor: Vendor[P, C], profile: P, location: str, vending: "_Vending",
                config: dict[str, str], credential_config: Callable[[C], dict[str, str]],
                refresh_keys: tuple[str, str]) -> Access | None:
        """Credentials for the table's location from the storage kind's vendor, cached or made now (None: not
        cached and ``cached_only``), under the keys its engines read them from."""
        secret_key = _secret_key(wh.secret())
        write = vending.write
        credential = None if vending.renew else vendor.cached(secret_key, profile, location, write)
        if credential is None:
            if vending.cached_only:
                return None
            credential = vendor.vend(secret_key, profile, self.storages.credential(wh), location, write,
                                     renew=vending.renew)
        told = credential
        if self.renewal_margin_ms:
            told = dataclasses.replace(credential,  # type: ignore[type-var]  # every vendor's credential is one
                                       expires_at_ms=credential.expires_at_ms - self.renewal_margin_ms)
        vended = {**config, **credential_config(told)}
        if vending.refresh_endpoint:
            vended.update({refresh_keys[0]: vending.refresh_endpoint, refresh_keys[1]: "true"})
        # the ETag names the kind too: a caller whose rights changed is never told its old credentials still do
        variant = f"vended:{credential.expires_at_ms}" if write else f"vended-read:{credential.expires_at_ms}"
        return Access(vended, [{"prefix": location, "config": vended}], variant)

    def credentials(self, wh: WarehouseSettings, table_id: UUID, location: str, request_base_url: str,
                    write: bool = True, kind: str = TABLE) -> Access:
        """loadCredentials: new vended credentials for the table, if its warehouse vends them. Never the cached
        ones a load hands out: an engine calls this when its own are about to expire, and those may be the very
        ones the cache holds."""
        access = self._access(wh, table_id, location, VENDED_CREDENTIALS, request_base_url, False, False, write,
                              kind, renew=True)
        assert access is not None
        return access


@dataclass(frozen=True)
class _Vending:
    """How a load asks for vended credentials: only from the cache; read-only or not; the endpoint engines refresh
    them from; new ones whatever the cache holds."""
    cached_only: bool
    write: bool
    refresh_endpoint: str | None
    renew: bool


def _secret_key(secret: SecretRef | None) -> object:
    return secret.secret_id if secret is not None else None


def _client_config(profile: object) -> dict[str, str]:
    """What an engine with credentials of its own needs to reach the warehouse's storage (none for files)."""
    if isinstance(profile, S3StorageProfile):
        return _s3_client_config(profile)
    if isinstance(profile, AdlsStorageProfile):
        return _adls_client_config(profile)
    if isinstance(profile, GcsStorageProfile):
        return _gcs_client_config(profile)
    return {}


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


def _adls_client_config(profile: AdlsStorageProfile) -> dict[str, str]:
    """Where the account is, when not at Azure's own address: Iceberg Java's ADLSFileIO takes the endpoint from
    ``adls.connection-string.<account host>``."""
    return {f"adls.connection-string.{profile.dfs_host()}": profile.endpoint} if profile.endpoint else {}


def _sas_config(profile: AdlsStorageProfile, sas: SasToken) -> dict[str, str]:
    """The SAS under the keys Iceberg Java (AzureProperties) and pyiceberg read: ``adls.sas-token.<account host>``.
    With an endpoint of its own (an emulator) pyiceberg's adlfs needs a whole connection string instead, which
    carries the SAS too; the account key is never handed out."""
    host = profile.dfs_host()
    config = {f"adls.sas-token.{host}": sas.token, f"adls.sas-token-expires-at-ms.{host}": str(sas.expires_at_ms)}
    if profile.endpoint:
        config["adls.connection-string"] = f"BlobEndpoint={profile.endpoint};SharedAccessSignature={sas.token}"
    return config


def _gcs_client_config(profile: GcsStorageProfile) -> dict[str, str]:
    # gcs.service.host: pyiceberg (gcsfs's endpoint_url, pyarrow's endpoint_override) and Iceberg Java's GCSFileIO
    return {"gcs.service.host": profile.endpoint} if profile.endpoint else {}


def _token_config(token: DownscopedToken) -> dict[str, str]:
    config = {"gcs.oauth2.token": token.token, "gcs.oauth2.token-expires-at": str(token.expires_at_ms)}
    if token.project_id:
        config["gcs.project-id"] = token.project_id
    return config
