"""Several OpenID providers (lakeledger/identity/oidc.py, lakeledger/settings.py) and roles from a token's claims
(lakeledger/identity/claims.py): the parts that need no provider running. The providers themselves are exercised
for real in tests/e2e/test_openid_providers.py."""

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import ValidationError

from lakeledger.identity.claims import claimed_roles, principal_from_claims
from lakeledger.identity.oidc import InvalidToken, OpenIdProviders, OpenIdSettings, ProviderUnavailable
from lakeledger.settings import Settings


def test_the_same_subject_at_two_providers_is_two_principals_with_their_claimed_roles():
    claims = {"sub": "spark", "iss": "https://a", "groups": ["analysts", "analysts", "", 3, "staff"]}
    primary = principal_from_claims(claims, ("sub",))
    other = principal_from_claims(claims, ("sub",), "okta", "groups")
    assert (primary.id, primary.provider, primary.roles) == ("oidc~spark", "oidc", ())
    assert (other.id, other.provider, other.roles) == ("okta~spark", "okta", ("analysts", "staff"))


@pytest.mark.parametrize(("path", "claims", "roles"), [
    ("groups", {"groups": "admins"}, ("admins",)),
    ("realm_access.roles", {"realm_access": {"roles": ["a", "b"]}}, ("a", "b")),
    ("https://example.com/roles", {"https://example.com/roles": ["x"]}, ("x",)),
    ("realm_access.roles", {"realm_access": ["not", "an", "object"]}, ()),
    ("roles", {"roles": {"a": 1}}, ()),
    ("roles", {}, ()),
])
def test_roles_are_read_from_a_claim_or_a_dotted_path(path, claims, roles):
    assert claimed_roles(claims, path) == roles


def test_providers_come_from_a_json_object_or_a_variable_per_field(monkeypatch):
    monkeypatch.setenv("LAKELEDGER__OPENID_PROVIDER_URI", "https://primary")
    monkeypatch.setenv("LAKELEDGER__OPENID_ROLES_CLAIM", "roles")
    monkeypatch.setenv("LAKELEDGER__OPENID_PROVIDERS__EKS-PROD__URI", "https://eks")
    monkeypatch.setenv("LAKELEDGER__OPENID_PROVIDERS__EKS-PROD__AUDIENCE", "sts, other")
    monkeypatch.setenv("LAKELEDGER__OPENID_PROVIDERS__EKS-PROD__REQUIRE_CONNECTED_ON_STARTUP", "false")
    monkeypatch.setenv("LAKELEDGER__OPENID_PROVIDERS__AZURE__URI", "https://azure")
    monkeypatch.setenv("LAKELEDGER__OPENID_PROVIDERS__AZURE__ROLES_CLAIM", "groups")
    configs = OpenIdSettings.all_from_settings(Settings())
    assert [(c.idp_id, c.provider_uri, c.audiences, c.subject_claims, c.roles_claim, c.required_at_start)
            for c in configs] == [("oidc", "https://primary", (), ("sub",), "roles", True),
                                  ("azure", "https://azure", (), ("oid", "sub"), "groups", True),
                                  ("eks-prod", "https://eks", ("sts", "other"), ("oid", "sub"), None, False)]


def test_providers_alone_switch_authentication_on():
    settings = Settings(openid_providers={"okta": {"uri": "https://okta", "audience": ["a", "b"]}})
    assert settings.openid_configured and not Settings().openid_configured
    [okta] = OpenIdSettings.all_from_settings(settings)
    assert (okta.idp_id, okta.audiences) == ("okta", ("a", "b"))


@pytest.mark.parametrize("providers", [{"oidc": {"uri": "https://x"}}, {"kubernetes": {"uri": "https://x"}},
                                       {"Okta": {"uri": "https://x"}}, {"a~b": {"uri": "https://x"}},
                                       {"okta": {"uri": "ftp://x"}}, {"okta": {}},
                                       {"okta": {"uri": "https://x", "scope": "lakeledger"}}])
def test_reserved_or_malformed_providers_are_refused(providers):
    with pytest.raises(ValidationError):
        Settings(openid_providers=providers)


def test_with_several_providers_a_token_of_no_ones_issuer_is_refused_before_any_key_is_fetched():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    providers = OpenIdProviders([OpenIdSettings("http://127.0.0.1:1"), OpenIdSettings("http://127.0.0.1:2/",
                                                                                      idp_id="other")])
    token = jwt.encode({"iss": "http://127.0.0.1:3", "sub": "x", "exp": 2**31}, key, algorithm="RS256")
    with pytest.raises(InvalidToken, match="issuer is not trusted"):
        providers.verify(token)
    with pytest.raises(InvalidToken, match="not a JWT"):
        providers.verify("not-a-token")
    # the provider is chosen by issuer, a trailing slash aside (nothing runs on port 2: its discovery is what fails)
    token = jwt.encode({"iss": "http://127.0.0.1:2", "sub": "x", "exp": 2**31}, key, algorithm="RS256")
    with pytest.raises(ProviderUnavailable, match="provider other"):
        providers.verify(token)
