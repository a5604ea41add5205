"""What configures OpenID Connect and what its verification raises, apart from the verifier
(lakeledger/identity/oidc.py): a server without a provider never imports PyJWT, cryptography and httpx."""

from collections.abc import Sequence
from dataclasses import dataclass

from lakeledger.identity.claims import PRIMARY_PROVIDER


class InvalidToken(Exception):
    """The bearer token is refused (401). The message says why, never what the token holds."""


class ProviderUnavailable(Exception):
    """The provider's discovery document or keys cannot be fetched."""


def _comma_list(value: str | Sequence[str] | None) -> tuple[str, ...]:
    parts = (value or "").split(",") if isinstance(value, str) or value is None else value
    return tuple(part.strip() for part in parts if part.strip())


@dataclass(frozen=True)
class OpenIdSettings:
    provider_uri: str
    audiences: tuple[str, ...] = ()
    additional_issuers: tuple[str, ...] = ()
    subject_claims: tuple[str, ...] = ("sub",)
    # the prefix of its users' ids, and the provider-id of the roles its tokens' roles claim names
    idp_id: str = PRIMARY_PROVIDER
    roles_claim: str | None = None
    required_at_start: bool = True

    @classmethod
    def from_settings(cls, settings) -> "OpenIdSettings | None":
        """The single provider of LAKELEDGER__OPENID_PROVIDER_URI; None when it is not set."""
        if not settings.openid_provider_uri:
            return None
        return cls(provider_uri=settings.openid_provider_uri.strip(),
                   audiences=_comma_list(settings.openid_audience),
                   additional_issuers=_comma_list(settings.openid_additional_issuers),
                   subject_claims=_comma_list(settings.openid_subject_claim) or ("sub",),
                   roles_claim=settings.openid_roles_claim)

    @classmethod
    def all_from_settings(cls, settings) -> "list[OpenIdSettings]":
        """Every configured provider, the single one first, then LAKELEDGER__OPENID_PROVIDERS by id (Lakekeeper's
        order); empty: authentication is off."""
        single = cls.from_settings(settings)
        more = [cls(provider_uri=p.uri.strip(), audiences=_comma_list(p.audience),
                    additional_issuers=_comma_list(p.additional_issuers),
                    subject_claims=_comma_list(p.subject_claims) or ("sub",), idp_id=idp_id,
                    roles_claim=p.roles_claim, required_at_start=p.require_connected_on_startup)
                for idp_id, p in sorted(settings.openid_providers.items())]
        return ([single] if single else []) + more

    @property
    def discovery_url(self) -> str:
        return self.provider_uri.rstrip("/") + "/.well-known/openid-configuration"

    @property
    def expected_issuers(self) -> tuple[str, ...]:
        """The issuers known before discovery: OpenID Connect Discovery makes the issuer the URI the document is
        found under, so a provider down at start-up still claims its tokens."""
        return (self.provider_uri, *self.additional_issuers)
