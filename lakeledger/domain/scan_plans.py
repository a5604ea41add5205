"""Server-side scan planning's identifiers (Iceberg REST ``planTableScan``): plan ids and plan tasks, and the JSON
form of the values a planned file carries.

A plan id is not a handle on state the server keeps: it *is* the plan's request — the table it was made for, the
snapshot(s) it reads and its filter, projection and options — so any API process can answer ``fetchPlanningResult``
or ``fetchScanTasks`` for it, across restarts, without a table of plans or a sticky session. A plan task is a plan id
and a range of the snapshot's data manifests; a snapshot's manifest list never changes, so the range always names
the same manifests. Neither is signed: each request is authorized on its table afresh, and a made-up plan id only
asks for a plan its caller could ask for with ``planTableScan`` itself; the table id inside keeps one table's plan
from being used on another (404, as an unknown plan). Decoding validates every field."""

import base64
import binascii
import datetime as dt
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from uuid import UUID

import orjson

VERSION = 1
PLAN_PREFIX = "p1."
TASK_PREFIX = "t1."


class UnknownPlan(ValueError):
    """Not a plan id (or plan task) this server issued for this table."""


@dataclass(frozen=True)
class PlanRequest:
    """What a plan id carries: a planTableScan request bound to its table and resolved snapshot(s)."""

    table_id: UUID
    snapshot_id: int | None  # the point-in-time scan's snapshot; None: the table had none (an empty plan)
    start_snapshot_id: int | None = None  # an incremental scan's range (start exclusive, end = snapshot_id)
    filter: Any = None  # the Iceberg expression JSON as the client sent it
    select: tuple[str, ...] | None = None
    case_sensitive: bool = True
    use_snapshot_schema: bool = False
    stats_fields: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"v": VERSION, "t": str(self.table_id), "s": self.snapshot_id}
        optional = {"a": self.start_snapshot_id, "f": self.filter,
                    "sel": list(self.select) if self.select is not None else None,
                    "st": list(self.stats_fields) if self.stats_fields is not None else None}
        fields.update({k: v for k, v in optional.items() if v is not None})
        if not self.case_sensitive:
            fields["ci"] = 1
        if self.use_snapshot_schema:
            fields["us"] = 1
        return fields


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(data)).decode().rstrip("=")


def _unb64(text: str) -> Any:
    try:
        return orjson.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, binascii.Error, orjson.JSONDecodeError):
        raise UnknownPlan("not a plan of this server") from None


def encode_plan(plan: PlanRequest) -> str:
    return PLAN_PREFIX + _b64(plan.to_json())


def encode_task(plan: PlanRequest, first: int, end: int) -> str:
    """A plan task: the data manifests ``[first, end)`` of the plan's snapshot (in manifest-list order)."""
    return TASK_PREFIX + _b64({**plan.to_json(), "m": [first, end]})


def _int_or_none(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnknownPlan("not a plan of this server")
    return value


def _names(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UnknownPlan("not a plan of this server")
    return tuple(value)


def _plan(fields: Any, table_id: UUID) -> PlanRequest:
    if not isinstance(fields, dict) or fields.get("v") != VERSION:
        raise UnknownPlan("not a plan of this server")
    if fields.get("t") != str(table_id):
        raise UnknownPlan("a plan of another table")
    return PlanRequest(table_id=table_id, snapshot_id=_int_or_none(fields.get("s")),
                       start_snapshot_id=_int_or_none(fields.get("a")), filter=fields.get("f"),
                       select=_names(fields.get("sel")), case_sensitive=fields.get("ci") != 1,
                       use_snapshot_schema=fields.get("us") == 1, stats_fields=_names(fields.get("st")))


def decode_plan(plan_id: str, table_id: UUID) -> PlanRequest:
    if not plan_id.startswith(PLAN_PREFIX):
        raise UnknownPlan("not a plan of this server")
    return _plan(_unb64(plan_id[len(PLAN_PREFIX):]), table_id)


def decode_task(task: str, table_id: UUID) -> tuple[PlanRequest, int, int]:
    if not task.startswith(TASK_PREFIX):
        raise UnknownPlan("not a plan task of this server")
    fields = _unb64(task[len(TASK_PREFIX):])
    plan = _plan(fields, table_id)
    span = fields.get("m")
    if (not isinstance(span, list) or len(span) != 2 or not all(type(v) is int for v in span)
            or not 0 <= span[0] < span[1]):
        raise UnknownPlan("not a plan task of this server")
    return plan, span[0], span[1]


def chunks(count: int, size: int) -> list[tuple[int, int]]:
    """``[0, count)`` in ranges of at most ``size``."""
    return [(first, min(first + size, count)) for first in range(0, count, size)]


_EPOCH = dt.datetime(1970, 1, 1)


def json_value(type_name: str, value: Any) -> Any:
    """A value as Iceberg's single-value JSON serialization writes it (the form Java's REST client parses), from
    its Python form in pyiceberg (ints for dates, times and timestamps, bytes for binary and fixed)."""
    if value is None or isinstance(value, bool):
        return value
    if type_name == "date" and isinstance(value, int):
        return (dt.date(1970, 1, 1) + dt.timedelta(days=value)).isoformat()
    if type_name == "time" and isinstance(value, int):
        return (dt.datetime.min + dt.timedelta(microseconds=value)).time().isoformat()
    if type_name in ("timestamp", "timestamptz") and isinstance(value, int):
        text = (_EPOCH + dt.timedelta(microseconds=value)).isoformat(timespec="microseconds")
        return text + "+00:00" if type_name == "timestamptz" else text
    if type_name in ("timestamp_ns", "timestamptz_ns") and isinstance(value, int):
        seconds, nanos = divmod(value, 1_000_000_000)
        text = (_EPOCH + dt.timedelta(seconds=seconds)).isoformat(timespec="seconds") + f".{nanos:09d}"
        return text + "+00:00" if type_name == "timestamptz_ns" else text
    if isinstance(value, bytes | bytearray):
        return value.hex().upper()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return str(value)
    return value
