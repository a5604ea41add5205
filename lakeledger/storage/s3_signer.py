"""Signing S3 requests for engines that hold no keys (Iceberg's S3 remote signing): what a request touches,
read from its URL (and, for a batch delete, its body), and an AWS SigV4 signature over it made by botocore."""

import functools
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree

from lakeledger.domain.errors import BadRequest, Forbidden
from lakeledger.domain.storage_credential import S3AccessKeyCredential
from lakeledger.domain.storage_profile import S3StorageProfile

UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
# set by signing; what a client sends under these names is replaced
_SIGNING_HEADERS = ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")


@dataclass(frozen=True)
class Touched:
    """The bucket of an S3 request and the keys (or key prefixes, for listings) it reads or writes."""

    bucket: str
    keys: tuple[str, ...]
    method: str = "GET"
    batch_delete: bool = False
    listing: bool = False  # keys are listing prefixes: a prefix reaches every key that begins with it

    @property
    def writes(self) -> bool:
        """Whether it creates or changes objects (PUT, PATCH, and POST but for a batch delete): reads and deletes do
        not, so that an engine's purge of a table dropped within the hour is still signed."""
        return self.method in ("PUT", "PATCH") or (self.method == "POST" and not self.batch_delete)

    @property
    def changes(self) -> bool:
        """Whether it writes or deletes: what a caller who may only read the table's data is refused."""
        return self.writes or self.method == "DELETE" or self.batch_delete


def touched(profile: S3StorageProfile, method: str, uri: str, body: str | None) -> Touched:
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadRequest(f"The uri to sign is not an http(s) URL: {uri[:200]}")
    host = parts.hostname.lower()
    if not _is_storage_host(profile, host, _port(parts)):
        raise Forbidden(f"Signing refused: {parts.netloc} is not the warehouse's storage endpoint")
    path = parts.path or "/"
    if host.startswith(f"{profile.bucket}.") and not _is_endpoint_host(profile, host):
        bucket, key = profile.bucket, _decoded(path[1:])  # virtual-hosted style
    else:
        bucket, _, rest = path[1:].partition("/")
        bucket, key = _decoded(bucket), _decoded(rest)
    if not bucket:
        raise BadRequest("The request to sign names no bucket")
    try:
        query = parse_qs(parts.query, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("The query of the request to sign is not percent-encoded UTF-8") from None
    if key:
        return Touched(bucket, (key,), method)
    if method == "GET" and ("list-type" in query or "prefix" in query or "uploads" in query):
        return Touched(bucket, (query.get("prefix", [""])[0],), method, listing=True)
    if method == "POST" and "delete" in query:
        return Touched(bucket, _deleted_keys(body), method, batch_delete=True)
    return Touched(bucket, ("",), method)  # a request on the bucket itself: inside no table


def copy_source(headers: dict[str, list[str]]) -> tuple[str, str] | None:
    """The (bucket, key) a CopyObject or UploadPartCopy reads, from ``x-amz-copy-source`` ([/]bucket/key, URL-encoded,
    maybe ``?versionId=``), or None. The copy reads it with the signer's credential, so it must be checked like the
    request's own keys."""
    values = [v for k, vs in headers.items() if k.lower() == "x-amz-copy-source" for v in vs]
    if not values:
        return None
    if len(values) > 1:
        raise BadRequest("The request to sign has more than one x-amz-copy-source")
    bucket, _, key = values[0].partition("?")[0].lstrip("/").partition("/")
    if not bucket or not key:
        raise BadRequest("The x-amz-copy-source of the request to sign must name a bucket and a key")
    return _decoded(bucket), _decoded(key)


def _decoded(text: str) -> str:
    """A URL path's percent-encoding undone once, as S3 undoes it; bytes that are not UTF-8 are refused rather than
    read as U+FFFD (the store would see other bytes than the ones checked)."""
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise BadRequest("The request to sign names a key that is not percent-encoded UTF-8") from None


def _is_endpoint_host(profile: S3StorageProfile, host: str) -> bool:
    return bool(profile.endpoint) and urlsplit(profile.endpoint).hostname == host


def _port(parts) -> int:
    return parts.port or (443 if parts.scheme == "https" else 80)


def _is_storage_host(profile: S3StorageProfile, host: str, port: int) -> bool:
    """A signature is only made for the warehouse's own endpoint (path style or the bucket's virtual host): one
    for any other host would let the catalog's key vouch for requests it cannot check."""
    if profile.endpoint:
        endpoint = urlsplit(profile.endpoint)
        return port == _port(endpoint) and host in (endpoint.hostname, f"{profile.bucket}.{endpoint.hostname}")
    return re.fullmatch(rf"(?:{re.escape(profile.bucket)}\.)?s3[a-z0-9.-]*\.amazonaws\.com(?:\.cn)?", host) is not None


def _deleted_keys(body: str | None) -> tuple[str, ...]:
    if not body:
        raise BadRequest("A DeleteObjects request to sign needs its body (the keys it deletes)")
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        raise BadRequest("The body of the DeleteObjects request to sign is not XML") from None
    keys = tuple(e.text or "" for e in root.iter() if re.sub(r"^\{.*\}", "", e.tag) == "Key")
    if not keys:
        raise BadRequest("The DeleteObjects request to sign names no keys")
    return keys


@functools.cache
def _signer_class():
    # botocore (~9 MB resident with boto3) loads once a server first signs for S3, not in every server
    from botocore.auth import S3SigV4Auth

    class ClientPayloadSigner(S3SigV4Auth):
        """SigV4 for a request whose body the signer never sees: the payload hash is the one the client sent
        (``x-amz-content-sha256``), or UNSIGNED-PAYLOAD."""

        def __init__(self, credentials, region: str, payload_hash: str):
            super().__init__(credentials, "s3", region)
            self._payload_hash = payload_hash

        def payload(self, request) -> str:
            return self._payload_hash

    return ClientPayloadSigner


def sign(credential: S3AccessKeyCredential, region: str, method: str, uri: str,
         headers: dict[str, list[str]]) -> dict[str, list[str]]:
    """The headers that make the request signed (to be added to the ones it has)."""
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    sent = {k: ", ".join(v) for k, v in headers.items() if k.lower() not in _SIGNING_HEADERS}
    payload_hash = next((v[0] for k, v in headers.items() if k.lower() == "x-amz-content-sha256" and v),
                        UNSIGNED_PAYLOAD)
    request = AWSRequest(method=method, url=uri, headers=sent)
    _signer_class()(Credentials(credential.aws_access_key_id, credential.aws_secret_access_key), region,
                    payload_hash).add_auth(request)
    signed = {"Authorization": [request.headers["Authorization"]], "X-Amz-Date": [request.headers["X-Amz-Date"]]}
    if not any(k.lower() == "x-amz-content-sha256" for k in headers):
        signed["X-Amz-Content-SHA256"] = [payload_hash]
    return signed
