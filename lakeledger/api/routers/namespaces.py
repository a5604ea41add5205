from fastapi import APIRouter, Depends, Query, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, fetch_visible, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep, boolean_param
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.models import CreateNamespaceRequest, UpdateNamespacePropertiesRequest
from lakeledger.api.openapi import (
    CreateNamespaceResponse,
    GetNamespaceResponse,
    ListNamespacesResponse,
    UpdateNamespacePropertiesResponse,
    errors,
    ok,
)
from lakeledger.api.pagination import PATH, Page, page
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.api.time_travel import as_of
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import NoSuchNamespace
from lakeledger.domain.names import dotted
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.warehouse import parse_storage_profile
from lakeledger.projections.catalog_queries import NamespaceRow, WarehouseRow

router = APIRouter(tags=["Catalog API"], responses=errors(400, 403, 404))


@router.get("/{prefix}/namespaces",
            responses=ok(ListNamespacesResponse, "The namespaces, or the children of `parent`"))
async def list_namespaces(container: ContainerDep, prefix: str, parent: str | None = Query(default=None),
                          paging: Page = Depends(page), az: Guard = Depends(guard)):
    container, prefix = await as_of(container, prefix)
    wh = await active_warehouse(container, prefix)
    parent_path = parse_namespace(parent) if parent else None
    if parent_path:
        row = await container.queries.namespace(wh.id, parent_path)
        missing = NoSuchNamespace(f"Namespace does not exist: {dotted(parent_path)}")
        if row is None:
            raise missing
        await az.require("can_list_namespaces", authorization.namespace(row.id), missing)
        parent_path = row.path  # as spelt: the children's paths begin with it, whatever case the request used
    else:
        await az.require("can_list_namespaces", authorization.warehouse(wh.id), authorization.no_warehouse(prefix))

    async def objects(paths):
        ids = await container.queries.namespace_ids(wh.id, paths)
        return [authorization.namespace(ids[tuple(p)]) if tuple(p) in ids else None for p in paths]

    paths, token = await fetch_visible(
        az, paging, lambda after, limit: container.queries.child_namespaces(wh.id, parent_path, after, limit), PATH,
        lambda path: path, objects)
    return JSONResponse({"namespaces": paths, "next-page-token": token})


@router.post("/{prefix}/namespaces", responses=ok(CreateNamespaceResponse, "The namespace was created"))
async def create_namespace(container: ContainerDep, prefix: str, body: CreateNamespaceRequest,
                           by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    if body.namespace:
        await authorization.create_in(container, az, prefix, list(body.namespace[:-1]), "can_create_namespace")
    ns = await run_in_threadpool(container.namespaces.create, prefix, body.namespace, body.properties, by)
    wh = await active_warehouse(container, prefix)
    return JSONResponse({"namespace": ns.path, "properties": _with_location(wh, ns.path, ns.properties),
                         "namespace-uuid": str(ns.id)})


def _with_location(wh: WarehouseRow, path: list[str], properties: dict) -> dict:
    """The namespace's properties with a `location` (its own if it was given one): Trino creates a table without
    staging it, and then finds the location the catalog chose not empty, unless the namespace has a location."""
    return {"location": parse_storage_profile(wh.storage_profile).namespace_location(path), **properties}


async def _load(container: Container, prefix: str, namespace: str, az: Guard) -> tuple[WarehouseRow, NamespaceRow]:
    container, prefix = await as_of(container, prefix)
    wh = await active_warehouse(container, prefix)
    path = parse_namespace(namespace)
    row = await container.queries.namespace(wh.id, path)
    missing = NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
    if row is None:
        raise missing
    await az.require(authorization.SEE, authorization.namespace(row.id), missing)
    return wh, row


@router.get("/{prefix}/namespaces/{namespace}",
            responses=ok(GetNamespaceResponse, "The namespace and its properties"))
async def load_namespace(container: ContainerDep, prefix: str, namespace: str, az: Guard = Depends(guard)):
    wh, row = await _load(container, prefix, namespace, az)
    return JSONResponse({"namespace": row.path, "properties": _with_location(wh, row.path, row.properties),
                         "namespace-uuid": str(row.id)})


@router.head("/{prefix}/namespaces/{namespace}", status_code=204)
async def namespace_exists(container: ContainerDep, prefix: str, namespace: str, az: Guard = Depends(guard)):
    await _load(container, prefix, namespace, az)
    return Response(status_code=204)


@router.delete("/{prefix}/namespaces/{namespace}", status_code=204)
async def drop_namespace(
        container: ContainerDep, prefix: str, namespace: str,
        recursive: str | None = Query(default=None, description="Drop everything in it too, in one atomic change; "
                                                                "in a soft warehouse an undrop of this namespace "
                                                                "brings all of it back"),
        force: str | None = Query(default=None, description="Override protection; with recursive, also delete "
                                                            "at once even in a soft warehouse"),
        purge: str | None = Query(default=None, description="With recursive: delete the tables' files when their "
                                                            "deletion is final (default true)"),
        by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    await authorization.namespace_action(container, az, prefix, parse_namespace(namespace), "can_delete")
    await run_in_threadpool(container.namespaces.drop, prefix, parse_namespace(namespace), by,
                            boolean_param(recursive, "recursive", False), boolean_param(force, "force", False),
                            boolean_param(purge, "purge", True))
    return Response(status_code=204)


@router.post("/{prefix}/namespaces/{namespace}/properties",
             responses=ok(UpdateNamespacePropertiesResponse, "The properties were updated"))
async def update_namespace_properties(container: ContainerDep, prefix: str, namespace: str,
                                      body: UpdateNamespacePropertiesRequest, by: Provenance = Depends(provenance),
                                      az: Guard = Depends(guard)):
    await authorization.namespace_action(container, az, prefix, parse_namespace(namespace), "can_update_properties")
    updated, removed, missing = await run_in_threadpool(
        container.namespaces.update_properties, prefix, parse_namespace(namespace), body.updates, body.removals, by)
    return JSONResponse({"updated": updated, "removed": removed, "missing": missing})
