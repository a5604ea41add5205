"""Iceberg's S3 signer REST API (``s3.signer.uri`` + ``s3.signer.endpoint`` of a table's config): engines
configured for remote signing send each S3 request here instead of holding keys. Two doors to one signer
(lakeledger/services/remote_signing.py): the sealed signer URL a load hands out, which works for every Iceberg
client since 1.x and for a while after a drop (an engine's own purge); and the REST spec's per-table endpoint
(``POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign``, Iceberg 1.11), which Iceberg 1.12+ clients derive
from the table's path themselves and which signs for the live table that path names, or in the sealed scope a load's
``remote-signing-config`` gave them to send along (a staged table, a purge after a drop)."""

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api import authorization, tabulars
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.openapi import SignedRequest, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.tabular import TABLE
from lakeledger.services.table_access import SIGNER_ENDPOINT, SIGNER_SCOPE_PROPERTY

router = APIRouter(prefix="/catalog/signer", tags=["S3 signer API"])
# the per-table endpoint, under the catalog's own prefixes (/catalog/v1 and /v1)
table_router = APIRouter(tags=["Catalog API"])


# The spec's RemoteSignResponse names Cache-Control: "private" lets Iceberg Java's signer reuse a signature for 30
# seconds, so a caller whose right was revoked could still be signed for; each request is judged anew instead.
NOT_CACHED = {"Cache-Control": "no-cache"}


class SignRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    region: str = Field(default="", max_length=64)
    uri: str = Field(min_length=1, max_length=16384)
    method: str = Field(pattern=r"^(GET|HEAD|PUT|POST|DELETE|PATCH|OPTIONS)$")
    headers: dict[str, list[str]] = Field(default_factory=dict)
    properties: dict[str, str] = Field(default_factory=dict)
    body: str | None = Field(default=None, max_length=4 * 1024 * 1024)
    # Iceberg 1.11: the storage the request is for, by its URI scheme; absent means s3
    provider: str | None = Field(default=None, max_length=64)


@router.post(f"/{{scope}}/{SIGNER_ENDPOINT}",
             responses={**ok(SignedRequest, "The request, signed"), **errors(400, 403, 404)})
async def sign(container: ContainerDep, scope: str, body: SignRequest, az: Guard = Depends(guard)):
    """Signs an S3 request of the table this signer URL was issued for; a request that reaches anything outside
    the table's location is 403, and so is a request of a caller without the right: reads need can_read_data on
    the table, writes can_write_data (checked on each request: the signer URL is the same for every caller)."""
    return await _sign_in_scope(container, scope, body, az)


async def _sign_in_scope(container: Container, scope: str, body: SignRequest, az: Guard) -> JSONResponse:
    """The sealed scope's signer: the table and location the scope names, a staged one's too."""
    may_write = True
    table = None if az.off else container.signing.table_of(scope)
    # a table only staged has no grants yet: its URL went to a caller who could create it, for a day
    if table is not None and not table[1]:
        object_ = authorization.tabular(table[2], table[0])  # a table's or a generic table's
        can_read, can_write = await az.allowed([("can_read_data", object_), ("can_write_data", object_)])
        if not (can_read or can_write):
            raise az.forbidden("can_read_data", object_)
        may_write = can_write
    signed = await run_in_threadpool(container.signing.sign, scope, body.region, body.method, body.uri, body.headers,
                                     body.body, may_write)
    return JSONResponse(signed, headers=NOT_CACHED)


@table_router.post("/{prefix}/namespaces/{namespace}/tables/{table}/sign",
                   responses={**ok(SignedRequest, "The request, signed"), **errors(400, 403, 404)})
async def sign_for_table(prefix: str, namespace: str, table: str, body: SignRequest, request: Request,
                         container: ContainerDep, az: Guard = Depends(guard)):
    """signRequest: signs an S3 request inside the table's location for a caller who may read its data (writes:
    who may write it), as the sealed signer URL does. A request whose `properties` carry the sealed scope a load
    put in `remote-signing-config` (Iceberg 1.12+ clients send them) is signed in that scope, as on the sealed
    URL: so is a staged table's, which this path does not name yet, and an engine's purge after its drop."""
    if body.provider not in (None, "s3"):
        raise BadRequest(f"Remote signing is for S3 only, not {body.provider!r}")
    scope = body.properties.get(SIGNER_SCOPE_PROPERTY)
    if scope is not None:
        return await _sign_in_scope(container, scope, body, az)
    table_id, _, location = (await tabulars.find(container, prefix, namespace, table, TABLE, az, None))[:3]
    rights = await az.storage_rights(
        authorization.table(table_id), authorization.no_tabular(TABLE, parse_namespace(namespace), table)
    )
    if rights is None:
        raise az.forbidden("can_read_data", authorization.table(table_id))
    wh = await active_warehouse(container, prefix)
    signed = await run_in_threadpool(container.signing.sign_for_table, wh.id, table_id, location, body.region,
                                     body.method, body.uri, body.headers, body.body, rights == authorization.WRITE)
    return JSONResponse(signed, headers=NOT_CACHED)
