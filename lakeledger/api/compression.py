"""Compressed responses (``Accept-Encoding``): gzip, and zstd for clients that ask for it, in front of every route
and of the loadTable fast path.

JSON answers of at least ``min_bytes`` are compressed; smaller ones cost more to compress than they save. A
streamed answer (more than one body message) passes through as it is. A compressed answer's ETag is made weak
(``W/"..."``): RFC 9110 gives a strong tag to one exact byte sequence, and the gzip bytes are another one.
Whenever the request picks a coding the tag is weakened, compressed or not, so a 200 and a later 304 to the same
client carry the same tag; If-None-Match uses weak comparison (lakeledger/api/etags.py), so either form revalidates.

GET answers with a strong ETag are the same bytes for as long as the tag holds (a metadata file never
changes), so their compressed form is kept: a hot table is compressed once, not on every load."""

import gzip
from collections import OrderedDict

import zstandard

# Measured on a 100-snapshot LoadTableResult (64.7 KB): gzip 1/6/9 gave 6.8/6.0/6.0 KB in 0.3/1.0/7.6 ms, zstd
# 3/9/19 gave 5.1/4.7/4.3 KB in 0.1/0.8/90 ms. Kept answers are compressed once per metadata file, so harder;
# answers not kept (lists, management) on every request, so fast.
_KEPT_LEVEL = {"gzip": 6, "zstd": 9}
_LEVEL = {"gzip": 1, "zstd": 3}
_PREFERENCE = ("zstd", "gzip")  # on equal quality: zstd decodes several times faster at a similar size
_COMPRESSIBLE = (b"application/json", b"text/")
_VARY = (b"vary", b"Accept-Encoding")
_zstd = {level: zstandard.ZstdCompressor(level=level) for level in (_LEVEL["zstd"], _KEPT_LEVEL["zstd"])}


def compress(body: bytes, coding: str, kept: bool = False) -> bytes:
    level = (_KEPT_LEVEL if kept else _LEVEL)[coding]
    if coding == "gzip":
        return gzip.compress(body, compresslevel=level, mtime=0)  # mtime 0: the same input, the same bytes
    return _zstd[level].compress(body)


def choose(accept_encoding: str | None) -> tuple[str | None, bool]:
    """(the coding to answer with or None, whether the client refused an uncompressed answer)."""
    if not accept_encoding:
        return None, False
    qualities: dict[str, float] = {}
    for item in accept_encoding.split(","):
        name, _, params = item.partition(";")
        name = name.strip().lower()
        if not name:
            continue
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = min(max(float(value.strip()), 0.0), 1.0)
                except ValueError:
                    q = 0.0  # a quality that cannot be read accepts nothing
        qualities[name] = q
    star = qualities.get("*")
    # unnamed, identity is acceptable but not preferred: "gzip;q=0.5" still asks for gzip, as servers read it
    identity = qualities.get("identity", star)
    best, best_q = None, 0.0
    for coding in _PREFERENCE:
        quality = qualities.get(coding, qualities.get("x-gzip") if coding == "gzip" else None)
        if quality is None:
            quality = star or 0.0
        if quality > best_q:
            best, best_q = coding, quality
    if best is not None and identity is not None and best_q < identity:
        best = None  # the client prefers the bytes as they are
    return best, identity == 0


class _Kept:
    """Compressed bodies of GET answers by (strong ETag, coding), least recently used out past ``max_bytes``.
    The plain body is kept beside and compared: a tag names the body of one route only (a commit's answer has
    its load's tag), and comparing (often the very same object) is cheaper than trusting that."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.entries: OrderedDict[tuple[bytes, str], tuple[bytes, bytes]] = OrderedDict()

    def get(self, tag: bytes, coding: str, body: bytes) -> bytes:
        key = (tag, coding)
        entry = self.entries.get(key)
        if entry is not None and entry[0] == body:
            self.entries.move_to_end(key)
            return entry[1]
        packed = compress(body, coding, kept=True)
        if entry is not None:
            self.bytes -= len(entry[0]) + len(entry[1])
            del self.entries[key]
        size = len(body) + len(packed)
        if size <= self.max_bytes // 8:  # one huge table does not push every other one out
            self.entries[key] = (body, packed)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (plain, old) = self.entries.popitem(last=False)
                self.bytes -= len(plain) + len(old)
        return packed


class CompressedResponses:
    def __init__(self, app, min_bytes: int, cache_bytes: int = 32 * 1024 * 1024):
        self.app = app
        self.min_bytes = min_bytes
        self.kept = _Kept(cache_bytes)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        accept = None
        for key, value in scope["headers"]:
            if key == b"accept-encoding":
                accept = value.decode("latin-1") if accept is None else f"{accept},{value.decode('latin-1')}"
        coding, identity_refused = choose(accept)
        head = scope["method"] == "HEAD"
        keep = scope["method"] == "GET"
        start = None

        async def send_compressed(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if not _compressible(message["status"], headers):
                    return await send(message)
                tag = _header(headers, b"etag")
                strong = tag is not None and not tag.startswith(b"W/")
                headers = [*headers, _VARY]
                if coding is not None:
                    headers = [(k, _weak(v)) if k == b"etag" else (k, v) for k, v in headers]
                message = {**message, "headers": headers}
                if message["status"] in (204, 304) or head or coding is None:
                    return await send(message)
                start = message, strong  # held until the body says whether it is worth compressing
                return
            if message["type"] != "http.response.body" or start is None:
                return await send(message)
            (held, strong), start = start, None
            body = message.get("body", b"")
            if message.get("more_body", False) or (len(body) < self.min_bytes and not identity_refused) or not body:
                await send(held)
                return await send(message)
            assert coding is not None  # a start is held only when there is a coding to compress with
            if keep and held["status"] == 200 and strong:
                tag = _header(held["headers"], b"etag")
                assert tag is not None  # a strong tag is one that is there
                packed = self.kept.get(tag, coding, body)
            else:
                packed = compress(body, coding)
            headers = [(k, v) for k, v in held["headers"] if k != b"content-length"]
            headers += [(b"content-encoding", coding.encode()), (b"content-length", str(len(packed)).encode())]
            await send({**held, "headers": headers})
            await send({"type": "http.response.body", "body": packed})

        await self.app(scope, receive, send_compressed)


def _compressible(status: int, headers) -> bool:
    content_type = encoded = None
    for key, value in headers:
        if key == b"content-type":
            content_type = value
        elif key == b"content-encoding":
            encoded = value
    if encoded is not None:
        return False
    if content_type is None:
        return status == 304  # it has no content type: it stands for the 200 it revalidates
    return content_type.lower().startswith(_COMPRESSIBLE)


def _weak(tag: bytes) -> bytes:
    return tag if tag.startswith(b"W/") else b"W/" + tag


def _header(headers, name: bytes) -> bytes | None:
    for key, value in headers:
        if key == name:
            return value
    return None
