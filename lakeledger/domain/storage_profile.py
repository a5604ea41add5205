"""Where a warehouse keeps its files, and the rules for table locations inside it.

A profile is a discriminated union on ``type`` (Lakekeeper's JSON shape), so adding a storage kind
is adding one model. Locations are compared in a normalised form: no trailing slash, and the
``file:/x`` / ``file:///x`` spellings that Java and Python write for one local path made one.
"""

import posixpath
import re
from typing import Annotated, Literal
from urllib.parse import quote, unquote
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.s3_policy import table_policy

# one regex scan instead of a Python loop per character: every vended load normalizes its table's location
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def normalize_location(location: str) -> str:
    if not isinstance(location, str) or not location.strip():
        raise BadRequest("Location must be a non-empty string")
    location = location.strip()
    if _CONTROL.search(location):
        raise BadRequest("A location must not contain control characters")
    if location.startswith("/"):
        location = "file://" + location
    if location.startswith("file:") and not location.startswith("file://"):
        location = "file://" + location[len("file:"):]
    if location.startswith("file://"):
        path = location[len("file://"):]
        if not path.startswith("/"):
            raise BadRequest(f"A file location must be absolute: {location}")
        if "/../" in path + "/" or "/./" in path + "/":
            raise BadRequest(f"A location must not contain '.' or '..' segments: {location}")
        normalized = posixpath.normpath(path)
        if normalized.startswith("//"):
            normalized = "/" + normalized.lstrip("/")
        return "file://" + normalized
    lowered = location.lower()
    for scheme in ("s3a://", "s3n://"):
        if lowered.startswith(scheme):
            location = "s3://" + location[len(scheme):]
    if lowered.startswith("wasbs://"):
        location = _wasbs_as_abfss(location)
    return location.rstrip("/")


def _wasbs_as_abfss(location: str) -> str:
    """``wasbs://fs@account.blob.<suffix>/p`` (the Blob endpoint's spelling) as ``abfss://fs@account.dfs.<suffix>/p``
    (the Data Lake endpoint's): both name one file of one storage account."""
    authority, slash, path = location[len("wasbs://"):].partition("/")
    container, at, host = authority.rpartition("@")
    account, dot, suffix = host.partition(".")
    if at and dot and suffix.lower().startswith("blob."):
        suffix = "dfs." + suffix[len("blob."):]
    return f"abfss://{container}{at}{account}{dot}{suffix}{slash}{path}"


_SEGMENT_SEPARATORS = re.compile(r"[/\\]")


def check_no_dot_segments(location: str) -> str:
    """``location`` unchanged, once no segment of it is ``.`` or ``..``, as spelt or percent-decoded (``%2e%2e``):
    a client that decodes a ``file:`` URI, or an HTTP stack that normalises a path, would resolve such a segment
    to another directory than the one the catalog checked. A backslash counts as a separator (Windows clients)."""
    path = location.partition("://")[2] if "://" in location else location
    for spelling in (path, unquote(path, errors="replace")):
        if any(segment in (".", "..") for segment in _SEGMENT_SEPARATORS.split(spelling)):
            raise BadRequest(f"A location must not contain '.' or '..' segments, also not percent-encoded: "
                             f"{location}")
    return location


def is_within(location: str, base: str) -> bool:
    """True when ``location`` is ``base`` itself or below it (both normalised)."""
    return location == base or location.startswith(base.rstrip("/") + "/")


def overlaps(a: str, b: str) -> bool:
    return is_within(a, b) or is_within(b, a)


_TEMPLATE_PLACEHOLDERS = ("{uuid}", "{name}")


def _render_segment(template: str, name: str, uuid: UUID) -> str:
    # the name percent-encoded (a segment must not add levels), the uuid as it is: Lakekeeper's rendering
    return template.replace("{uuid}", str(uuid)).replace("{name}", quote(name, safe=""))


def _check_template(template: str, needs_uuid: bool) -> str:
    if "/" in template or _CONTROL.search(template):
        raise ValueError(f"template {template!r} must name one path segment: no '/' and no control characters")
    if needs_uuid and "{uuid}" not in template:
        raise ValueError(f"template {template!r} must contain {{uuid}}, so that two tables never share a folder")
    if not any(p in template for p in _TEMPLATE_PLACEHOLDERS):
        raise ValueError(f"template {template!r} must contain {{uuid}} or {{name}}")
    return template


class DefaultLayout(BaseModel):
    """Lakekeeper 0.13's default: every table in a folder named by its uuid directly below the warehouse."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["default"] = "default"


class TabularOnlyLayout(BaseModel):
    """No namespace folders; each table in one folder below the warehouse, named by a template with {uuid}."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["tabular-only"] = "tabular-only"
    tabular: str

    @field_validator("tabular")
    @classmethod
    def _tabular(cls, value: str) -> str:
        return _check_template(value, needs_uuid=True)


class FullHierarchyLayout(BaseModel):
    """One folder per namespace level and one per table, each named by a template with {uuid} and/or {name}."""
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["full-hierarchy"] = "full-hierarchy"
    namespace: str
    tabular: str

    @field_validator("namespace", "tabular")
    @classmethod
    def _template(cls, value: str) -> str:
        return _check_template(value, needs_uuid=False)


StorageLayout = Annotated[DefaultLayout | TabularOnlyLayout | FullHierarchyLayout, Field(discriminator="type")]


class _Profile(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)
    # Lakekeeper's `storage-layout` (0.12): how default table locations are spelt. None (also every warehouse
    # recorded before the field existed) keeps Lakeledger's own `<namespace-uuid>/<table-uuid>`.
    storage_layout: StorageLayout | None = Field(default=None, alias="storage-layout")

    def base_location(self) -> str:
        raise NotImplementedError

    def namespace_location(self, path: tuple[str, ...] | list[str]) -> str:
        """Where a namespace's tables would go by name: the warehouse location and one escaped folder per level.
        Only advertised (the `location` namespace property), never a place the catalog writes to: engines such as
        Trino stage-create their tables below it instead of asking the catalog for a location first."""
        return "/".join([self.base_location(), *(quote(level, safe="") for level in path)])

    def default_table_location(self, namespace_id: UUID, tabular_id: UUID,
                               namespace_chain: tuple[tuple[str, UUID], ...] = (), tabular_name: str = "") -> str:
        """Where a table goes when its client names no location. ``namespace_chain`` is (name, id) of each level
        from the top down and ``tabular_name`` the table's name: only a storage layout with templates uses them."""
        layout = self.storage_layout
        if layout is None:
            return f"{self.base_location()}/{namespace_id}/{tabular_id}"
        if isinstance(layout, DefaultLayout):
            return f"{self.base_location()}/{tabular_id}"
        table = _render_segment(layout.tabular, tabular_name, tabular_id)
        if isinstance(layout, TabularOnlyLayout):
            return f"{self.base_location()}/{table}"
        levels = [_render_segment(layout.namespace, name, level_id) for name, level_id in namespace_chain]
        return "/".join([self.base_location(), *levels, table])

    def check_location(self, location: str) -> str:
        """A location a client asked for (a table's, a view's, a namespace's), normalised, once it is inside the
        warehouse (or the warehouse itself) and names one directory however it is read."""
        location = check_no_dot_segments(normalize_location(location))
        base = self.base_location()
        if not is_within(location, base):
            raise BadRequest(f"Location {location} is not inside the warehouse location {base}")
        return location

    def check_tabular_location(self, location: str) -> str:
        location = self.check_location(location)
        if location == self.base_location():
            raise BadRequest(f"Location {location} is the warehouse location itself, not inside it")
        return location


class FileStorageProfile(_Profile):
    type: Literal["file"] = "file"
    location: str

    @field_validator("location")
    @classmethod
    def _absolute_file_uri(cls, value: str) -> str:
        normalized = normalize_location(value)
        if not normalized.startswith("file:///"):
            raise ValueError("a file storage profile needs a location of the form file:///absolute/path")
        return normalized

    def base_location(self) -> str:
        return self.location

    def local_path(self, location: str) -> str:
        return normalize_location(location)[len("file://"):]


def clean_key_prefix(value: str | None) -> str | None:
    """An object store's key prefix without its outer slashes, refused when a key below it could be read as
    another place (empty, '.' or '..' segments) or is too long for the key names every store takes."""
    if value is None:
        return None
    value = value.strip("/")
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value) or "//" in value:
        raise ValueError("a key-prefix must not contain control characters or empty segments")
    if any(part in (".", "..") for part in value.split("/")):
        raise ValueError("a key-prefix must not contain '.' or '..' segments")
    if len(value.encode()) > 896:
        raise ValueError("a key-prefix must be at most 896 bytes")
    return value or None


def http_url(value: str | None) -> str | None:
    """An endpoint a profile names (an emulator's, a private deployment's), without its trailing slash."""
    if value is None:
        return None
    value = value.strip().rstrip("/")
    if not re.match(r"^https?://[^/\s]+(/\S*)?$", value):
        raise ValueError(f"{value!r} is not an http:// or https:// URL")
    return value


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_ADDRESS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
S3_ALTERNATIVE_SCHEMES = ("s3a://", "s3n://")
_TAG_TEXT = re.compile(r"^[\w .:/=+\-@]*$")


class S3StorageProfile(_Profile):
    """Lakekeeper's S3 profile: a bucket and a key prefix the warehouse's tables live under, how to reach it
    (endpoint, region, path-style addressing) and how engines get access (STS-vended credentials, or requests
    signed by the catalog). Locations are ``s3://bucket/key-prefix/...``; ``s3a://``/``s3n://`` (Hadoop's
    spellings) are accepted when ``allow-alternative-protocols`` is true and compared as ``s3://``."""

    type: Literal["s3"] = "s3"
    bucket: str
    key_prefix: str | None = Field(default=None, alias="key-prefix")
    region: str = "us-east-1"
    endpoint: str | None = None
    path_style_access: bool | None = Field(default=None, alias="path-style-access")
    sts_enabled: bool = Field(default=False, alias="sts-enabled")
    sts_endpoint: str | None = Field(default=None, alias="sts-endpoint")
    flavor: Literal["aws", "s3-compat", "minio"] = "aws"
    assume_role_arn: str | None = Field(default=None, alias="assume-role-arn")
    sts_role_arn: str | None = Field(default=None, alias="sts-role-arn")
    sts_token_validity_seconds: int = Field(default=3600, ge=900, le=43200, alias="sts-token-validity-seconds")
    allow_alternative_protocols: bool = Field(default=False, alias="allow-alternative-protocols")
    remote_signing_url_style: Literal["path", "virtual-host", "auto"] = Field(default="auto",
                                                                               alias="remote-signing-url-style")
    # Lakekeeper's further S3 settings; None where Lakekeeper has a default, so that a warehouse recorded before
    # they existed reads as it did and its dump (exclude_none) is unchanged. docs/storage.md says what each does.
    sts_session_tags: tuple[tuple[str, str], ...] | None = Field(default=None, alias="sts-session-tags")
    push_s3_delete_disabled: bool | None = Field(default=None, alias="push-s3-delete-disabled")
    aws_kms_key_arn: str | None = Field(default=None, alias="aws-kms-key-arn")
    remote_signing_enabled: bool | None = Field(default=None, alias="remote-signing-enabled")
    legacy_md5_behavior: bool | None = Field(default=None, alias="legacy-md5-behavior")

    @field_validator("sts_session_tags", mode="before")
    @classmethod
    def _tags(cls, value: object) -> object:
        """A JSON object of tag names and values, kept as sorted pairs: the profile is frozen and hashable (it keys
        the credential cache). Limits are AWS's: 50 tags, keys of 1 to 128 and values of at most 256 characters."""
        if value is None or isinstance(value, tuple):
            return value
        if not isinstance(value, dict):
            raise ValueError("sts-session-tags must be an object of tag names and string values")
        if len(value) > 50:
            raise ValueError("sts-session-tags takes at most 50 tags")
        for key, tag in value.items():
            if not isinstance(tag, str) or not 1 <= len(key) <= 128 or len(tag) > 256 \
                    or not _TAG_TEXT.match(key) or not _TAG_TEXT.match(tag):
                raise ValueError(f"Invalid STS session tag {key!r}={tag!r}: keys of 1 to 128 and values of at "
                                 "most 256 letters, digits, spaces and _ . : / = + - @")
        return tuple(sorted(value.items()))

    @field_serializer("sts_session_tags")
    def _tags_as_object(self, value: tuple[tuple[str, str], ...] | None) -> dict[str, str] | None:
        return dict(value) if value is not None else None

    @field_validator("aws_kms_key_arn")
    @classmethod
    def _kms_arn(cls, value: str | None) -> str | None:
        # blank means none, as in Lakekeeper
        return value.strip() or None if value is not None else None

    def signs_remotely(self) -> bool:
        """Whether the catalog offers remote signing for this warehouse (Lakekeeper's default: it does)."""
        return self.remote_signing_enabled is not False

    def pushes_delete_disabled(self) -> bool:
        """Whether engines are told ``s3.delete-enabled=false`` when the warehouse soft-deletes (Lakekeeper's
        default: they are)."""
        return self.push_s3_delete_disabled is not False

    def session_tags(self) -> dict[str, str]:
        return dict(self.sts_session_tags or ())

    def encryption_config(self) -> dict[str, str]:
        """What tells an engine to write with the warehouse's KMS key (Iceberg's S3FileIO properties)."""
        return {"s3.sse.type": "kms", "s3.sse.key": self.aws_kms_key_arn} if self.aws_kms_key_arn else {}

    @field_validator("bucket")
    @classmethod
    def _bucket_name(cls, value: str) -> str:
        if not _BUCKET.match(value) or ".." in value or _IP_ADDRESS.match(value):
            raise ValueError(f"{value!r} is not a valid S3 bucket name (3 to 63 lower-case letters, digits, dots "
                             "and hyphens, beginning and ending with a letter or digit)")
        return value

    @field_validator("key_prefix")
    @classmethod
    def _clean_prefix(cls, value: str | None) -> str | None:
        return clean_key_prefix(value)

    @field_validator("endpoint", "sts_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return http_url(value)

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not re.match(r"^[a-z0-9-]{1,64}$", value):
            raise ValueError(f"{value!r} is not a region name")
        return value

    def base_location(self) -> str:
        return f"s3://{self.bucket}/{self.key_prefix}" if self.key_prefix else f"s3://{self.bucket}"

    def check_location(self, location: str) -> str:
        """Besides the rules for every warehouse: no s3a:// or s3n:// unless allowed, and a key that a session
        policy can name exactly (lakeledger/domain/s3_policy.py), so vended credentials reach this location and no
        other."""
        spelt = location.strip() if isinstance(location, str) else location
        if isinstance(spelt, str) and spelt.lower().startswith(S3_ALTERNATIVE_SCHEMES) \
                and not self.allow_alternative_protocols:
            raise BadRequest(f"Location {spelt} uses {spelt.split(':', 1)[0]}://, which this warehouse does not "
                             "accept: set allow-alternative-protocols to use s3a:// or s3n://")
        location = super().check_location(location)
        # refuses what it cannot confine
        table_policy(self.bucket, split_s3_location(location)[1], True, self.flavor, self.aws_kms_key_arn)
        return location

    def path_style(self) -> bool:
        """Path-style addressing unless told otherwise for S3-compatible stores (MinIO and friends), virtual
        hosts for AWS."""
        if self.path_style_access is not None:
            return self.path_style_access
        return self.flavor != "aws"


def split_s3_location(location: str) -> tuple[str, str]:
    """``s3://bucket/key`` (or s3a/s3n) as (bucket, key)."""
    scheme, sep, rest = location.partition("://")
    if not sep or scheme.lower() not in ("s3", "s3a", "s3n"):
        raise BadRequest(f"Not an S3 location: {location}")
    bucket, _, key = rest.partition("/")
    return bucket, key


_FILESYSTEM = re.compile(r"^[a-z0-9](?!.*--)[a-z0-9-]{1,61}[a-z0-9]$")
_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")
ADLS_DEFAULT_HOST = "dfs.core.windows.net"
ADLS_MAX_SAS_VALIDITY_SECONDS = 7 * 24 * 3600


class AdlsStorageProfile(_Profile):
    """Lakekeeper's ADLS Gen2 profile: a storage account, a filesystem (Blob's container) in it and a key prefix the
    warehouse's tables live under; engines get SAS tokens scoped to one table's directory. Locations are
    ``abfss://<filesystem>@<account>.<host>/<key-prefix>/...``; ``wasbs://<filesystem>@<account>.blob.<suffix>/...``
    is accepted when ``allow-alternative-protocols`` is true and compared as ``abfss://``.

    ``endpoint`` is Lakeledger's own: the Blob service URL to send requests to instead of
    ``https://<account>.blob.<suffix>`` (an emulator such as Azurite: ``http://127.0.0.1:10000/devstoreaccount1``).
    Locations keep the account's ``abfss://`` name either way."""

    type: Literal["adls"] = "adls"
    account_name: str = Field(alias="account-name")
    filesystem: str
    key_prefix: str | None = Field(default=None, alias="key-prefix")
    host: str | None = None
    authority_host: str | None = Field(default=None, alias="authority-host")
    sas_token_validity_seconds: int | None = Field(default=None, ge=1, le=ADLS_MAX_SAS_VALIDITY_SECONDS,
                                                   alias="sas-token-validity-seconds")
    sas_enabled: bool = Field(default=True, alias="sas-enabled")
    allow_alternative_protocols: bool = Field(default=False, alias="allow-alternative-protocols")
    endpoint: str | None = None

    @field_validator("account_name")
    @classmethod
    def _account(cls, value: str) -> str:
        if not _ACCOUNT.match(value):
            raise ValueError(f"{value!r} is not a storage account name (3 to 24 lower-case letters and digits)")
        return value

    @field_validator("filesystem")
    @classmethod
    def _filesystem(cls, value: str) -> str:
        if not _FILESYSTEM.match(value):
            raise ValueError(f"{value!r} is not a filesystem (container) name (3 to 63 lower-case letters, digits "
                             "and single hyphens, beginning and ending with a letter or digit)")
        return value

    @field_validator("key_prefix")
    @classmethod
    def _clean_prefix(cls, value: str | None) -> str | None:
        value = clean_key_prefix(value)
        if value is not None and "\\" in value:
            raise ValueError("a key-prefix must not contain backslashes")
        if value is not None and len(value) > 512:
            raise ValueError("a key-prefix must be at most 512 characters")
        return value

    @field_validator("host")
    @classmethod
    def _host(cls, value: str | None) -> str | None:
        if value is None:
            return None
        value = value.strip().strip(".").lower()
        if not _HOST.match(value):
            raise ValueError(f"{value!r} is not a host name suffix such as dfs.core.windows.net")
        return value

    @field_validator("authority_host", "endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return http_url(value)

    def dfs_host(self) -> str:
        """The account's Data Lake host, ``<account>.dfs.core.windows.net`` by default: the authority of its
        locations, and the suffix of the keys engines find their SAS token under."""
        return f"{self.account_name}.{self.host or ADLS_DEFAULT_HOST}"

    def blob_url(self) -> str:
        if self.endpoint:
            return self.endpoint
        suffix = self.host or ADLS_DEFAULT_HOST
        if suffix.startswith("dfs."):
            suffix = "blob." + suffix[len("dfs."):]
        return f"https://{self.account_name}.{suffix}"

    def sas_validity_seconds(self) -> int:
        return self.sas_token_validity_seconds or 3600

    def base_location(self) -> str:
        root = f"abfss://{self.filesystem}@{self.dfs_host()}"
        return f"{root}/{self.key_prefix}" if self.key_prefix else root

    def check_location(self, location: str) -> str:
        spelt = location.strip() if isinstance(location, str) else location
        if isinstance(spelt, str) and spelt.lower().startswith("wasbs://") and not self.allow_alternative_protocols:
            raise BadRequest(f"Location {spelt} uses wasbs://, which this warehouse does not accept: set "
                             "allow-alternative-protocols to use wasbs://")
        return super().check_location(location)

    def blob_name(self, location: str) -> str:
        """The blob (path in the filesystem) a location inside this warehouse names, spelt as the location spells it
        (engines such as adlfs name blobs by the literal path)."""
        location = normalize_location(location)
        root = f"abfss://{self.filesystem}@{self.dfs_host()}"
        if not is_within(location, root) or location == root:
            raise BadRequest(f"{location} is not a file in {root}")
        return location[len(root) + 1:]


_GCS_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")


class GcsStorageProfile(_Profile):
    """Lakekeeper's GCS profile: a bucket and a key prefix the warehouse's tables live under, and whether engines
    are vended downscoped OAuth2 tokens (``sts-enabled``, on unless turned off, as in Lakekeeper). Locations are
    ``gs://bucket/key-prefix/...``. Two settings of our own, both for emulators and private deployments:
    ``endpoint`` (the storage API's base URL, e.g. a fake-gcs-server) and ``sts-endpoint`` (the token exchange
    URL, Google's STS unless set)."""

    type: Literal["gcs"] = "gcs"
    bucket: str
    key_prefix: str | None = Field(default=None, alias="key-prefix")
    sts_enabled: bool = Field(default=True, alias="sts-enabled")
    endpoint: str | None = None
    sts_endpoint: str | None = Field(default=None, alias="sts-endpoint")

    @field_validator("bucket")
    @classmethod
    def _bucket_name(cls, value: str) -> str:
        # Google's rules: 3 to 63 characters per dot-separated part, 222 in all, no IP address, no "goog" prefix
        if not _GCS_BUCKET.match(value) or ".." in value or _IP_ADDRESS.match(value) \
                or any(len(part) > 63 for part in value.split(".")) or value.startswith("goog"):
            raise ValueError(f"{value!r} is not a valid GCS bucket name (lower-case letters, digits, dots, hyphens "
                             "and underscores, beginning and ending with a letter or digit, not beginning with goog)")
        return value

    @field_validator("key_prefix")
    @classmethod
    def _clean_prefix(cls, value: str | None) -> str | None:
        value = clean_key_prefix(value)
        if value is not None and value.startswith(".well-known/acme-challenge"):
            raise ValueError("a GCS key-prefix cannot begin with .well-known/acme-challenge (Google reserves it)")
        return value

    @field_validator("endpoint", "sts_endpoint")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        return http_url(value)

    def base_location(self) -> str:
        return f"gs://{self.bucket}/{self.key_prefix}" if self.key_prefix else f"gs://{self.bucket}"


def split_gcs_location(location: str) -> tuple[str, str]:
    """``gs://bucket/key`` as (bucket, key)."""
    scheme, sep, rest = location.partition("://")
    if not sep or scheme.lower() != "gs":
        raise BadRequest(f"Not a GCS location: {location}")
    bucket, _, key = rest.partition("/")
    return bucket, key


StorageProfile = Annotated[FileStorageProfile | S3StorageProfile | AdlsStorageProfile | GcsStorageProfile,
                          Field(discriminator="type")]


def catalog_defaults(profile: StorageProfile, soft_deletes: bool) -> dict[str, str]:
    """The ``defaults`` of a warehouse's /config, as Lakekeeper gives them: for S3, ``s3.delete-enabled=false``
    while the warehouse soft-deletes (Spark's ``DROP TABLE ... PURGE`` would otherwise delete the files itself,
    before the catalog's expiry; push-s3-delete-disabled) and the KMS key engines write with."""
    if not isinstance(profile, S3StorageProfile):
        return {}
    defaults = {"s3.delete-enabled": "false"} if soft_deletes and profile.pushes_delete_disabled() else {}
    return {**defaults, **profile.encryption_config()}


class HardDelete(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["hard"] = "hard"


class SoftDelete(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)
    type: Literal["soft"] = "soft"
    expiration_seconds: int = Field(alias="expiration-seconds", gt=0)


DeleteProfile = Annotated[HardDelete | SoftDelete, Field(discriminator="type")]
