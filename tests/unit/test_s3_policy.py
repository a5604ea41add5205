"""The session policy of vended credentials names a table's key prefix exactly, whatever characters it holds
(issue 27): IAM wildcards and variables are escaped where the storage flavor can escape them, and a location
whose policy cannot be exact is refused."""

import json
import re

import pytest

from lakeledger.domain.errors import BadRequest
from lakeledger.domain.s3_policy import MAX_SESSION_POLICY_CHARS, table_policy
from lakeledger.domain.storage_profile import S3StorageProfile

CHARACTERS = ["*", "?", "$", "{", "}", "%", " ", "é", "文"]
AWS_SPELLING = {"*": "${*}", "?": "${?}", "$": "${$}"}
WILDCARDS = {"minio": "*?", "s3-compat": "*?$", "aws": ""}


def _names(policy: str) -> tuple[list[str], list[str]]:
    """The object ARNs and the listing prefixes a rendered policy allows."""
    statements = json.loads(policy)["Statement"]
    objects = [r for s in statements if "s3:GetObject" in s["Action"] for r in s["Resource"]]
    prefixes = [p for s in statements for p in s.get("Condition", {}).get("StringLike", {}).get("s3:prefix", [])]
    return objects, prefixes


def _unescaped_wildcards(pattern: str) -> list[str]:
    """What AWS reads as a wildcard or variable in ``pattern``, once its escapes are removed (the trailing '/*',
    which is meant, is the caller's to cut off)."""
    return re.findall(r"[*?$]", re.sub(r"\$\{[*?$]\}", "", pattern))


@pytest.mark.parametrize("char", CHARACTERS)
def test_aws_policies_escape_every_wildcard_and_keep_every_other_character(char):
    key = f"wh/ns/a{char}b"
    objects, prefixes = _names(table_policy("bucket", key, True, "aws"))
    spelt = f"wh/ns/a{AWS_SPELLING.get(char, char)}b"
    assert objects == [f"arn:aws:s3:::bucket/{spelt}/*"]
    assert prefixes == [f"{spelt}/*"]
    assert _unescaped_wildcards(objects[0][:-2]) == [] and _unescaped_wildcards(prefixes[0][:-2]) == []


@pytest.mark.parametrize("flavor", ["minio", "s3-compat"])
@pytest.mark.parametrize("char", CHARACTERS)
def test_stores_without_iam_escapes_get_the_key_verbatim_or_a_refusal(char, flavor):
    key = f"wh/ns/a{char}b"
    if char in WILDCARDS[flavor]:
        with pytest.raises(BadRequest, match="IAM wildcard"):
            table_policy("bucket", key, True, flavor)
        return
    objects, prefixes = _names(table_policy("bucket", key, True, flavor))
    assert objects == [f"arn:aws:s3:::bucket/{key}/*"] and prefixes == [f"{key}/*"]


@pytest.mark.parametrize("flavor", ["aws", "minio", "s3-compat"])
def test_a_policy_variable_is_refused_on_every_flavor(flavor):
    with pytest.raises(BadRequest, match="policy variable"):
        table_policy("bucket", "wh/ns/${aws:username}", True, flavor)


def test_the_bare_prefix_is_not_listable():
    """Listing 'wh/t1' would name the objects of a neighbour at 'wh/t10'."""
    _, prefixes = _names(table_policy("bucket", "wh/t1", False, "aws"))
    assert prefixes == ["wh/t1/*"]


def test_a_key_too_long_for_a_session_policy_is_refused():
    with pytest.raises(BadRequest, match="too long"):
        table_policy("bucket", "wh/" + "文" * 300, True, "aws")
    assert len(table_policy("bucket", "wh/" + "a" * 300, True, "aws")) <= MAX_SESSION_POLICY_CHARS


@pytest.mark.parametrize("char", CHARACTERS)
def test_table_locations_are_refused_exactly_when_their_policy_cannot_be_exact(char):
    for flavor in ("aws", "minio", "s3-compat"):
        profile = S3StorageProfile(bucket="bucket", **{"key-prefix": "wh", "flavor": flavor})
        location = f"s3://bucket/wh/ns/a{char}b"
        if char in WILDCARDS[flavor]:
            with pytest.raises(BadRequest):
                profile.check_tabular_location(location)
        else:
            assert profile.check_tabular_location(location) == location


@pytest.mark.parametrize("location", [
    "file:///w/%2e%2e/%2e%2e/x", "file:///w/%2E./x", "file:///w/a/../x", "file:///w/.%2e", "file:///w/%2e",
    "s3://bucket/wh/../x", "s3://bucket/wh/%2e%2e/x", "s3://bucket/wh/a/./x", "s3://bucket/wh/..\\x",
    "s3://bucket/wh/a%2F..%2Fx"])
def test_dot_segments_are_refused_as_spelt_and_percent_decoded(location):
    profile = (S3StorageProfile(bucket="bucket", **{"key-prefix": "wh"}) if location.startswith("s3")
               else None)
    from lakeledger.domain.storage_profile import FileStorageProfile
    profile = profile or FileStorageProfile(location="file:///w")
    with pytest.raises(BadRequest, match="'.' or '..' segments"):
        profile.check_tabular_location(location)
