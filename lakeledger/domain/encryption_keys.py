"""Table encryption keys (format v3 ``encryption-keys``) and the two REST updates that change them,
which pyiceberg 0.12 does not model. The catalog never decrypts anything: a key's metadata is kept
as the base64 text the client sent, so it round-trips byte for byte."""

import base64
import binascii
from typing import Any, Literal

from pydantic import Field, field_validator
from pyiceberg.typedef import IcebergBaseModel

ENCRYPTION_FORMAT_VERSION = 3


class EncryptedKey(IcebergBaseModel):
    key_id: str = Field(alias="key-id", min_length=1)
    encrypted_key_metadata: str = Field(alias="encrypted-key-metadata")
    encrypted_by_id: str | None = Field(alias="encrypted-by-id", default=None)
    properties: dict[str, str] | None = None

    @field_validator("encrypted_key_metadata")
    @classmethod
    def _base64(cls, value: str) -> str:
        # Java clients decode this strictly; a value they cannot read must be refused here, not on their load
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("encrypted-key-metadata must be base64") from None
        return value

    @field_validator("properties")
    @classmethod
    def _no_empty_properties(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        # Java writes no properties rather than empty ones; one key must compare equal either way
        return value or None


class AddEncryptionKeyUpdate(IcebergBaseModel):
    action: Literal["add-encryption-key"] = Field(default="add-encryption-key")
    encryption_key: EncryptedKey = Field(alias="encryption-key")


class RemoveEncryptionKeyUpdate(IcebergBaseModel):
    action: Literal["remove-encryption-key"] = Field(default="remove-encryption-key")
    key_id: str = Field(alias="key-id")


def keys_of(metadata: Any) -> list[EncryptedKey]:
    return list(getattr(metadata, "encryption_keys", None) or [])


def with_key_added(metadata: Any, key: EncryptedKey) -> Any | None:
    """The metadata holding ``key``, or None when it already does (Java's builder treats that as no
    change). Keys are a v3 field: older tables have nowhere to keep them."""
    if metadata.format_version < ENCRYPTION_FORMAT_VERSION:
        raise ValueError(f"Encryption keys need table format version {ENCRYPTION_FORMAT_VERSION}; "
                         f"this table is v{metadata.format_version}")
    keys = keys_of(metadata)
    for existing in keys:
        if existing.key_id == key.key_id:
            if existing != key:
                raise ValueError(f"Encryption key {key.key_id} already exists with different metadata")
            return None
    return metadata.model_copy(update={"encryption_keys": [*keys, key]})


def with_key_removed(metadata: Any, key_id: str) -> Any | None:
    """The metadata without the key ``key_id``, or None when it has no such key (no change, as in Java)."""
    keys = keys_of(metadata)
    remaining = [k for k in keys if k.key_id != key_id]
    if len(remaining) == len(keys):
        return None
    # an empty list is written as no field at all, as Java writes it
    return metadata.model_copy(update={"encryption_keys": remaining or None})
