"""What operators point their tools at: liveness, readiness (lakeledger/operations/health.py) and Prometheus metrics
(lakeledger/operations/metrics.py). Outside the OpenAPI document and, like ``/health``, open without a token: a probe or
a scraper has none. The metrics name route templates and event types, never a table, a path or a principal."""

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from starlette.responses import Response

from lakeledger.api.responses import JSONResponse
from lakeledger.operations.metrics import exposition

router = APIRouter(include_in_schema=False)


@router.get("/health")
async def health():
    """Alive: the process answers (nothing else is asked)."""
    return {"status": "ok"}


@router.get("/health/ready")
async def ready(request: Request):
    readiness = await request.app.state.readiness.run()
    return JSONResponse(readiness.body(), status_code=200 if readiness.ready else 503)


@router.get("/metrics")
async def metrics(request: Request):
    body, content_type = await run_in_threadpool(exposition, request.app.state.database_metrics)
    return Response(body, media_type=content_type)
