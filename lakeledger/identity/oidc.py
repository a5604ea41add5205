"""OpenID Connect bearer tokens: the provider's discovery document (fetched once, at start-up), its keys (PyJWKClient:
fetched when first needed, cached, fetched again for an unknown ``kid``), and the verification of one token into the
Principal it names.

Several providers (``LAKELEDGER__OPENID_PROVIDERS``, as Lakekeeper's) are ``OpenIdProviders``: a token goes to the one
whose issuer its ``iss`` names, and a provider that cannot be reached (at start-up, when it may be, or later) answers
only its own tokens with ProviderUnavailable."""

import logging
import threading
import time
from collections.abc import Sequence

import httpx
import jwt
from jwt import PyJWKClient
from jwt.exceptions import PyJWKClientConnectionError, PyJWKClientError

from lakeledger.identity.claims import NoSubject, principal_from_claims
from lakeledger.identity.openid_settings import InvalidToken, OpenIdSettings, ProviderUnavailable
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
# how often at most a provider that could not be discovered is asked again (its tokens wait for it as 503s)
DISCOVERY_RETRY_SECONDS = 5

logger = logging.getLogger(__name__)


class OpenIdVerifier:
    def __init__(self, config: OpenIdSettings, issuer: str, jwks_uri: str, cache: VerifiedTokens | None = None):
        self.config = config
        self.issuers = (issuer, *config.additional_issuers)
        self.jwks = PyJWKClient(jwks_uri, cache_jwk_set=True, lifespan=JWKS_LIFESPAN_SECONDS, timeout=10,
                                cooldown_duration=JWKS_REFRESH_COOLDOWN_SECONDS)
        self.tokens = cache or VerifiedTokens()

    @classmethod
    def discover(cls, config: OpenIdSettings, timeout: float = 10,
                 cache: VerifiedTokens | None = None) -> "OpenIdVerifier":
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
        return cls(config, issuer, jwks_uri, cache)

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
            principal = principal_from_claims(claims, self.config.subject_claims, self.config.idp_id,
                                              self.config.roles_claim)
        except NoSubject as e:
            raise InvalidToken(str(e)) from None
        until = float(claims["exp"]) + LEEWAY_SECONDS
        if until > time.time():
            self.tokens.put(token, principal, until)
        return principal


def _same_issuer(a: str, b: str) -> bool:
    # for routing only (the signature check compares exactly): providers differ on a trailing slash
    return a.rstrip("/") == b.rstrip("/")


class _Provider:
    """One provider's verifier, discovered at start-up or, when it was down then, on a later token of its."""

    def __init__(self, config: OpenIdSettings, tokens: VerifiedTokens):
        self.config = config
        self.tokens = tokens
        self.verifier: OpenIdVerifier | None = None
        self._next_attempt = 0.0
        self._lock = threading.Lock()

    def discover(self) -> None:
        self.verifier = OpenIdVerifier.discover(self.config, cache=self.tokens)

    def issuers(self) -> tuple[str, ...]:
        return self.verifier.issuers if self.verifier else self.config.expected_issuers

    def claims(self, issuer: str) -> bool:
        return any(_same_issuer(issuer, known) for known in self.issuers())

    def ready(self) -> OpenIdVerifier:
        """The verifier, discovering the provider first if that failed before (at most every
        DISCOVERY_RETRY_SECONDS); ProviderUnavailable while it cannot be."""
        verifier = self.verifier
        if verifier is not None:
            return verifier
        with self._lock:
            if self.verifier is None:
                if time.monotonic() < self._next_attempt:
                    raise ProviderUnavailable(f"the OpenID provider {self.config.idp_id} ({self.config.provider_uri}) "
                                              "could not be reached; trying again shortly")
                try:
                    self.discover()
                except ProviderUnavailable as e:
                    self._next_attempt = time.monotonic() + DISCOVERY_RETRY_SECONDS
                    raise ProviderUnavailable(f"the OpenID provider {self.config.idp_id}: {e}") from None
                logger.info("OpenID provider %s discovered", self.config.idp_id)
            assert self.verifier is not None
            return self.verifier


class OpenIdProviders:
    """Every configured provider behind one ``cached``/``verify``: one provider takes every token (as before there
    were several), several take each the tokens whose ``iss`` is theirs."""

    def __init__(self, configs: Sequence[OpenIdSettings]):
        if not configs:
            raise ValueError("no OpenID provider configured")
        self.tokens = VerifiedTokens()
        self.providers = [_Provider(config, self.tokens) for config in configs]

    @classmethod
    def start(cls, configs: Sequence[OpenIdSettings]) -> "OpenIdProviders":
        """Discovers every provider: ProviderUnavailable for one required at start-up that cannot be; one that is
        not required is logged and tried again on its first token."""
        providers = cls(configs)
        for provider in providers.providers:
            try:
                provider.discover()
            except ProviderUnavailable as e:
                if provider.config.required_at_start:
                    raise
                logger.warning("OpenID provider %s is not reachable at start-up (its tokens are answered 503 until "
                               "it is): %s", provider.config.idp_id, e)
        return providers

    def cached(self, token: str) -> Principal | None:
        return self.tokens.get(token)

    def verify(self, token: str) -> Principal:
        return self._provider_of(token).ready().verify(token)

    def _provider_of(self, token: str) -> _Provider:
        if len(self.providers) == 1:
            return self.providers[0]
        try:
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
        except jwt.InvalidTokenError:
            raise InvalidToken("The bearer token is not a JWT") from None
        if isinstance(issuer, str):
            for provider in self.providers:
                if provider.claims(issuer):
                    return provider
        raise InvalidToken("The token's issuer is not trusted")
