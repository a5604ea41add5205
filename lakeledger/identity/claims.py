"""The principal a verified token's claims name. Pure: the claims are already verified (lakeledger/identity/oidc.py)."""

from collections.abc import Mapping, Sequence
from typing import Any

from lakeledger.identity.principal import Principal

# the id of the single provider of LAKELEDGER__OPENID_PROVIDER_URI: its users are oidc~<subject>, as Lakekeeper's
PRIMARY_PROVIDER = "oidc"
PREFIX = PRIMARY_PROVIDER + "~"


class NoSubject(ValueError):
    """The token names none of the claims the subject is taken from."""


def principal_from_claims(claims: Mapping[str, Any], subject_claims: Sequence[str],
                          provider: str = PRIMARY_PROVIDER, roles_claim: str | None = None) -> Principal:
    """The principal ``<provider>~<subject>``: the same subject at two providers is two users."""
    subject = next((str(claims[c]) for c in subject_claims if _present(claims.get(c))), None)
    if subject is None:
        raise NoSubject(f"The token has no subject claim ({', '.join(subject_claims)})")
    return Principal(id=f"{provider}~{subject}", subject=subject, issuer=claims.get("iss"), name=_name(claims),
                     email=_email(claims), kind=_kind(claims), provider=provider,
                     roles=claimed_roles(claims, roles_claim) if roles_claim else ())


def claimed_roles(claims: Mapping[str, Any], path: str) -> tuple[str, ...]:
    """The role names the token lists at ``path``: a claim of that very name (``https://example.com/roles``), else
    the dots walk into objects (Keycloak's ``realm_access.roles``). A list of strings or one string; anything else,
    or nothing there, is no role (a token is not refused for lacking groups)."""
    value: Any = claims.get(path)
    if value is None:
        value = claims
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return ()
    return tuple(dict.fromkeys(v for v in value if isinstance(v, str) and v))


def _present(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool) and str(value) != ""


def _text(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    return value.strip() or None if isinstance(value, str) else None


def _name(claims: Mapping[str, Any]) -> str | None:
    # the claims common providers put a display name in (OIDC Core, Entra ID, Keycloak), as Lakekeeper reads them
    given = _text(claims, "given_name") or _text(claims, "first_name")
    family = _text(claims, "family_name") or _text(claims, "last_name")
    joined = " ".join(p for p in (given, family) if p) or None
    return _text(claims, "name") or joined or _text(claims, "app_displayname") or _text(claims, "preferred_username")


def _email(claims: Mapping[str, Any]) -> str | None:
    email = _text(claims, "email")
    if email:
        return email
    for claim in ("upn", "preferred_username"):
        value = _text(claims, claim)
        if value and "@" in value:
            return value
    return None


def _kind(claims: Mapping[str, Any]) -> str:
    """``application`` for a token a client got for itself (client credentials), ``human`` otherwise. RFC 9068 makes
    the subject of such a token the client itself (``sub`` equal to ``client_id``/``azp``), which is what
    oidc-provider and Okta issue; Entra ID says so outright (``idtyp: app``), Keycloak names its service accounts
    ``service-account-<client>``. A person's token carries an email or a name; one with neither is a machine's."""
    subject = claims.get("sub")
    if subject is not None and subject in (claims.get("client_id"), claims.get("azp"), claims.get("appid")):
        return "application"
    if claims.get("idtyp") == "app":
        return "application"
    username = _text(claims, "preferred_username") or ""
    if username.startswith("service-account-"):
        return "application"
    if _email(claims) is None and _name(claims) is None:
        return "application"
    return "human"
