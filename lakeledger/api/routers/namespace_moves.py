"""Moving or renaming a namespace (Lakekeeper 0.14's endpoint): ``POST .../namespace/{namespace_id}/move`` with the
namespace's full new path (lakeledger/services/namespace_moves.py)."""

from uuid import UUID

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from lakeledger.api import authorization
from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import MoveNamespaceResponse, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import warehouse_row
from lakeledger.domain.errors import NoSuchNamespace
from lakeledger.domain.names import dotted
from lakeledger.domain.provenance import Provenance
from lakeledger.projections.catalog_queries import WarehouseRow

router = APIRouter(prefix="/management/v1", tags=["Management API"])

# on the namespace moved, and on where it goes (its new parent namespace, or the warehouse for its root)
MOVE, ACCEPT = "can_move", "can_accept_moved_namespace"


class MoveNamespaceRequest(BaseModel):
    """``destination``: the full new path, the new parent's path then the new name (["b"] puts it at the root as
    b; a path equal to the current one changes nothing). ``force``: move a protected namespace."""

    model_config = ConfigDict(extra="forbid")
    destination: list[StrictStr]
    force: StrictBool = False


@router.post("/warehouse/{warehouse_id}/namespace/{namespace_id}/move",
             responses={**ok(MoveNamespaceResponse, "Where the namespace now is"), **errors(400, 403, 404, 409)})
async def move_namespace(container: ContainerDep, warehouse_id: str, namespace_id: UUID, body: MoveNamespaceRequest,
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    row = await warehouse_row(container, warehouse_id)
    await _authorize(container, az, row, namespace_id, body.destination)
    moved = await run_in_threadpool(container.namespace_moves.move, warehouse_id, namespace_id, body.destination,
                                    body.force, by)
    return JSONResponse({"namespace": list(moved.path), "namespace-id": str(moved.id),
                         "parent-namespace-id": str(moved.parent_id) if moved.parent_id else None})


async def _authorize(container, az: Guard, wh: WarehouseRow, namespace_id: UUID, destination: list[str]) -> None:
    """``can_move`` on the namespace, ``can_accept_moved_namespace`` on its new parent (Lakekeeper's rule: a move
    hands the tree to whoever holds rights at the destination, so it takes the right to grant at both ends). A new
    parent that does not exist is left to the service to answer (404), as for a hidden one."""
    if az.off:
        return
    await az.require(MOVE, authorization.namespace(namespace_id),
                     NoSuchNamespace(f"Namespace does not exist: {namespace_id}"))
    parent = list(destination[:-1])
    if not parent:
        await az.require(ACCEPT, authorization.warehouse(wh.id), authorization.no_warehouse(str(wh.id)))
        return
    found = await container.queries.namespace(wh.id, parent)
    if found is not None:
        await az.require(ACCEPT, authorization.namespace(found.id),
                         NoSuchNamespace(f"Namespace does not exist: {dotted(parent)}"))
