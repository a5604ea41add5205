"""Read-only maintenance mode on and off (lakeledger/api/maintenance.py), as an event of the server."""

from typing import Literal

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict

from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.maintenance import SWITCH, MaintenanceMode
from lakeledger.api.openapi import errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.domain.provenance import Provenance

router = APIRouter(tags=["Management API"])


class MaintenanceModeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["read-only", "off"]


class MaintenanceModeResponse(BaseModel):
    mode: Literal["read-only", "off"]
    recorded: Literal["read-only", "off"]
    setting: Literal["read-only", "off"]


def _answer(mode: MaintenanceMode) -> JSONResponse:
    def said(on: bool) -> str:
        return "read-only" if on else "off"
    return JSONResponse({"mode": said(mode.read_only), "recorded": said(mode.recorded), "setting": said(mode.fixed)})


@router.get(SWITCH, responses=ok(MaintenanceModeResponse, "Whether writes are refused now (`mode`), by the last "
                                                         "recorded switch and by LAKELEDGER__MAINTENANCE_MODE"))
async def maintenance_mode(request: Request):
    return _answer(request.app.state.maintenance)


@router.post(SWITCH, responses={**ok(MaintenanceModeResponse, "The mode after the switch"), **errors(400, 403)})
async def set_maintenance_mode(container: ContainerDep, request: Request, body: MaintenanceModeBody,
                               by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """Switches read-only maintenance mode on or off, an event (`maintenance-mode.started` the first time,
    `maintenance-mode.switched` after); every API process follows within a second. Needs
    `can_set_maintenance_mode` on the server (its admins and operators)."""
    await az.require_on_server("can_set_maintenance_mode")
    read_only = body.mode == "read-only"
    await run_in_threadpool(container.management.set_read_only, read_only, by)
    mode: MaintenanceMode = request.app.state.maintenance
    mode.recorded = read_only
    return _answer(mode)
