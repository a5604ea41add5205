"""OpenID Connect bearer tokens: the provider's discovery document (fetched once, at start-up), its keys (PyJWKClient:
fetched when first needed, cached, fetched again for an unknown ``kid``), and the verification of one token into the
Principal it names."""

import time
from dataclasses import dataclass

import httpx
import jwt
from jwt import PyJWKClient
from jwt.exceptions import PyJWKClientConnectionError, PyJWKClientError

from lakeledger.identity.claims import NoSubject, principal_from_claims
from lakeledger.identity.principal import Principal
from lakeledger.identity.token_cache import VerifiedTokens

# Asymmetric only: with an HMAC algorithm the provider's public key would become the shared secret (alg confusion),
# and "none" is no signature at all.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
# Clock skew tolerated between the provider and this server on exp, nbf and iat.
LEEWAY_SECONDS = 5
# How often at most an unknown kid makes us fetch the keys again: a provider's rotation is picked up within this,
# and tokens with made-up kids cannot make the server hammer the provider.
JWKS_REFRESH_COOLDOWN_SECONDS = 10
JWKS_LIFESPAN_SECONDS = 300


class InvalidToken(Exception):
    """The bearer token is refused (401). The message says why, never what the token holds."""


class ProviderUnavailable(Exception):
    """The provider's discovery document or keys cannot be fetched."""


def _comma_list(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


@dataclass(frozen=True)
class OpenIdSettings:
    provider_uri: str
    audiences: tuple[str, ...] = ()
    additional_issuers: tuple[str, ...] = ()
    subject_claims: tuple[str, ...] = ("sub",)

    @classmethod
    def from_settings(cls, settings) -> "OpenIdSettings | None":
        """None when no provider is configured: authentication is off."""
        if not settings.openid_provider_uri:
            return None
        return cls(provider_uri=settings.openid_provider_uri.strip(),
                   audiences=_comma_list(settings.openid_audience),
                   additional_issuers=_comma_list(settings.openid_additional_issuers),
                   subject_claims=_comma_list(settings.openid_subject_claim) or ("sub",))

    @property
    def discovery_url(self) -> str:
        return self.provider_uri.rstrip("/") + "/.well-known/openid-configuration"


class OpenIdVerifier:
    def __init__(self, config: OpenIdSettings, issuer: str, jwks_uri: str, cache: VerifiedTokens | None = None):
        self.config = config
        self.issuers = (issuer, *config.additional_issuers)
        self.jwks = PyJWKClient(jwks_uri, cache_jwk_set=True, lifespan=JWKS_LIFESPAN_SECONDS, timeout=10,
                                cooldown_duration=JWKS_REFRESH_COOLDOWN_SECONDS)
        self.tokens = cache or VerifiedTokens()

    @classmethod
    def discover(cls, config: OpenIdSettings, timeout: float = 10) -> "OpenIdVerifier":
        """Fetches the discovery document; ProviderUnavailable (a one-line reason) when that fails."""
        url = config.discovery_url
        try:
            response = httpx.get(url, timeout=timeout, follow_redirects=True)
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as e:
            raise ProviderUnavailable(f"cannot fetch the OpenID discovery document {url}: {e}") from None
        issuer, jwks_uri = (document.get("issuer"), document.get("jwks_uri")) if isinstance(document, dict) \
            else (None, None)
        if not isinstance(issuer, str) or not isinstance(jwks_uri, str):
            raise ProviderUnavailable(f"the OpenID discovery document {url} names no issuer or no jwks_uri")
        return cls(config, issuer, jwks_uri)

    def cached(self, token: str) -> Principal | None:
        """The principal of a token verified before and not expired since; cheap, never blocks."""
        return self.tokens.get(token)

    def verify(self, token: str) -> Principal:
        """Verifies ``token`` (may fetch the provider's keys: blocking) and remembers it until it expires.
        InvalidToken when it is refused, ProviderUnavailable when the keys cannot be fetched."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            raise InvalidToken("The bearer token is not a JWT") from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise InvalidToken(f"Tokens signed with {str(alg)[:16]!r} are not accepted; "
                               f"the algorithms accepted are {', '.join(ALGORITHMS)}")
        try:
            # no kid matches no key (refused below), as PyJWT's own get_signing_key_from_jwt passes it
            key = self.jwks.get_signing_key(header.get("kid"))  # type: ignore[arg-type]
        except PyJWKClientConnectionError as e:
            raise ProviderUnavailable(f"cannot fetch the OpenID provider's keys: {e}") from None
        except PyJWKClientError:
            raise InvalidToken("The token was not signed by a key of the OpenID provider") from None
        try:
            claims = jwt.decode(token, key, algorithms=list(ALGORITHMS), audience=list(self.config.audiences) or None,
                                issuer=self.issuers, leeway=LEEWAY_SECONDS,
                                options={"require": ["exp", "iss"], "verify_aud": bool(self.config.audiences)})
        except jwt.ExpiredSignatureError:
            raise InvalidToken("The token has expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidToken("The token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise InvalidToken("The token is not meant for this catalog (audience)") from None
        except jwt.InvalidIssuerError:
            raise InvalidToken("The token's issuer is not trusted") from None
        except jwt.InvalidSignatureError:
            raise InvalidToken("The token's signature does not verify") from None
        except jwt.MissingRequiredClaimError as e:
            raise InvalidToken(f"The token has no {e.claim!r} claim") from None
        except jwt.InvalidTokenError:
            raise InvalidToken("The token is invalid") from None
        try:
            principal = principal_from_claims(claims, self.config.subject_claims)
        except NoSubject as e:
            raise InvalidToken(str(e)) from None
        until = float(claims["exp"]) + LEEWAY_SECONDS
        if until > time.time():
            self.tokens.put(token, principal, until)
        return principal
