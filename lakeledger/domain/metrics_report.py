"""A metrics report an engine sent about a table (Iceberg's ``ReportMetricsRequest``: a ScanReport after planning a
scan, a CommitReport after a commit), kept in the log as an aggregate of its own with one event.

Why its own aggregate and not an event of the table: a report changes nothing in the catalog, and engines send one
per scan. As a table event it would take the table's next version, so a report racing a commit would make one of
them retry, and every load of the table would fold its reports. As its own aggregate (a fresh id, one event) its
append never conflicts with anything and nothing folds it. The history and the Events API leave it out (it is no
catalog change: lakeledger/projections/history.py has no digest for it); the metrics-reports read model
(lakeledger/projections/metrics_reports.py) keeps the newest of each table.

Checks here are the spec's shapes, the least the read model needs to name what a report says; the report is kept as
sent, every field, known or not."""

from typing import Any
from uuid import UUID, uuid4

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance

SCAN, COMMIT = "scan-report", "commit-report"
REPORT_TYPES = (SCAN, COMMIT)

# the fields each kind requires (the spec's ScanReport and CommitReport), with the JSON types they must have
_INT, _STR, _LIST, _DICT = (int,), (str,), (list,), (dict,)
_REQUIRED: dict[str, dict[str, tuple[type, ...]]] = {
    SCAN: {"table-name": _STR, "snapshot-id": _INT, "filter": (dict, bool, str), "schema-id": _INT,
           "projected-field-ids": _LIST, "projected-field-names": _LIST, "metrics": _DICT},
    COMMIT: {"table-name": _STR, "snapshot-id": _INT, "sequence-number": _INT, "operation": _STR, "metrics": _DICT},
}
_INT64 = range(-(2**63), 2**63)


class InvalidMetricsReport(BadRequest):
    error_type = "BadRequestException"


def _problem(kind: str, report: dict[str, Any]) -> str | None:
    """Why ``report`` is not a ``kind`` report of the spec, or None."""
    for field, types in _REQUIRED[kind].items():
        if field not in report:
            return f"a {kind} requires {field!r}"
        value = report[field]
        if isinstance(value, bool) and bool not in types or not isinstance(value, types):
            return f"{field!r} of a {kind} must be {'an integer' if types is _INT else 'a ' + types[0].__name__}"
        if types is _INT and value not in _INT64:
            return f"{field!r} must be a 64-bit integer"
    if kind == SCAN:
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in report["projected-field-ids"]):
            return "'projected-field-ids' must be integers"
        if not all(isinstance(n, str) for n in report["projected-field-names"]):
            return "'projected-field-names' must be strings"
    for name, result in report["metrics"].items():
        why = _metric_problem(result)
        if why:
            return f"metric {name!r} {why}"
    metadata = report.get("metadata")
    if metadata is not None and not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        return "'metadata' must be an object of strings"
    return None


def _metric_problem(result: Any) -> str | None:
    """A CounterResult (unit, value) or a TimerResult (time-unit, count, total-duration)."""
    if not isinstance(result, dict):
        return "must be a CounterResult or a TimerResult object"
    shape = ("unit", "value") if "unit" in result or "value" in result else ("time-unit", "count", "total-duration")
    for key in shape:
        value = result.get(key)
        wanted_text = key.endswith("unit")
        if wanted_text and not isinstance(value, str):
            return f"needs {key!r} as a string"
        if not wanted_text and (isinstance(value, bool) or not isinstance(value, int) or value not in _INT64):
            return f"needs {key!r} as a 64-bit integer"
    return None


def check_report(report: Any) -> str:
    """The kind of a ReportMetricsRequest (``scan-report`` or ``commit-report``), or ``InvalidMetricsReport``.

    ``report-type`` is required; the spec lets it be any string and the body any of the two shapes, so a type of
    neither name is classified by the shape it has (scan first)."""
    if not isinstance(report, dict):
        raise InvalidMetricsReport("Invalid metrics report: the body must be a JSON object")
    report_type = report.get("report-type")
    if not isinstance(report_type, str):
        raise InvalidMetricsReport("Invalid metrics report: 'report-type' is required (scan-report or commit-report)")
    kinds = (report_type,) if report_type in REPORT_TYPES else REPORT_TYPES
    problems = []
    for kind in kinds:
        why = _problem(kind, report)
        if why is None:
            return kind
        problems.append(why)
    raise InvalidMetricsReport(f"Invalid metrics report: {'; '.join(problems)}")


class MetricsReport(CatalogAggregate):
    class Received(CatalogAggregate.Created):
        """A report about the table ``table_id`` of ``warehouse_id``: ``kind`` is scan-report or commit-report,
        ``report`` the body as the client sent it."""

        warehouse_id: UUID
        table_id: UUID
        kind: str
        report: dict[str, Any]

    @classmethod
    def receive(cls, warehouse_id: UUID, table_id: UUID, report: dict[str, Any], by: Provenance) -> "MetricsReport":
        kind = check_report(report)
        return cls._create(cls.Received, id=uuid4(), warehouse_id=warehouse_id, table_id=table_id, kind=kind,
                           report=report, actor=by.actor, request_id=by.request_id)


_MS_PER = {"nanoseconds": 1e-6, "microseconds": 1e-3, "milliseconds": 1.0, "seconds": 1e3, "minutes": 6e4,
           "hours": 3.6e6, "days": 8.64e7}
# what a person asks of a report first, as (files, bytes, records, duration) metric names of each kind (Iceberg's
# ScanMetricsResult and CommitMetricsResult): a scan's result files and their size and its planning time; a
# commit's added files, their size and records, and its whole duration. Each figure sums its parts; a part is the
# first of its names the report has: Java writes a scan's sizes as "total-file-size-in-bytes", the REST spec's
# example as "total-file-size-bytes"
_FIGURES = {SCAN: ((("result-data-files",), ("result-delete-files",)),
                   (("total-file-size-in-bytes", "total-file-size-bytes"),
                    ("total-delete-file-size-in-bytes", "total-delete-file-size-bytes")),
                   (), "total-planning-duration"),
            COMMIT: ((("added-data-files",), ("added-delete-files",)), (("added-files-size-bytes",),),
                     (("added-records",),), "total-duration")}


def _count(metric: Any) -> int | None:
    value = metric.get("value") if isinstance(metric, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _counted(metrics: dict[str, Any], parts: tuple[tuple[str, ...], ...]) -> int | None:
    values = [next((v for n in names if (v := _count(metrics.get(n))) is not None), None) for names in parts]
    found = [v for v in values if v is not None]
    return sum(found) if found else None


def _milliseconds(timer: Any) -> float | None:
    if not isinstance(timer, dict):
        return None
    total, per = timer.get("total-duration"), _MS_PER.get(str(timer.get("time-unit")).lower())
    if per is None or isinstance(total, bool) or not isinstance(total, int):
        return None
    return total * per


def figures(kind: str, metrics: Any) -> dict[str, Any]:
    """``files``, ``bytes``, ``records`` and ``duration-ms`` of a report (None where it does not say): for a scan the
    files planned (data and delete) and their bytes, and the planning time; for a commit the files, bytes and
    records it added, and its whole duration."""
    if kind not in _FIGURES or not isinstance(metrics, dict):
        return {"files": None, "bytes": None, "records": None, "duration-ms": None}
    files, size, records, timer = _FIGURES[kind]
    return {"files": _counted(metrics, files), "bytes": _counted(metrics, size),
            "records": _counted(metrics, records) if records else None,
            "duration-ms": _milliseconds(metrics.get(timer))}
