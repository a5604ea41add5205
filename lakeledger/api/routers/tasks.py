"""Lakeledger's background work as tasks, in Lakekeeper's shapes (lakeledger/domain/tasks.py): a warehouse's
soft-deletion expiries (queue ``tabular_expiration``, ``soft_deletion`` in Lakekeeper's newer documents) and purges
(``tabular_purge``), listed, read by id, controlled (``cancel``, ``run-now``), and each queue's configuration.

Reading takes ``can_list_deleted_tabulars`` on the warehouse (every task here works on a dropped table or view);
controlling takes ``can_modify_soft_deletion``; setting a queue's configuration too, as a warehouse setting (so a
warehouse managed by instance-admin keeps it to the server's admins). A warehouse the caller may not see answers 404.
The project-level paths answer for the project's tasks, of which Lakeledger has none: an empty list, 404 by id."""

import hashlib
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

import orjson
from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictInt

from lakeledger.api.authorization import Guard, guard
from lakeledger.api.context import provenance
from lakeledger.api.dependencies import ContainerDep
from lakeledger.api.openapi import bodiless, errors, ok
from lakeledger.api.pagination import body_page, fetch, is_time_and_id
from lakeledger.api.responses import JSONResponse
from lakeledger.api.routers.management import (
    authorize_project,
    authorize_warehouse,
    authorize_warehouse_settings,
    warehouse_row,
)
from lakeledger.api.routers.projects import project_id_of
from lakeledger.bootstrap import Container
from lakeledger.domain.errors import BadRequest, NotFound
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tasks import MAX_CONTROLLED, QUEUE_ALIASES, RUNNING, SCHEDULED, STOPPING, SUCCESS, queue_name
from lakeledger.projections.catalog_queries import WarehouseRow
from lakeledger.projections.tasks_queries import AttemptRow, TaskFilter, TaskRow
from lakeledger.services.tasks import QUEUES, TaskTarget, acts_on, check_action, check_queues

router = APIRouter(prefix="/management/v1", tags=["Tasks"])

READ, CONTROL = "can_list_deleted_tabulars", "can_modify_soft_deletion"
DEFAULT_ATTEMPTS = 5  # Lakekeeper's default numAttempts
_ID_FIELD = {"table": "table-id", "view": "view-id", "generic-table": "generic-table-id"}
TaskStatus = Literal["RUNNING", "SCHEDULED", "STOPPING", "CANCELLED", "SUCCESS", "FAILED"]


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class EntityFilter(_Model):
    type: Literal["table", "view", "generic-table", "warehouse"]
    table_id: UUID | None = Field(default=None, alias="table-id")
    view_id: UUID | None = Field(default=None, alias="view-id")
    generic_table_id: UUID | None = Field(default=None, alias="generic-table-id")


def _written(value: Any) -> Any:
    """A date-time as the document has it, a string: pydantic would read a number as seconds since 1970."""
    if not isinstance(value, str | datetime):
        raise ValueError("a date-time is an RFC 3339 string")
    return value


DateTime = Annotated[datetime, BeforeValidator(_written)]


class _ListRequest(_Model):
    created_after: DateTime | None = Field(default=None, alias="created-after")
    created_before: DateTime | None = Field(default=None, alias="created-before")
    page_size: StrictInt | None = Field(default=None, alias="page-size")
    page_token: str | None = Field(default=None, alias="page-token")
    queue_name: list[str] | None = Field(default=None, alias="queue-name")
    status: list[TaskStatus] | None = None


class ListTasksRequest(_ListRequest):
    entities: list[EntityFilter] | None = None


class ListProjectTasksRequest(_ListRequest):
    pass


class ControlTaskAction(_Model):
    action_type: Literal["cancel", "run-now", "run-at", "stop"] = Field(alias="action-type")
    scheduled_for: DateTime | None = Field(default=None, alias="scheduled-for")


class ControlTasksRequest(_Model):
    action: ControlTaskAction
    task_ids: list[UUID] = Field(alias="task-ids")


class TaskInfo(BaseModel):
    """Lakekeeper's WarehouseTaskInfo."""

    model_config = ConfigDict(populate_by_name=True)
    task_id: UUID = Field(alias="task-id")
    project_id: str = Field(alias="project-id")
    warehouse_id: UUID = Field(alias="warehouse-id")
    queue_name: str = Field(alias="queue-name")
    entity: dict[str, Any] | None = Field(default=None, description="{type, table-id | view-id | generic-table-id}")
    entity_name: list[str] | None = Field(default=None, alias="entity-name")
    status: TaskStatus
    scheduled_for: datetime = Field(alias="scheduled-for")
    attempt: int
    progress: float
    created_at: datetime = Field(alias="created-at")
    updated_at: datetime | None = Field(default=None, alias="updated-at")
    picked_up_at: datetime | None = Field(default=None, alias="picked-up-at")
    last_heartbeat_at: datetime | None = Field(default=None, alias="last-heartbeat-at")
    parent_task_id: UUID | None = Field(default=None, alias="parent-task-id")


class ListTasksResponse(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    tasks: list[TaskInfo]
    next_page_token: str | None = Field(default=None, alias="next-page-token")


class TaskAttempt(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    attempt: int
    status: TaskStatus
    scheduled_for: datetime = Field(alias="scheduled-for")
    created_at: datetime = Field(alias="created-at")
    started_at: datetime | None = Field(default=None, alias="started-at")
    duration: str | None = None
    progress: float
    message: str | None = None
    execution_details: dict[str, Any] | None = Field(default=None, alias="execution-details")


class GetTaskDetailsResponse(TaskInfo):
    task_data: dict[str, Any] = Field(alias="task-data")
    attempts: list[TaskAttempt]
    message: str | None = None
    execution_details: dict[str, Any] | None = Field(default=None, alias="execution-details")


class SetQueueConfigRequest(_Model):
    """Lakekeeper's Set…QueueConfig (checked again, with the event's own rules, in lakeledger/domain/tasks.py)."""

    queue_config: dict[str, Any] = Field(alias="queue-config")
    max_seconds_since_last_heartbeat: StrictInt | None = Field(default=None, alias="max-seconds-since-last-heartbeat",
                                                               ge=0)


class QueueConfigResponse(BaseModel):
    """Lakekeeper's Get…QueueConfig: ``queue-config`` is an object Lakekeeper gives no fields for these queues."""

    model_config = ConfigDict(populate_by_name=True)
    queue_config: dict[str, Any] = Field(alias="queue-config")
    max_seconds_since_last_heartbeat: int | None = Field(default=None, alias="max-seconds-since-last-heartbeat")


def _task_json(row: TaskRow) -> dict[str, Any]:
    return {
        "task-id": str(row.task_id), "project-id": str(row.project_id), "warehouse-id": str(row.warehouse_id),
        "queue-name": row.queue, "entity": {"type": row.entity_type, _ID_FIELD[row.entity_type]: str(row.entity_id)},
        "entity-name": list(row.entity_name), "status": row.status, "scheduled-for": row.scheduled_for.isoformat(),
        "attempt": _current_attempt(row), "progress": 1.0 if row.status == SUCCESS else 0.0,
        "created-at": row.created_at.isoformat(),
        "updated-at": row.updated_at.isoformat() if row.updated_at else None,
        "picked-up-at": _iso(row.picked_up_at), "last-heartbeat-at": None, "parent-task-id": None,
    }


def _current_attempt(row: TaskRow) -> int:
    """The running attempt, the next one while the task waits, the last one once it has ended (at least 1)."""
    if row.status == SCHEDULED:
        return row.attempts + 1
    return max(row.attempts, 1)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at else None


def _attempt_json(attempt: AttemptRow) -> dict[str, Any]:
    duration = None if attempt.ended_at is None else _duration(attempt.ended_at - attempt.started_at)
    return {"attempt": attempt.attempt, "status": attempt.status, "scheduled-for": attempt.scheduled_for.isoformat(),
            "created-at": attempt.started_at.isoformat(), "started-at": attempt.started_at.isoformat(),
            "duration": duration, "progress": 1.0 if attempt.status == SUCCESS else 0.0, "message": attempt.message,
            "execution-details": {"worker": attempt.worker}}


def _duration(took: timedelta) -> str:
    """ISO 8601, as Lakekeeper's ``duration`` (``PT1.5S``)."""
    return f"PT{max(took.total_seconds(), 0.0):.3f}S"


def _details_json(row: TaskRow, attempts: list[AttemptRow]) -> dict[str, Any]:
    # a task waiting for its retry has no outcome yet: its message is the last attempt's error, in ``attempts``
    return {**_task_json(row), "task-data": {**row.data, "entity-id": str(row.entity_id)},
            "attempts": [_attempt_json(a) for a in attempts],
            "message": None if row.status in (SCHEDULED, RUNNING, STOPPING) else row.message, "execution-details": None}


def _filter(body: ListTasksRequest) -> TaskFilter:
    entities: list[tuple[str, UUID]] | None = None
    if body.entities is not None:
        entities = []
        for entity in body.entities:
            if entity.type == "warehouse":
                continue  # warehouse-level tasks: Lakeledger has none
            ident = {"table": entity.table_id, "view": entity.view_id, "generic-table": entity.generic_table_id}
            found = ident[entity.type]
            if found is None:
                raise BadRequest(f"An entity filter of type {entity.type} needs {_ID_FIELD[entity.type]}")
            entities.append((entity.type, found))
    return TaskFilter(queues=[queue_name(q) for q in body.queue_name] if body.queue_name is not None else None,
                      statuses=list(body.status) if body.status is not None else None, entities=entities,
                      created_after=body.created_after, created_before=body.created_before)


def _list_id(request: Request, body: _ListRequest) -> str:
    """Names the list a body asks for: the path and the filters, paging left out."""
    filters = body.model_dump(mode="json", by_alias=True, exclude={"page_size", "page_token"})
    digest = hashlib.blake2b(orjson.dumps([request.url.path, filters], option=orjson.OPT_SORT_KEYS),
                             digest_size=9).digest()
    return digest.hex()


async def _readable(container: Container, az: Guard, warehouse_id: str, action: str = READ) -> WarehouseRow:
    await authorize_warehouse(az, warehouse_id, action)
    return await warehouse_row(container, warehouse_id)


@router.post("/warehouse/{warehouse_id}/task/list",
             responses={**ok(ListTasksResponse, "The warehouse's tasks, newest first"), **errors(400, 404)})
async def list_tasks(container: ContainerDep, request: Request, warehouse_id: str, body: ListTasksRequest,
                     az: Guard = Depends(guard)):
    row = await _readable(container, az, warehouse_id)
    where = _filter(body)
    settings = container.settings
    page = body_page(body.page_token, body.page_size, _list_id(request, body), settings.default_page_size,
                     settings.max_page_size)

    async def rows(after: Any, limit: int | None) -> list[TaskRow]:
        assert limit is not None  # always paged
        return await container.task_queries.tasks(
            row.id, where, (datetime.fromisoformat(after[0]), UUID(after[1])) if after else None, limit)

    await run_in_threadpool(container.tasks_view.caught_up)
    found, next_token = await fetch(page, rows, is_time_and_id, lambda r: [r.created_at.isoformat(), str(r.task_id)])
    return JSONResponse({"tasks": [_task_json(r) for r in found], "next-page-token": next_token})


@router.get("/warehouse/{warehouse_id}/task/by-id/{task_id}",
            responses={**ok(GetTaskDetailsResponse, "The task, with its attempts, newest first"), **errors(400, 404)})
async def get_task_details(container: ContainerDep, warehouse_id: str, task_id: UUID,
                           numAttempts: int | None = Query(default=DEFAULT_ATTEMPTS, ge=0),
                           az: Guard = Depends(guard)):
    row = await _readable(container, az, warehouse_id)
    await run_in_threadpool(container.tasks_view.caught_up)
    found = await container.task_queries.by_ids(row.id, [task_id])
    if not found:
        raise NotFound(f"Task does not exist in warehouse {warehouse_id}: {task_id}")
    limit = DEFAULT_ATTEMPTS if numAttempts is None else numAttempts
    attempts = await container.task_queries.attempts(task_id, limit) if limit else []
    return JSONResponse(_details_json(found[0], attempts))


@router.post("/warehouse/{warehouse_id}/task/control", status_code=204,
             responses={**bodiless("Every named task was controlled", 204), **errors(400, 404)})
async def control_tasks(container: ContainerDep, warehouse_id: str, body: ControlTasksRequest,
                        by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
    """``cancel``, ``run-now`` and ``run-at`` a scheduled task (an expiry, a purge, a maintenance run), ``stop`` a
    running maintenance run, recorded as events on the aggregate its work is kept on; a task in another state is left
    as it is. At most 100 ids; an id that names no task of the warehouse is a 404."""
    action = check_action(body.action.action_type, body.action.scheduled_for)
    if len(body.task_ids) > MAX_CONTROLLED:
        raise BadRequest(f"At most {MAX_CONTROLLED} tasks can be controlled at once, not {len(body.task_ids)}")
    row = await _readable(container, az, warehouse_id, CONTROL)
    await run_in_threadpool(container.tasks_view.caught_up)
    ids = list(dict.fromkeys(body.task_ids))
    found = {r.task_id: r for r in await container.task_queries.by_ids(row.id, ids)}
    missing = [str(i) for i in ids if i not in found]
    if missing:
        raise NotFound(f"Tasks do not exist in warehouse {warehouse_id}: {', '.join(missing)}")
    check_queues([TaskTarget(r.queue, r.entity_id) for r in found.values()], action)  # whatever their state
    targets = [TaskTarget(r.queue, r.entity_id) for r in found.values() if r.status in acts_on(action)]
    if targets:
        await run_in_threadpool(container.tasks.control, row.id, targets, action, by, body.action.scheduled_for)
    return Response(status_code=204)


def _register_queue(path_name: str) -> None:
    queue = queue_name(path_name)
    path = f"/warehouse/{{warehouse_id}}/task-queue/{path_name}/config"

    async def get_config(container: ContainerDep, warehouse_id: str, az: Guard = Depends(guard)):
        row = await _readable(container, az, warehouse_id)
        return JSONResponse(await run_in_threadpool(container.tasks.queue_config, row.id, queue))

    async def set_config(container: ContainerDep, warehouse_id: str, body: SetQueueConfigRequest,
                         by: Provenance = Depends(provenance), az: Guard = Depends(guard)):
        await authorize_warehouse_settings(container, az, warehouse_id, CONTROL)
        row = await warehouse_row(container, warehouse_id)
        await run_in_threadpool(container.tasks.set_queue_config, row.id, queue,
                                body.model_dump(by_alias=True, exclude_unset=True), by)
        return Response(status_code=204)

    suffix = path_name
    router.add_api_route(path, get_config, methods=["GET"], name=f"get_task_queue_config_{suffix}",
                         responses={**ok(QueueConfigResponse, f"The {path_name} queue's configuration"),
                                    **errors(400, 404)})
    router.add_api_route(path, set_config, methods=["POST"], status_code=204, name=f"set_task_queue_config_{suffix}",
                         responses={**bodiless("The configuration was set", 204), **errors(400, 404)})


for _name in (*QUEUES, *QUEUE_ALIASES):
    _register_queue(_name)


# --- the project's own tasks: Lakeledger has none (Lakekeeper's task-log cleanup has no counterpart here) ---------

@router.post("/project/task/list",
             responses={**ok(ListTasksResponse, "The project's tasks: none here"), **errors(400, 404)})
async def list_project_tasks(container: ContainerDep, body: ListProjectTasksRequest,
                             x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    await authorize_project(az, project_id_of(x_project_id, container), "can_get_metadata")
    return JSONResponse({"tasks": [], "next-page-token": None})


@router.get("/project/task/by-id/{task_id}", responses=errors(400, 404))
async def get_project_task_details(container: ContainerDep, task_id: UUID,
                                   numAttempts: int | None = Query(default=None, ge=0),
                                   x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    await authorize_project(az, project_id_of(x_project_id, container), "can_get_metadata")
    raise NotFound(f"Task does not exist: {task_id}")


@router.post("/project/task/control", status_code=204,
             responses={**bodiless("Every named task was controlled", 204), **errors(400, 404)})
async def control_project_tasks(container: ContainerDep, body: ControlTasksRequest,
                                x_project_id: str | None = Header(default=None), az: Guard = Depends(guard)):
    check_action(body.action.action_type)
    await authorize_project(az, project_id_of(x_project_id, container), "can_get_metadata")
    if body.task_ids:
        raise NotFound(f"Tasks do not exist: {', '.join(str(i) for i in body.task_ids)}")
    return Response(status_code=204)


