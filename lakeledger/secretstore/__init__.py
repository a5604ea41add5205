"""Secrets kept out of the event log: encrypted at rest in Postgres, referenced from events by id and
fingerprint (see lakeledger/domain/storage_credential.py for why)."""

from lakeledger.secretstore.cipher import SecretCipher
from lakeledger.secretstore.store import SecretStore, SecretsUnavailable

__all__ = ["SecretCipher", "SecretStore", "SecretsUnavailable"]
