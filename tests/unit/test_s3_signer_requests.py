"""What a request to sign touches, read from its URL the way path-style and virtual-host clients spell it."""

import pytest

from lakeledger.domain.errors import BadRequest, Forbidden
from lakeledger.domain.storage_credential import S3AccessKeyCredential
from lakeledger.domain.storage_profile import S3StorageProfile
from lakeledger.storage.s3_signer import sign, touched

MINIO = S3StorageProfile(bucket="lake", endpoint="http://127.0.0.1:9000", flavor="s3-compat")
AWS = S3StorageProfile(bucket="lake", region="eu-west-1")


def test_path_style_and_virtual_host_requests():
    assert touched(MINIO, "GET", "http://127.0.0.1:9000/lake/p/t/a%20b.parquet", None).keys == ("p/t/a b.parquet",)
    assert touched(AWS, "PUT", "https://lake.s3.eu-west-1.amazonaws.com/p/t/x", None).keys == ("p/t/x",)
    assert touched(AWS, "GET", "https://s3.eu-west-1.amazonaws.com/lake/p/t/x", None).bucket == "lake"


def test_listings_reach_their_prefix_and_batch_deletes_their_keys():
    assert touched(MINIO, "GET", "http://127.0.0.1:9000/lake?list-type=2&prefix=p%2Ft%2F", None).keys == ("p/t/",)
    body = "<Delete xmlns='http://s3.amazonaws.com/doc/2006-03-01/'><Object><Key>p/t/1</Key></Object>" \
           "<Object><Key>q/2</Key></Object></Delete>"
    assert touched(MINIO, "POST", "http://127.0.0.1:9000/lake?delete", body).keys == ("p/t/1", "q/2")
    assert touched(MINIO, "GET", "http://127.0.0.1:9000/lake", None).keys == ("",)  # the bucket: no table's


@pytest.mark.parametrize("method, uri, body", [
    ("GET", "ftp://x/lake/k", None), ("GET", "not a url", None), ("POST", "http://127.0.0.1:9000/lake?delete", None),
    ("POST", "http://127.0.0.1:9000/lake?delete", "<oops"), ("POST", "http://127.0.0.1:9000/lake?delete", "<Delete/>"),
])
def test_unreadable_requests_are_bad_requests(method, uri, body):
    with pytest.raises(BadRequest):
        touched(MINIO, method, uri, body)


@pytest.mark.parametrize("profile, uri", [
    (MINIO, "http://evil.example:9000/lake/p/t/x"), (MINIO, "http://127.0.0.1:9001/lake/p/t/x"),
    (MINIO, "https://127.0.0.1/lake/p/t/x"), (AWS, "https://lake.evil.example/p/t/x"),
    (AWS, "https://s3.amazonaws.com.evil.example/lake/p/t/x"), (AWS, "https://other.s3.eu-west-1.amazonaws.com/p/t/x"),
])
def test_requests_for_another_host_are_refused(profile, uri):
    with pytest.raises(Forbidden, match="not the warehouse's storage endpoint"):
        touched(profile, "GET", uri, None)


def test_the_endpoints_own_hosts_are_accepted():
    assert touched(MINIO, "GET", "http://lake.127.0.0.1:9000/p/t/x", None).keys == ("p/t/x",)
    assert touched(AWS, "GET", "https://s3.amazonaws.com/lake/p/t/x", None).keys == ("p/t/x",)
    assert touched(AWS, "GET", "https://lake.s3.dualstack.eu-west-1.amazonaws.com/p/t/x", None).keys == ("p/t/x",)


def test_signing_adds_the_signature_headers_only():
    credential = S3AccessKeyCredential(**{"credential-type": "access-key", "aws-access-key-id": "AKID",
                                          "aws-secret-access-key": "SECRET"})
    signed = sign(credential, "us-east-1", "GET", "http://127.0.0.1:9000/lake/p/t/x", {"Host": ["127.0.0.1:9000"]})
    assert set(signed) == {"Authorization", "X-Amz-Date", "X-Amz-Content-SHA256"}
    assert signed["Authorization"][0].startswith("AWS4-HMAC-SHA256 Credential=AKID/")
    assert signed["X-Amz-Content-SHA256"] == ["UNSIGNED-PAYLOAD"]
    own_hash = sign(credential, "us-east-1", "PUT", "http://127.0.0.1:9000/lake/p/t/x",
                    {"x-amz-content-sha256": ["abc123"]})
    assert "X-Amz-Content-SHA256" not in own_hash  # the client's own hash was signed, and it sends it itself


@pytest.mark.parametrize("char", ["*", "?", "$", "{", "}", "%", " ", "é", "文"])
def test_special_characters_are_read_as_the_store_reads_them(char):
    """Decoded once, literally: a wildcard is a character, '%25' is '%' (never decoded twice)."""
    from urllib.parse import quote

    key = f"wh/ns/a{char}b/data/%2e%2e/x"
    assert touched(MINIO, "PUT", f"http://127.0.0.1:9000/lake/{quote(key)}", None).keys == (key,)
    listing = touched(MINIO, "GET", f"http://127.0.0.1:9000/lake?list-type=2&prefix={quote(key, safe='')}", None)
    assert listing.keys == (key,) and listing.listing


@pytest.mark.parametrize("uri", ["http://127.0.0.1:9000/lake/wh/t/%FF", "http://127.0.0.1:9000/lake/wh/t/%C3",
                                 "http://127.0.0.1:9000/lake?list-type=2&prefix=wh%2Ft%2F%FF"])
def test_keys_that_are_not_utf8_once_decoded_are_refused(uri):
    """Read as U+FFFD, they would be checked as other bytes than the store sees."""
    with pytest.raises(BadRequest, match="UTF-8"):
        touched(MINIO, "GET", uri, None)


@pytest.mark.parametrize("method, uri, body, writes, changes", [
    ("GET", "http://127.0.0.1:9000/lake/p/t/x", None, False, False),
    ("HEAD", "http://127.0.0.1:9000/lake/p/t/x", None, False, False),
    ("OPTIONS", "http://127.0.0.1:9000/lake/p/t/x", None, False, False),
    ("PUT", "http://127.0.0.1:9000/lake/p/t/x", None, True, True),
    ("PATCH", "http://127.0.0.1:9000/lake/p/t/x", None, True, True),
    ("POST", "http://127.0.0.1:9000/lake/p/t/x?uploads", None, True, True),
    ("DELETE", "http://127.0.0.1:9000/lake/p/t/x", None, False, True),
    ("POST", "http://127.0.0.1:9000/lake?delete", "<Delete><Object><Key>p/t/x</Key></Object></Delete>", False, True),
])
def test_deletes_are_changes_but_not_writes(method, uri, body, writes, changes):
    """A dropped table's files may still be read and deleted (its purge), never written; a reader does neither."""
    request = touched(MINIO, method, uri, body)
    assert (request.writes, request.changes) == (writes, changes)
