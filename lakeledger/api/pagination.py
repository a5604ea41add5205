"""Paged lists, as the Iceberg REST spec has them: ``pageToken`` and ``pageSize`` in, ``next-page-token`` out.

Pages are keyset pages: the token carries the last key served and the next page starts strictly after
it, so a list stays stable while rows are added or removed between requests (no row is served twice,
and no row that existed throughout is skipped). A request without ``pageToken`` gets the whole list,
as clients that do not page expect; an empty ``pageToken`` asks for the first page.

A token names the list it was issued for (the request's path and its query parameters other than the paging
ones, hashed): handed to another list, even one whose keys look alike (the tables of another namespace, the
history of another table, the same list with another filter), it is refused with a 400 instead of silently
starting that list somewhere in the middle."""

import base64
import binascii
import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import orjson
from fastapi import Query, Request

from lakeledger.api.dependencies import ContainerDep
from lakeledger.domain.errors import BadRequest

_VERSION = 2  # 2: tokens name their list
_PAGING = ("pageToken", "pageSize", "page_token", "page_size")  # the REST spec's, and Lakekeeper's
ANOTHER_LIST = "Invalid pageToken: it belongs to another list"


@dataclass(frozen=True)
class Page:
    after: Any | None  # the last key of the previous page; None = from the start
    size: int | None  # None = everything
    list_id: str = ""  # the list the tokens of this page name

    def token(self, after: Any) -> str:
        """The token of the page that follows the row whose key is ``after``."""
        body = orjson.dumps({"v": _VERSION, "list": self.list_id, "after": after})
        return base64.urlsafe_b64encode(body).decode().rstrip("=")


def list_id(request: Request) -> str:
    """Names the list a request reads: its path and its query parameters other than the paging ones."""
    query = sorted((k, v) for k, v in request.query_params.multi_items() if k not in _PAGING)
    digest = hashlib.blake2b(orjson.dumps([request.url.path, query]), digest_size=9).digest()
    return base64.urlsafe_b64encode(digest).decode()


def _decode(token: str, list_: str) -> Any:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        body = orjson.loads(raw)
    except (binascii.Error, ValueError, orjson.JSONDecodeError):
        raise BadRequest("Invalid pageToken: not a token this server issued") from None
    if not isinstance(body, dict) or body.get("v") != _VERSION or "after" not in body:
        raise BadRequest("Invalid pageToken: not a token this server issued")
    if body.get("list") != list_:
        raise BadRequest(ANOTHER_LIST)
    return body["after"]


async def page(request: Request, container: ContainerDep, pageToken: str | None = Query(default=None),
               pageSize: str | None = Query(default=None)) -> Page:
    if pageToken is None:
        return Page(after=None, size=None)
    size = container.settings.default_page_size
    if pageSize is not None and pageSize != "":
        try:
            size = int(pageSize)
        except ValueError:
            raise BadRequest(f"pageSize must be a positive integer, not {pageSize!r}") from None
        if size < 1:
            raise BadRequest(f"pageSize must be a positive integer, not {size}")
    list_ = list_id(request)
    return Page(after=_decode(pageToken, list_) if pageToken else None,
                size=min(size, container.settings.max_page_size), list_id=list_)


async def always_paged(request: Request, container: ContainerDep, pageToken: str | None = Query(default=None),
                       pageSize: str | None = Query(default=None)) -> Page:
    """For lists that are always paged, as in Lakekeeper: no pageToken means the first page."""
    return await page(request, container, pageToken if pageToken is not None else "", pageSize)


def _is_name(key: Any) -> bool:
    return isinstance(key, str)


def _is_path(key: Any) -> bool:
    return isinstance(key, list) and all(isinstance(level, str) for level in key)


NAME = _is_name
PATH = _is_path


def is_keyed_by_id(key: Any, first: Callable[[str], object] = str) -> bool:
    """A page key of two strings, the second an id (UUID) and the first something ``first`` reads without a
    ValueError (a time, a name)."""
    if not (isinstance(key, list) and len(key) == 2 and all(isinstance(k, str) for k in key)):
        return False
    try:
        first(key[0])
        UUID(key[1])
    except ValueError:
        return False
    return True


def is_time_and_id(key: Any) -> bool:
    """A page key of (an ISO time, an id)."""
    return is_keyed_by_id(key, datetime.fromisoformat)


async def fetch(page: Page, rows: Callable[[Any, int | None], Awaitable[Sequence]], valid_key: Callable[[Any], bool],
                key: Callable[[Any], Any] = lambda row: row) -> tuple[Sequence, str | None]:
    """One page of ``rows(after, limit)`` and the token of the next page (None on the last one).
    One row more than asked tells whether there is a next page without an empty last page."""
    if page.size is None:
        return await rows(None, None), None
    if page.after is not None and not valid_key(page.after):
        raise BadRequest(ANOTHER_LIST)
    found = await rows(page.after, page.size + 1)
    if len(found) <= page.size:
        return found, None
    served = found[:page.size]
    return served, page.token(key(served[-1]))


def body_page(token: str | None, size: int | None, list_: str, default_size: int, max_size: int) -> Page:
    """A page asked for in a request's body (Lakekeeper's ``page-token`` and ``page-size``), always paged:
    ``list_`` names the list (its path and filters) as ``list_id`` does for a query."""
    if size is not None and size < 1:
        raise BadRequest(f"page-size must be a positive integer, not {size}")
    return Page(after=_decode(token, list_) if token else None, size=min(size or default_size, max_size),
                list_id=list_)
