"""The secrets a warehouse's storage needs, in Lakekeeper's ``storage-credential`` JSON.

A credential never enters the event log: the log is immutable and replayed into sinks, so a secret written
there could never be taken back. It is kept in the secret store, and events carry a ``SecretRef`` instead:
where it is kept and a fingerprint that tells two credentials apart without revealing either."""

import base64
import binascii
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError, field_validator

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.storage_profile import (
    AdlsStorageProfile,
    GcsStorageProfile,
    S3StorageProfile,
    StorageProfile,
)


class S3AccessKeyCredential(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True, hide_input_in_errors=True)

    type: Literal["s3"] = "s3"
    credential_type: Literal["access-key"] = Field(alias="credential-type")
    aws_access_key_id: str = Field(alias="aws-access-key-id", min_length=1, max_length=256)
    aws_secret_access_key: str = Field(alias="aws-secret-access-key", min_length=1, max_length=1024, repr=False)

    @field_validator("aws_access_key_id", "aws_secret_access_key")
    @classmethod
    def _printable(cls, value: str) -> str:
        if value != value.strip() or any(ord(c) < 0x21 or ord(c) > 0x7E for c in value):
            raise ValueError("must be printable ASCII without spaces")
        return value


class AzSharedAccessKeyCredential(BaseModel):
    """A storage account's access key: it signs every request, and the SAS tokens engines are given."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True, hide_input_in_errors=True)

    type: Literal["az"] = "az"
    credential_type: Literal["shared-access-key"] = Field(alias="credential-type")
    key: str = Field(min_length=1, max_length=1024, repr=False)

    @field_validator("key")
    @classmethod
    def _base64(cls, value: str) -> str:
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("must be the account key as Azure shows it (base64)") from None
        return value


class AzClientCredential(BaseModel):
    """An Entra ID application (service principal): its tokens reach the storage, and SAS tokens are signed with
    a user delegation key obtained with them."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True, hide_input_in_errors=True)

    type: Literal["az"] = "az"
    credential_type: Literal["client-credentials"] = Field(alias="credential-type")
    client_id: str = Field(alias="client-id", min_length=1, max_length=256)
    tenant_id: str = Field(alias="tenant-id", min_length=1, max_length=256)
    client_secret: str = Field(alias="client-secret", min_length=1, max_length=1024, repr=False)


AzCredential = Annotated[AzSharedAccessKeyCredential | AzClientCredential, Field(discriminator="credential_type")]

class GcsServiceKey(BaseModel):
    """A service account's JSON key as Google's console hands it out (Lakekeeper takes these fields). Fields
    beyond them are not kept."""

    model_config = ConfigDict(extra="ignore", frozen=True, hide_input_in_errors=True)

    type: Literal["service_account"]
    project_id: str = Field(min_length=1, max_length=256)
    private_key_id: str = Field(min_length=1, max_length=256)
    private_key: str = Field(min_length=1, max_length=16384, repr=False)
    client_email: str = Field(min_length=3, max_length=512)
    client_id: str = Field(max_length=256)
    auth_uri: str = Field(max_length=2048)
    token_uri: str = Field(min_length=1, max_length=2048)
    auth_provider_x509_cert_url: str = Field(max_length=2048)
    client_x509_cert_url: str = Field(max_length=2048)
    universe_domain: str = Field(max_length=256)

    @field_validator("private_key")
    @classmethod
    def _pem(cls, value: str) -> str:
        if "-----BEGIN PRIVATE KEY-----" not in value and "-----BEGIN RSA PRIVATE KEY-----" not in value:
            raise ValueError("must be the PEM private key of the service account's JSON key")
        return value

    @field_validator("token_uri")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be an http:// or https:// URL")
        return value


class GcsServiceAccountKeyCredential(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True, hide_input_in_errors=True)

    type: Literal["gcs"] = "gcs"
    credential_type: Literal["service-account-key"] = Field(alias="credential-type")
    key: GcsServiceKey = Field(repr=False)


class GcsSystemIdentityCredential(BaseModel):
    """The identity the server itself runs as (Lakekeeper's ``gcp-system-identity``): off in this release, so
    refused when a storage is proven (lakeledger/storage/gcs_check.py)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    type: Literal["gcs"] = "gcs"
    credential_type: Literal["gcp-system-identity"] = Field(alias="credential-type")


GcsCredential = Annotated[GcsServiceAccountKeyCredential | GcsSystemIdentityCredential,
                          Field(discriminator="credential_type")]


def _credential_kind(raw: Any) -> str | None:
    """The outer discriminator: ``type`` (s3, az, gcs); each kind may have its own inner one (``credential-type``)."""
    if isinstance(raw, dict):
        return raw.get("type")
    return getattr(raw, "type", None)


StorageCredential = Annotated[
    Annotated[S3AccessKeyCredential, Tag("s3")]
    | Annotated[AzCredential, Tag("az")]
    | Annotated[GcsCredential, Tag("gcs")],
    Discriminator(_credential_kind)]
_credentials: TypeAdapter[StorageCredential] = TypeAdapter(StorageCredential)

# which credential types each storage type takes
_ACCEPTED: dict[type[BaseModel], tuple[type[BaseModel], ...]] = {
    S3StorageProfile: (S3AccessKeyCredential,),
    AdlsStorageProfile: (AzSharedAccessKeyCredential, AzClientCredential),
    GcsStorageProfile: (GcsServiceAccountKeyCredential, GcsSystemIdentityCredential),
}


def parse_storage_credential(raw: Any, profile: StorageProfile) -> StorageCredential | None:
    """The credential for ``profile``, or None when the profile takes none (file warehouses) and none was given.
    Error messages never repeat the input: it holds a secret."""
    accepted = _ACCEPTED.get(type(profile), ())
    if raw is None:
        if accepted:
            raise BadRequest(f"A {profile.type} storage profile needs a storage-credential")
        return None
    if not accepted:
        raise BadRequest(f"A {profile.type} storage profile takes no storage-credential")
    if not isinstance(raw, dict):
        raise BadRequest("storage-credential must be an object")
    try:
        credential = _credentials.validate_python(raw)
    except ValidationError as e:
        err = e.errors(include_input=False)[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise BadRequest(f"Invalid storage-credential: {where}: {err.get('msg')}") from None
    if not isinstance(credential, accepted):
        raise BadRequest(f"A {profile.type} storage profile does not take a {credential.type} credential")
    return credential


def credential_from_secret(payload: JsonObject) -> StorageCredential:
    return _credentials.validate_python(payload)


class SecretRef(BaseModel):
    """Where a secret is kept (its id in the secret store) and its fingerprint: what events record."""

    model_config = ConfigDict(populate_by_name=True, frozen=True)

    secret_id: UUID = Field(alias="secret-id")
    fingerprint: str

    def as_event(self) -> JsonObject:
        return {"secret-id": str(self.secret_id), "fingerprint": self.fingerprint}

    @classmethod
    def from_event(cls, raw: JsonObject | None) -> "SecretRef | None":
        return cls.model_validate(raw) if raw else None
