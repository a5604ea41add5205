"""The authenticated caller of one request."""

from dataclasses import dataclass

from lakeledger.domain.provenance import ANONYMOUS


@dataclass(frozen=True)
class Principal:
    """``id`` is what the log records as the actor: ``oidc~<subject>`` as Lakekeeper writes it, or ``anonymous``
    when authentication is off."""

    id: str
    subject: str | None = None
    issuer: str | None = None
    name: str | None = None
    email: str | None = None
    kind: str = "human"  # "human" or "application" (Lakekeeper's user-type)

    @property
    def authenticated(self) -> bool:
        return self.id != ANONYMOUS


ANONYMOUS_PRINCIPAL = Principal(id=ANONYMOUS)
