"""Iceberg's S3 signer REST API (``s3.signer.uri`` + ``s3.signer.endpoint`` of a table's config): engines
configured for remote signing send each S3 request here instead of holding keys."""

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import SignedRequest, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.services.table_access import SIGNER_ENDPOINT

router = APIRouter(prefix="/catalog/signer", tags=["S3 signer API"])


class SignRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    region: str = Field(default="", max_length=64)
    uri: str = Field(min_length=1, max_length=16384)
    method: str = Field(pattern=r"^(GET|HEAD|PUT|POST|DELETE)$")
    headers: dict[str, list[str]] = Field(default_factory=dict)
    properties: dict[str, str] = Field(default_factory=dict)
    body: str | None = Field(default=None, max_length=4 * 1024 * 1024)


@router.post(f"/{{scope}}/{SIGNER_ENDPOINT}",
             responses={**ok(SignedRequest, "The request, signed"), **errors(400, 403, 404)})
async def sign(container: ContainerDep, scope: str, body: SignRequest, az: Guard = Depends(guard)):
    """Signs an S3 request of the table this signer URL was issued for; a request that reaches anything outside
    the table's location is 403, and so is a request of a caller without the right: reads need can_read_data on
    the table, writes can_write_data (checked on each request: the signer URL is the same for every caller)."""
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
    return JSONResponse(signed)
