"""Every error leaves as an Iceberg ``ErrorModel``: {"error": {"message", "type", "code"}}, with the
``type`` names the Java client maps to its exceptions."""

import logging

import orjson
import psycopg
from eventsourcing.persistence import PersistenceError
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from lakeledger.authz.authorizer import AuthorizationUnavailable
from lakeledger.domain import errors as e
from lakeledger.eventstore.postgres_failures import RETRY_AFTER_SECONDS, unavailable
from lakeledger.operations.health import reason
from lakeledger.secretstore.cipher import WrongKey

logger = logging.getLogger("lakeledger.api")

_MAPPING: list[tuple[type[e.CatalogError], int, str]] = [
    (e.NoSuchNamespace, 404, "NoSuchNamespaceException"),
    (e.NoSuchTable, 404, "NoSuchTableException"),
    (e.NoSuchView, 404, "NoSuchViewException"),
    (e.NoSuchGenericTable, 404, "NoSuchGenericTableException"),
    (e.NoSuchWarehouse, 404, "NoSuchWarehouseException"),
    (e.NoSuchProject, 404, "NoSuchProjectException"),
    (e.NoSuchPlanId, 404, "NoSuchPlanIdException"),
    (e.NoSuchPlanTask, 404, "NoSuchPlanTaskException"),
    (e.NotFound, 404, "NotFoundException"),
    (e.AlreadyExists, 409, "AlreadyExistsException"),
    (e.InUse, 409, "ConflictException"),
    (e.NamespaceNotEmpty, 409, "NamespaceNotEmptyException"),
    (e.WarehouseNotEmpty, 409, "WarehouseNotEmptyException"),
    (e.ProjectNotEmpty, 409, "ProjectNotEmpty"),
    (e.WarehouseManaged, 403, "WarehouseManaged"),
    (e.CommitFailed, 409, "CommitFailedException"),
    (e.Protected, 409, "Protected"),
    (e.UnfinishedDeletions, 409, "WarehouseHasUnfinishedTasks"),
    (e.ChangeRefused, 403, "ChangeRefused"),
    (e.ChangeApprovalUnavailable, 424, "ChangeApprovalUnavailable"),
    (e.WarehouseInactive, 403, "WarehouseInactiveException"),
    (e.Forbidden, 403, "ForbiddenException"),
    (e.CatchingUp, 503, "ServiceUnavailableException"),
    (e.StorageUnavailable, 503, "ServiceUnavailableException"),
    (e.AlreadyBootstrapped, 400, "CatalogAlreadyBootstrapped"),
    (e.Unsupported, 400, "UnsupportedOperationException"),
    (e.UnprocessableEntity, 422, "UnprocessableEntityException"),
    (e.InvalidArgument, 400, "IllegalArgumentException"),
    (e.BadRequest, 400, "BadRequestException"),
]

_HTTP_TYPES = {400: "BadRequestException", 401: "NotAuthorizedException", 403: "ForbiddenException",
               404: "NotFoundException", 405: "MethodNotAllowedException", 406: "UnsupportedOperationException",
               409: "ConflictException", 413: "RequestTooLargeException", 415: "UnsupportedMediaTypeException",
               422: "UnprocessableEntityException",
               500: "InternalServerError"}


def error_response(code: int, type_: str, message: str, head: bool = False) -> Response:
    body = b"" if head else orjson.dumps({"error": {"message": message, "type": type_, "code": code}})
    # every 503 is "try again": when, so that clients spread their retries instead of hammering a recovering part
    headers = {"retry-after": str(RETRY_AFTER_SECONDS)} if code == 503 else None
    return Response(body, status_code=code, media_type="application/json", headers=headers)


def database_unavailable(method: str, path: str, exc: BaseException) -> Response:
    """The answer to a request the database could not serve (``postgres_failures.unavailable``), whichever path
    the request took: not the request's fault, and a retry may succeed (a commit whose connection broke has an
    unknown outcome, which is what clients make of a 503 on a commit)."""
    logger.warning("%s %s: the database could not answer: %s", method, path, reason(exc))
    return error_response(503, "ServiceUnavailableException", "The database could not answer; try again",
                          head=method == "HEAD")


def for_catalog_error(exc: e.CatalogError) -> tuple[int, str]:
    for cls, code, type_ in _MAPPING:
        if isinstance(exc, cls):
            return code, getattr(exc, "error_type", type_)
    return 400, "BadRequestException"


def install(app: FastAPI) -> None:
    @app.exception_handler(e.CatalogError)
    async def catalog_error(request: Request, exc: e.CatalogError) -> Response:
        code, type_ = for_catalog_error(exc)
        return error_response(code, type_, exc.message, head=request.method == "HEAD")

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return error_response(400, "BadRequestException", _describe(exc), head=request.method == "HEAD")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        type_ = _HTTP_TYPES.get(exc.status_code, "RESTException")
        return error_response(exc.status_code, type_, str(exc.detail), head=request.method == "HEAD")

    @app.exception_handler(AuthorizationUnavailable)
    async def authorization_unavailable(request: Request, exc: AuthorizationUnavailable) -> Response:
        # no answer is not a "no": a refusal would read as a decision, and a retry may succeed
        logger.warning("%s %s: %s", request.method, request.url.path, exc)
        return error_response(503, "ServiceUnavailableException", "The authorization backend could not answer; "
                              "try again", head=request.method == "HEAD")

    # psycopg's errors and the eventsourcing library's wrappers of them; `unexpected` below catches the rest (one
    # raised by a middleware outside these handlers, or wrapped in another error)
    @app.exception_handler(psycopg.Error)
    @app.exception_handler(PersistenceError)
    async def database_error(request: Request, exc: Exception) -> Response:
        return await unexpected(request, exc)

    @app.exception_handler(WrongKey)
    async def wrong_key(request: Request, exc: WrongKey) -> Response:
        # The server's configuration, not the request, is at fault, and retrying cannot help until an operator
        # sets the key the secrets were stored with: a 500 (not a 503, which clients retry) that says so.
        logger.error("%s %s: %s", request.method, request.url.path, exc)
        return error_response(500, "InternalServerError", str(exc), head=request.method == "HEAD")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        if unavailable(exc):
            return database_unavailable(request.method, request.url.path, exc)
        logger.exception("Unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, "InternalServerError", f"Internal error: {type(exc).__name__}")


def _describe(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body")
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "Invalid request: " + "; ".join(parts)
