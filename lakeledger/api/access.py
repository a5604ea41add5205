"""Storage access in table responses: the ``config`` and ``storage-credentials`` of a LoadTableResult, and the
ETag of a load, which names the access the client was given as well as the metadata file."""

import dataclasses
from collections.abc import Callable, MutableMapping
from typing import Any
from urllib.parse import quote
from uuid import UUID

import orjson
from starlette.requests import Request

from lakeledger.api.authorization import WRITE
from lakeledger.api.etags import etag
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.table_access import NO_ACCESS, Access, TableAccess

DELEGATION_HEADER = "x-iceberg-access-delegation"
_DELEGATION_KEY = DELEGATION_HEADER.encode()
_EMPTY_CONFIG = b'"config":{}}'


def delegation_of(scope: MutableMapping[str, Any]) -> str | None:
    """The request's ``X-Iceberg-Access-Delegation``, its lines joined (the spec's list may come in several)."""
    values = [value.decode("latin-1") for key, value in scope["headers"] if key == _DELEGATION_KEY]
    return ",".join(values) if values else None


def gives_storage_access(location: str, rights: str | None) -> bool:
    """Whether a load answer can carry storage access at all: not for a file table, nor for a caller who may not read
    the table's data. Only then is the warehouse's storage profile needed."""
    return not location.startswith("file:") and rights is not None


def load_access(table_access: TableAccess, settings, scope: MutableMapping[str, Any],
                warehouse: Callable[[], WarehouseSettings], table_id: UUID, location: str, rights: str | None,
                cached_only: bool = False) -> Access | None:
    """The storage access a loadTable answer gives (and so its ETag), for the route and for its fast path
    (lakeledger/api/fast_load.py) alike, so that the two cannot answer one request differently: none for a file
    table or a caller who may not read the table's data; else what the request's delegation header and the
    warehouse give (lakeledger/services/table_access.py). ``cached_only`` (the fast path): no I/O, and None when
    only STS could answer, which leaves the request to the route. ``warehouse`` is asked for only when needed."""
    if not gives_storage_access(location, rights):
        access: Access | None = NO_ACCESS
    elif cached_only:
        access = table_access.cached_for_table(warehouse(), table_id, location, delegation_of(scope),
                                               lambda: str(Request(scope).base_url),  # only a signer URL needs it
                                               rights == WRITE, credentials_endpoint(scope))
    else:
        access = table_access.for_table(warehouse(), table_id, location, delegation_of(scope),
                                        str(Request(scope).base_url), False, rights == WRITE,
                                        refresh_endpoint=credentials_endpoint(scope))
    return None if access is None else with_planning(access, settings)


def planning_config(settings) -> dict[str, str]:
    """What tells clients to plan scans on the server (lakeledger/api/routers/scan_planning.py): nothing in the
    default ("client") mode, so that an installation that has not chosen server planning answers as before."""
    return {"scan-planning-mode": "server"} if settings.scan_planning_mode == "server" else {}


def with_planning(access: Access, settings) -> Access:
    """``access`` with the planning mode in its config (and in its ETag variant: a changed mode is a new answer)."""
    planning = planning_config(settings)
    if not planning:
        return access
    return dataclasses.replace(access, config={**access.config, **planning}, variant=f"{access.variant}|planned")


def with_access(body: bytes, access: Access) -> bytes:
    """``body``, a LoadTableResult rendered with an empty config (lakeledger/services/metadata_files.py), with
    ``access``."""
    if not access.config and not access.storage_credentials:
        return body
    assert body.endswith(_EMPTY_CONFIG)
    parts: list[bytes | memoryview] = [memoryview(body)[:-len(_EMPTY_CONFIG)], b'"config":',
                                       orjson.dumps(access.config)]
    if access.storage_credentials:
        parts += [b',"storage-credentials":', orjson.dumps(access.storage_credentials)]
    if access.remote_signing_config:
        parts += [b',"remote-signing-config":', orjson.dumps(access.remote_signing_config)]
    # one join, one copy of the (often tens of kilobytes) body; concatenating copied it three times per load
    return b"".join(parts + [b"}"])


def load_tag(metadata_location: str, snapshots: str, access: Access) -> str:
    return etag(metadata_location, f"{snapshots}|{access.variant}" if access.variant else snapshots)


def credentials_endpoint(scope: MutableMapping[str, Any], created: str | None = None) -> str:
    """A table path's loadCredentials endpoint relative to the catalog URI the client was given (``.../catalog``, or
    the root for the ``/v1`` alias), as the client spelt the path (its namespace encoding, its prefix): Iceberg Java
    resolves a relative refresh endpoint against its catalog URI. ``created``: the name of the table that a create
    or register request (``.../namespaces/{namespace}/tables`` or ``.../register``) made."""
    path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
    if created is not None:
        path = f"{path.rpartition('/')[0]}/tables/{quote(created, safe='')}"
    return f"{path.removeprefix('/catalog/').removeprefix('/')}/credentials"
