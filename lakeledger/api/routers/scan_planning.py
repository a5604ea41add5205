"""Iceberg REST server-side scan planning: ``planTableScan``, ``fetchPlanningResult``, ``cancelPlanning`` and
``fetchScanTasks`` (lakeledger/services/scan_planning.py plans; docs/scan-planning.md). Who may load a table may plan
it (the same decision as loadTable); storage credentials come with a completed plan as with a load, when
``X-Iceberg-Access-Delegation`` asks for them and the caller may read the table's data. Under a time-travel prefix
the table is planned as the catalog had it then."""

from typing import Any

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.concurrency import run_in_threadpool

from lakeledger.api import authorization, tabulars
from lakeledger.api.authorization import WRITE, Guard, guard
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.identifiers import parse_namespace
from lakeledger.api.models import FetchScanTasksRequest, PlanTableScanRequest
from lakeledger.api.openapi import PlanningResult, ScanTasks, errors, ok
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.warehouses import active_warehouse
from lakeledger.api.time_travel import as_of
from lakeledger.domain.errors import NoSuchPlanId, NoSuchPlanTask
from lakeledger.domain.scan_plans import PlanRequest
from lakeledger.domain.table_metadata import TableMetadata
from lakeledger.services import past_tables, scan_planning
from lakeledger.services.resolve import WarehouseSettings, settings_of
from lakeledger.services.scan_planning import PlanningLimits, ScanPlanner
from lakeledger.services.table_access import delegates
from lakeledger.storage import Storage

router = APIRouter(tags=["Catalog API"], responses=errors(400, 403, 404))

TABLE = "table"
_TABLE_PATH = "/{prefix}/namespaces/{namespace}/tables/{table}"


class _Table:
    """The table a planning request names, found and authorized as loadTable finds it."""

    def __init__(self, container, prefix: str, warehouse: WarehouseSettings, row: tuple, rights: str | None,
                 name: str, latest_location: str | None):
        self.container = container
        self.prefix = prefix
        self.warehouse = warehouse
        self.id, self.metadata_location, self.location = row[:3]
        self.rights = rights
        self.name = name
        # at a past prefix, where the table's metadata is now: the snapshots expired since are not planned
        self.latest_location = latest_location

    def metadata(self, storage: Storage) -> TableMetadata:
        if self.latest_location is None:
            return self.container.files.parsed(self.metadata_location, storage)
        return past_tables.metadata(self.container.files, storage, self.metadata_location, self.latest_location,
                                    self.name)

    def planner(self, plan: PlanRequest, missing) -> ScanPlanner:
        storage = self.container.storages.of(self.warehouse)
        return ScanPlanner(plan, self.metadata(storage), storage, missing)

    def limits(self) -> PlanningLimits:
        settings = self.container.settings
        return PlanningLimits(settings.scan_planning_manifests_per_task, settings.scan_planning_submit_above_manifests)


async def _table(container, prefix: str, namespace: str, table: str, az: Guard) -> _Table:
    live = container
    container, prefix = await as_of(container, prefix)
    row = await tabulars.find(container, prefix, namespace, table, TABLE, az, None)
    rights = await az.storage_rights(
        authorization.table(row[0]), authorization.no_tabular(TABLE, parse_namespace(namespace), table))
    warehouse = settings_of(await active_warehouse(container, prefix))
    latest = await live.queries.latest_metadata_location(row[0]) if container is not live else None
    return _Table(container, prefix, warehouse, row, rights, ".".join([*parse_namespace(namespace), table]), latest)


async def _with_credentials(found: _Table, answer: dict[str, Any], delegation: str | None,
                            request: Request) -> dict[str, Any]:
    """A completed plan's storage credentials, when the client asked for delegated access (as a load's)."""
    if (answer["status"] != "completed" or not delegates(delegation) or found.rights is None
            or found.location.startswith("file:")):
        return answer
    access = await run_in_threadpool(found.container.table_access.for_table, found.warehouse, found.id, found.location,
                                     delegation, str(request.base_url), False, found.rights == WRITE)
    if access.storage_credentials:
        answer["storage-credentials"] = access.storage_credentials
    return answer


@router.post(_TABLE_PATH + "/plan", summary="Submit a scan for planning",
             responses=ok(PlanningResult, "The plan: completed with its tasks, or submitted"))
async def plan_table_scan(prefix: str, namespace: str, table: str, body: PlanTableScanRequest, request: Request,
                          container: ContainerDep,
                          x_iceberg_access_delegation: str | None = Header(default=None),
                          az: Guard = Depends(guard)) -> JSONResponse:
    found = await _table(container, prefix, namespace, table, az)
    raw = body.model_dump(by_alias=True, exclude_unset=True)

    def plan() -> dict[str, Any]:
        metadata = found.metadata(container.storages.of(found.warehouse))
        parsed = scan_planning.parse_request(raw, found.id, metadata)
        return scan_planning.plan_answer(found.planner(parsed, _gone(parsed)), found.limits())

    answer = await run_in_threadpool(plan)
    return JSONResponse(await _with_credentials(found, answer, x_iceberg_access_delegation, request))


def _gone(plan: PlanRequest):
    return lambda: NoSuchPlanId(f"The snapshot of the plan is gone: {plan.snapshot_id}")


@router.get(_TABLE_PATH + "/plan/{plan_id}", summary="Fetches the result of scan planning for a plan-id",
            responses=ok(PlanningResult, "The plan's result"))
async def fetch_planning_result(prefix: str, namespace: str, table: str, plan_id: str, request: Request,
                                container: ContainerDep,
                                x_iceberg_access_delegation: str | None = Header(default=None),
                                az: Guard = Depends(guard)) -> JSONResponse:
    found = await _table(container, prefix, namespace, table, az)
    plan = scan_planning.decode_plan(plan_id, found.id)

    def result() -> dict[str, Any]:
        answer = scan_planning.plan_answer(found.planner(plan, _gone(plan)), found.limits(), submit=False)
        answer.pop("plan-id")  # fetchPlanningResult's CompletedPlanningResult has none
        return answer

    answer = await run_in_threadpool(result)
    return JSONResponse(await _with_credentials(found, answer, x_iceberg_access_delegation, request))


@router.delete(_TABLE_PATH + "/plan/{plan_id}", status_code=204, summary="Cancels scan planning for a plan-id")
async def cancel_planning(prefix: str, namespace: str, table: str, plan_id: str, container: ContainerDep,
                          az: Guard = Depends(guard)) -> Response:
    # a plan id holds no state (lakeledger/domain/scan_plans.py): there is nothing to release, only the id to check
    found = await _table(container, prefix, namespace, table, az)
    scan_planning.decode_plan(plan_id, found.id)
    return Response(status_code=204)


@router.post(_TABLE_PATH + "/tasks", summary="Fetches result tasks for a plan task",
             responses=ok(ScanTasks, "The file scan tasks of the plan task"))
async def fetch_scan_tasks(prefix: str, namespace: str, table: str, body: FetchScanTasksRequest,
                           container: ContainerDep, az: Guard = Depends(guard)) -> JSONResponse:
    found = await _table(container, prefix, namespace, table, az)
    plan, first, end = scan_planning.decode_task(body.plan_task, found.id)

    def tasks() -> dict[str, Any]:
        planner = found.planner(plan, lambda: NoSuchPlanTask(f"Plan task does not exist: {body.plan_task}"))
        if end > planner.data_manifest_count():
            raise NoSuchPlanTask(f"Plan task does not exist: {body.plan_task}")
        return planner.tasks(first, end)

    return JSONResponse(await run_in_threadpool(tasks))
