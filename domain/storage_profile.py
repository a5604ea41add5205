"""Where a warehouse keeps its files, and the rules for table locations inside it.

A profile is a discriminated union on ``type`` (Lakekeeper's JSON shape), so adding a storage kind
is adding one model. Locations are compared in a normalised form: no trailing slash, and the
``file:/x`` / ``file:///x`` spellings that Java and Python write for one local path made one.
"""

import posixpath
from urllib.parse import quote
from typing import Annotated, Literal, Union
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, field_validator

from lakeledger.domain.errors import BadRequest


def normalize_location(location: str) -> str:
    if not isinstance(location, str) or not location.strip():
        raise BadRequest("Location must be a non-empty string")
    location = location.strip()
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in location):
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
    return location.rstrip("/")


def is_within(location: str, base: str) -> bool:
    """True when ``location`` is ``base`` itself or below it (both normalised)."""
    return location == base or location.startswith(base.rstrip("/") + "/")


def overlaps(a: str, b: str) -> bool:
    return is_within(a, b) or is_within(b, a)


class _Profile(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    def base_location(self) -> str:
        raise NotImplementedError

    def namespace_location(self, path: tuple[str, ...] | list[str]) -> str:
        """Where a namespace's tables would go by name: the warehouse location and one escaped folder per level.
        Only advertised (the `location` namespace property), never a place the catalog writes to: engines such as
        Trino stage-create their tables below it instead of asking the catalog for a location first."""
        return "/".join([self.base_location(), *(quote(level, safe="") for level in path)])

    def default_table_location(self, namespace_id: UUID, tabular_id: UUID) -> str:
        return f"{self.base_location()}/{namespace_id}/{tabular_id}"

    def check_tabular_location(self, location: str) -> str:
        location = normalize_location(location)
        base = self.base_location()
        if not is_within(location, base) or location == base:
            raise BadRequest(f"Location {location} is not inside the warehouse location {base}")
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


class S3StorageProfile(_Profile):
    """Lakekeeper's S3 profile. Accepted in shape so the API is stable; serving it needs the S3
    storage backend, which is not part of this release."""

    type: Literal["s3"] = "s3"
    bucket: str
    key_prefix: str | None = Field(default=None, alias="key-prefix")
    region: str | None = None
    endpoint: str | None = None
    path_style_access: bool | None = Field(default=None, alias="path-style-access")
    sts_enabled: bool = Field(default=False, alias="sts-enabled")
    flavor: Literal["aws", "s3-compat", "minio"] | None = None
    assume_role_arn: str | None = Field(default=None, alias="assume-role-arn")
    sts_role_arn: str | None = Field(default=None, alias="sts-role-arn")
    allow_alternative_protocols: bool | None = Field(default=None, alias="allow-alternative-protocols")
    remote_signing_url_style: str | None = Field(default=None, alias="remote-signing-url-style")

    def base_location(self) -> str:
        prefix = (self.key_prefix or "").strip("/")
        return f"s3://{self.bucket}/{prefix}" if prefix else f"s3://{self.bucket}"


StorageProfile = Annotated[Union[FileStorageProfile, S3StorageProfile], Field(discriminator="type")]


class HardDelete(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["hard"] = "hard"


class SoftDelete(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)
    type: Literal["soft"] = "soft"
    expiration_seconds: int = Field(alias="expiration-seconds", gt=0)


DeleteProfile = Annotated[Union[HardDelete, SoftDelete], Field(discriminator="type")]
