"""Encryption of stored secrets with ``LAKELEDGER__PG_ENCRYPTION_KEY``.

The key setting is a passphrase of any length; two independent keys are derived from it with HKDF-SHA256:
one for Fernet (AES-128-CBC with HMAC-SHA256, from the ``cryptography`` library), one for fingerprints.
Fingerprints are keyed so that a fingerprint in the log cannot be used to guess a secret offline."""

import base64
import binascii
import hashlib
import hmac

import orjson

MIN_KEY_LENGTH = 16


class WrongKey(Exception):
    pass


def _derive(passphrase: str, purpose: bytes) -> bytes:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    return HKDF(algorithm=hashes.SHA256(), length=32, salt=b"lakeledger-secret-store", info=purpose).derive(
        passphrase.encode())


class SecretCipher:
    def __init__(self, passphrase: str):
        if len(passphrase) < MIN_KEY_LENGTH:
            raise ValueError(f"LAKELEDGER__PG_ENCRYPTION_KEY must be at least {MIN_KEY_LENGTH} characters")
        # cryptography (about 7 MB of a process) is imported by a server that has a key, not by every one
        from cryptography.fernet import Fernet, InvalidToken

        self._invalid = InvalidToken
        self._fernet = Fernet(base64.urlsafe_b64encode(_derive(passphrase, b"fernet")))
        self._mac_key = _derive(passphrase, b"fingerprint")
        self._seal_key = _derive(passphrase, b"sealed-tokens")

    def encrypt(self, payload: dict) -> bytes:
        return self._fernet.encrypt(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS))

    def decrypt(self, token: bytes) -> dict:
        try:
            return orjson.loads(self._fernet.decrypt(bytes(token)))
        except self._invalid:
            raise WrongKey("A stored secret cannot be decrypted with LAKELEDGER__PG_ENCRYPTION_KEY: the key is not "
                           "the one it was stored with") from None

    def encrypt_bytes(self, data: bytes) -> bytes:
        return self._fernet.encrypt(data)

    def decrypt_bytes(self, token: bytes) -> bytes:
        try:
            return self._fernet.decrypt(bytes(token))
        except self._invalid:
            raise WrongKey("A stored value cannot be decrypted with LAKELEDGER__PG_ENCRYPTION_KEY: the key is not "
                           "the one it was stored with") from None

    def fingerprint(self, payload: dict) -> str:
        digest = hmac.new(self._mac_key, orjson.dumps(payload, option=orjson.OPT_SORT_KEYS), hashlib.sha256)
        return "hmac-sha256:" + digest.hexdigest()[:32]

    def seal(self, payload: dict) -> str:
        """``payload`` as a URL-safe token that only a holder of the key can have made (not encrypted: for values
        that may be read but must not be forged, such as the scope of a signer URL)."""
        body = base64.urlsafe_b64encode(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).rstrip(b"=")
        tag = base64.urlsafe_b64encode(hmac.new(self._seal_key, body, hashlib.sha256).digest()[:16]).rstrip(b"=")
        return (body + b"." + tag).decode()

    def unseal(self, token: str) -> dict | None:
        """The payload of a token made by ``seal`` with this key, or None."""
        body, sep, tag = token.encode(errors="replace").partition(b".")
        expected = base64.urlsafe_b64encode(hmac.new(self._seal_key, body, hashlib.sha256).digest()[:16]).rstrip(b"=")
        if not sep or not hmac.compare_digest(tag, expected):
            return None
        try:
            payload = orjson.loads(base64.urlsafe_b64decode(body + b"=" * (-len(body) % 4)))
        except (binascii.Error, orjson.JSONDecodeError, ValueError):
            return None
        return payload if isinstance(payload, dict) else None
