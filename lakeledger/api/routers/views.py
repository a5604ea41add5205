
from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import boolean_param, container
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
from lakeledger.api.tabulars import listed, warehouse_id_of
from lakeledger.api.time_travel import as_of
from lakeledger.domain.errors import NoSuchView
from lakeledger.domain.names import check_name, dotted
from lakeledger.domain.provenance import Provenance
from lakeledger.services.metadata_files import load_result_body
from lakeledger.services.resolve import settings_of
from lakeledger.services.views import ViewState

router = APIRouter(tags=["Catalog API"], responses=errors(400, 403, 404))

JSON = "application/json"


def _view_result(state: ViewState) -> Response:
    """An Iceberg LoadViewResult around the stored metadata bytes."""
    return Response(load_result_body(state.metadata_location, state.metadata), media_type=JSON)


async def _find_view(ll, prefix: str, namespace: str, view: str, az: Guard) -> tuple:
    """(id, metadata_location) of the view, or the 404 for what is missing: the warehouse, or else the view.
    A table of that name is not a view, and a view in a namespace that does not exist does not exist:
    NoSuchViewException for both, as Iceberg's reference server answers (Java's loadView raises it)."""
    path = parse_namespace(namespace)
    check_name(view, "View")
    warehouse_id = warehouse_id_of(prefix)
    row = await ll.queries.active_view(warehouse_id, path, view)
    if row is not None:
        await az.require(authorization.SEE, authorization.view(row[0]), authorization.no_tabular("view", path, view))
        return row
    await active_warehouse(ll, prefix)
    raise NoSuchView(f"View does not exist: {dotted([*path, view])}")


@router.get("/{prefix}/namespaces/{namespace}/views", responses=ok(ListViewsResponse, "The views of the namespace"))
async def list_views(prefix: str, namespace: str, ll=Depends(container), paging: Page = Depends(page),
                     az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    return await listed(ll, prefix, namespace, "view", paging, az)


@router.post("/{prefix}/namespaces/{namespace}/views", responses=ok(LoadViewResult, "The view was created"))
async def create_view(prefix: str, namespace: str, body: CreateViewRequest, request: Request,
                      ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await request.json()
    await authorization.create_in(ll, az, prefix, parse_namespace(namespace), "can_create_view")
    state = await run_in_threadpool(ll.views.create, prefix, parse_namespace(namespace), body, raw, by)
    return _view_result(state)


@router.get("/{prefix}/namespaces/{namespace}/views/{view}",
            responses=ok(LoadViewResult, "The view's current metadata"))
async def load_view(prefix: str, namespace: str, view: str, ll=Depends(container), az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    metadata_location = (await _find_view(ll, prefix, namespace, view, az))[1]
    body = ll.files.response_body(metadata_location)
    if body is None:
        wh = await active_warehouse(ll, prefix)
        body = await run_in_threadpool(ll.files.load_response_body, metadata_location,
                                       ll.storages.of(settings_of(wh)))
    return Response(body, media_type=JSON)


@router.head("/{prefix}/namespaces/{namespace}/views/{view}", status_code=204)
async def view_exists(prefix: str, namespace: str, view: str, ll=Depends(container), az: Guard = Depends(guard)):
    ll, prefix = await as_of(ll, prefix)
    await _find_view(ll, prefix, namespace, view, az)
    return Response(status_code=204)


@router.post("/{prefix}/namespaces/{namespace}/views/{view}",
             responses=ok(LoadViewResult, "The view's new version was committed"))
async def replace_view(prefix: str, namespace: str, view: str, body: CommitViewRequest,
                       ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.tabular_action(ll, az, prefix, parse_namespace(namespace), view, "view", "can_commit")
    state = await run_in_threadpool(ll.views.replace, prefix, parse_namespace(namespace), view, body.requirements,
                                    body.updates, by)
    return _view_result(state)


@router.delete("/{prefix}/namespaces/{namespace}/views/{view}", status_code=204)
async def drop_view(prefix: str, namespace: str, view: str,
                    force: str | None = Query(default=None, description="Drop it even if it is protected"),
                    ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.tabular_action(ll, az, prefix, parse_namespace(namespace), view, "view", "can_drop")
    await run_in_threadpool(ll.views.drop, prefix, parse_namespace(namespace), view,
                            boolean_param(force, "force", default=False), by)
    return Response(status_code=204)


@router.post("/{prefix}/namespaces/{namespace}/register-view", responses=ok(LoadViewResult, "The view was registered"))
async def register_view(prefix: str, namespace: str, body: RegisterViewRequest, request: Request,
                        ll=Depends(container), by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    raw = await request.json()
    await authorization.create_in(ll, az, prefix, parse_namespace(namespace), "can_create_view")
    state = await run_in_threadpool(ll.views.register, prefix, parse_namespace(namespace), body.name,
                                    body.metadata_location, raw, by)
    return _view_result(state)


@router.post("/{prefix}/views/rename", status_code=204)
async def rename_view(prefix: str, body: RenameTableRequest, ll=Depends(container),
                      by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.rename(ll, az, prefix, "view", body)
    await run_in_threadpool(ll.views.rename, prefix, (body.source.namespace, body.source.name),
                            (body.destination.namespace, body.destination.name), by)
    return Response(status_code=204)
