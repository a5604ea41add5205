import threading
from uuid import UUID, uuid4

from psycopg_pool import ConnectionPool

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.storage_credential import SecretRef
from lakeledger.secretstore.cipher import SecretCipher


class SecretsUnavailable(BadRequest):
    """Storage credentials cannot be accepted: no encryption key is configured."""


class SecretStore:
    """Secrets by id in ``ll_secrets``, encrypted. A secret is written before the event that references it is
    appended (an append that then fails leaves an unreferenced row, never a reference to nothing), and never
    changed: a new credential is a new secret. Decrypted secrets are cached for the life of the process."""

    def __init__(self, pool: ConnectionPool, passphrase: str | None):
        self.pool = pool
        self.cipher = SecretCipher(passphrase) if passphrase else None
        self._cache: dict[UUID, dict] = {}
        self._lock = threading.Lock()

    def ensure_available(self) -> None:
        self._cipher()

    def _cipher(self) -> SecretCipher:
        if self.cipher is None:
            raise SecretsUnavailable(
                "Storage credentials are kept encrypted, and this server has no key: set "
                "LAKELEDGER__PG_ENCRYPTION_KEY (at least 16 characters, the same on every server) and restart")
        return self.cipher

    def seal(self, payload: dict) -> str:
        return self._cipher().seal(payload)

    def unseal(self, token: str) -> dict | None:
        return self.cipher.unseal(token) if self.cipher is not None else None

    def put(self, payload: dict) -> SecretRef:
        cipher = self._cipher()
        secret_id = uuid4()
        with self.pool.connection() as conn:
            conn.execute("INSERT INTO ll_secrets (id, ciphertext) VALUES (%s, %s)",
                         (secret_id, cipher.encrypt(payload)))
        with self._lock:
            self._cache[secret_id] = payload
        return SecretRef(secret_id=secret_id, fingerprint=cipher.fingerprint(payload))

    def get(self, secret_id: UUID) -> dict:
        with self._lock:
            found = self._cache.get(secret_id)
        if found is not None:
            return found
        cipher = self._cipher()
        with self.pool.connection() as conn:
            row = conn.execute("SELECT ciphertext FROM ll_secrets WHERE id = %s", (secret_id,)).fetchone()
        if row is None:
            raise LookupError(f"Secret {secret_id} is not in the secret store")
        payload = cipher.decrypt(row[0])
        with self._lock:
            self._cache[secret_id] = payload
        return payload

    def delete(self, secret_id: UUID) -> None:
        with self.pool.connection() as conn:
            conn.execute("DELETE FROM ll_secrets WHERE id = %s", (secret_id,))
        with self._lock:
            self._cache.pop(secret_id, None)
