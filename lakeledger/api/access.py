"""Storage access in table responses: the ``config`` and ``storage-credentials`` of a LoadTableResult, and the
ETag of a load, which names the access the client was given as well as the metadata file."""

import dataclasses
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import quote

import orjson

from lakeledger.api.etags import etag
from lakeledger.services.table_access import Access

DELEGATION_HEADER = "x-iceberg-access-delegation"
_EMPTY_CONFIG = b'"config":{}}'


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
