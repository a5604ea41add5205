from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization, tabulars
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep, boolean_param
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.models import (
    CommitViewRequest,
    CreateViewRequest,
    RegisterViewRequest,
    RenameTableRequest,
)
from lakeledger.api.openapi import ListViewsResponse, LoadViewResult, errors, ok
from lakeledger.api.pagination import Page, page
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.api.time_travel import as_of
from lakeledger.domain.provenance import Provenance
from lakeledger.services.metadata_files import load_result_body
from lakeledger.services.resolve import settings_of
from lakeledger.services.views import ViewState

router = APIRouter(tags=["Catalog API"], responses=errors(400, 403, 404))

JSON = "application/json"
VIEW = "view"


def _view_result(state: ViewState) -> Response:
    """An Iceberg LoadViewResult around the stored metadata bytes."""
    return Response(load_result_body(state.metadata_location, state.metadata), media_type=JSON)


@router.get("/{prefix}/namespaces/{namespace}/views", responses=ok(ListViewsResponse, "The views of the namespace"))
async def list_views(prefix: str, namespace: str, container: ContainerDep, paging: Page = Depends(page),
                     az: Guard = Depends(guard)):
    container, prefix = await as_of(container, prefix)
    return await tabulars.listed(container, prefix, namespace, VIEW, paging, az)


@router.post("/{prefix}/namespaces/{namespace}/views", responses=ok(LoadViewResult, "The view was created"))
async def create_view(prefix: str, namespace: str, body: CreateViewRequest, request: Request,
                      container: ContainerDep, by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await tabulars.creation(container, az, prefix, namespace, VIEW, request)
    state = await run_in_threadpool(container.views.create, prefix, parse_namespace(namespace), body, raw, by)
    return _view_result(state)


@router.get("/{prefix}/namespaces/{namespace}/views/{view}",
            responses=ok(LoadViewResult, "The view's current metadata"))
async def load_view(prefix: str, namespace: str, view: str, container: ContainerDep, az: Guard = Depends(guard)):
    container, prefix = await as_of(container, prefix)
    metadata_location = (await tabulars.find(container, prefix, namespace, view, VIEW, az))[1]
    body = container.files.response_body(metadata_location)
    if body is None:
        wh = await active_warehouse(container, prefix)
        body = await run_in_threadpool(container.files.load_response_body, metadata_location,
                                       container.storages.of(settings_of(wh)))
    return Response(body, media_type=JSON)


@router.head("/{prefix}/namespaces/{namespace}/views/{view}", status_code=204)
async def view_exists(prefix: str, namespace: str, view: str, container: ContainerDep, az: Guard = Depends(guard)):
    return await tabulars.found(container, prefix, namespace, view, VIEW, az)


@router.post("/{prefix}/namespaces/{namespace}/views/{view}",
             responses=ok(LoadViewResult, "The view's new version was committed"))
async def replace_view(prefix: str, namespace: str, view: str, body: CommitViewRequest,
                       container: ContainerDep, by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.tabular_action(container, az, prefix, parse_namespace(namespace), view, VIEW, "can_commit")
    state = await run_in_threadpool(container.views.replace, prefix, parse_namespace(namespace), view,
                                    body.requirements, body.updates, by)
    return _view_result(state)


@router.delete("/{prefix}/namespaces/{namespace}/views/{view}", status_code=204)
async def drop_view(prefix: str, namespace: str, view: str, container: ContainerDep,
                    force: str | None = Query(default=None, description="Drop it even if it is protected"),
                    by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.tabular_action(container, az, prefix, parse_namespace(namespace), view, VIEW, "can_drop")
    await run_in_threadpool(container.views.drop, prefix, parse_namespace(namespace), view,
                            boolean_param(force, "force", default=False), by)
    return Response(status_code=204)


@router.post("/{prefix}/namespaces/{namespace}/register-view", responses=ok(LoadViewResult, "The view was registered"))
async def register_view(prefix: str, namespace: str, body: RegisterViewRequest, request: Request,
                        container: ContainerDep, by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await tabulars.creation(container, az, prefix, namespace, VIEW, request)
    state = await run_in_threadpool(container.views.register, prefix, parse_namespace(namespace), body.name,
                                    body.metadata_location, raw, by)
    return _view_result(state)


@router.post("/{prefix}/views/rename", status_code=204)
async def rename_view(prefix: str, body: RenameTableRequest, container: ContainerDep,
                      by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    return await tabulars.rename(container, az, by, prefix, VIEW, body, container.views.rename)
