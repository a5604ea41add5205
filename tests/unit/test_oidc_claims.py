"""The principal a verified token's claims name (lakeledger/identity/claims.py), and the cache of verified tokens."""

import time

import pytest

from lakeledger.identity.claims import NoSubject, principal_from_claims
from lakeledger.identity.principal import Principal
from lakeledger.identity.token_cache import VerifiedTokens


def test_a_client_credentials_token_is_an_application_named_by_its_subject():
    p = principal_from_claims({"sub": "spark", "client_id": "spark", "iss": "https://idp"}, ("sub",))
    assert (p.id, p.subject, p.issuer, p.kind, p.name, p.email) == ("oidc~spark", "spark", "https://idp",
                                                                  "application", None, None)


def test_a_person_gets_name_and_email_from_the_usual_claims():
    p = principal_from_claims({"sub": "u-1", "azp": "web", "given_name": "Ada", "family_name": "Lovelace",
                               "upn": "ada@example.com"}, ("sub",))
    assert (p.id, p.kind, p.name, p.email) == ("oidc~u-1", "human", "Ada Lovelace", "ada@example.com")
    p = principal_from_claims({"sub": "u-2", "name": "Bob", "preferred_username": "bob@example.com"}, ("sub",))
    assert (p.name, p.email, p.kind) == ("Bob", "bob@example.com", "human")


@pytest.mark.parametrize("claims", [
    {"sub": "x", "idtyp": "app", "name": "Reporting"},  # Entra ID
    {"sub": "9f2c", "azp": "spark", "preferred_username": "service-account-spark"},  # Keycloak
    {"sub": "x"},  # no name, no email
])
def test_machines_are_applications(claims):
    assert principal_from_claims(claims, ("sub",)).kind == "application"


def test_the_subject_comes_from_the_first_configured_claim_present():
    claims = {"sub": "pairwise-123", "oid": "00000000-aaaa", "email": "ada@example.com"}
    assert principal_from_claims(claims, ("oid", "sub")).id == "oidc~00000000-aaaa"
    assert principal_from_claims({"sub": "s"}, ("oid", "sub")).id == "oidc~s"
    with pytest.raises(NoSubject, match="oid"):
        principal_from_claims({"email": "x@y"}, ("oid",))
    with pytest.raises(NoSubject):
        principal_from_claims({"sub": ""}, ("sub",))
    with pytest.raises(NoSubject):
        principal_from_claims({"sub": {"nested": 1}}, ("sub",))


def test_verified_tokens_expire_and_stay_bounded():
    cache = VerifiedTokens(max_entries=2)
    someone = Principal(id="oidc~a")
    cache.put("t1", someone, time.time() + 60)
    cache.put("t2", someone, time.time() - 1)
    assert cache.get("t1") is someone
    assert cache.get("t2") is None  # expired: refused again, and forgotten
    assert len(cache) == 1
    cache.put("t3", someone, time.time() + 60)
    cache.put("t4", someone, time.time() + 60)  # t1 was used last but t3, t4 are newer: t1 goes
    assert cache.get("t1") is None and cache.get("t3") is someone and cache.get("t4") is someone
    # keyed by the whole token: the same signature under another payload is a miss
    assert cache.get("other-header.other-payload.t3") is None
