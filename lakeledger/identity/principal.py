"""The authenticated caller of one request."""

from dataclasses import dataclass

from lakeledger.domain.provenance import ANONYMOUS


@dataclass(frozen=True)
class Principal:
    """``id`` is what the log records as the actor: ``<provider>~<subject>`` as Lakekeeper writes it (``oidc~...``
    for the single provider of LAKELEDGER__OPENID_PROVIDER_URI), or ``anonymous`` when authentication is off.
    ``roles``: what the token's roles claim lists, matched per request to the roles of ident ``<provider>~<role>``
    (lakeledger/authz/token_roles.py); never recorded, since a claim is no change to the catalog."""

    id: str
    subject: str | None = None
    issuer: str | None = None
    name: str | None = None
    email: str | None = None
    kind: str = "human"  # "human" or "application" (Lakekeeper's user-type)
    provider: str | None = None
    roles: tuple[str, ...] = ()

    @property
    def authenticated(self) -> bool:
        return self.id != ANONYMOUS


ANONYMOUS_PRINCIPAL = Principal(id=ANONYMOUS)
