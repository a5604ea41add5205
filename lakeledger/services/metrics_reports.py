"""Keeping the metrics reports engines send (``POST .../tables/{t}/metrics``): each one an event of its own
(lakeledger/domain/metrics_report.py), and the table's newest reports read from the metrics-reports read model
(lakeledger/projections/metrics_reports.py), caught up with the log before each answer."""

from typing import Any
from uuid import UUID

from lakeledger.domain.metrics_report import MetricsReport, check_report
from lakeledger.domain.provenance import Provenance
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.services.unit_of_work import Ledger


class MetricsReports:
    def __init__(self, ledger: Ledger, view: ProjectionDriver, per_table: int):
        self.ledger = ledger
        self.view = view
        self.per_table = per_table

    def record(self, warehouse_id: UUID, table_id: UUID, report: Any, by: Provenance) -> bool:
        """Appends the report about the table (``InvalidMetricsReport`` for a body that is not one, nothing
        appended); False when reports are not kept (``LAKELEDGER__METRICS_REPORTS_PER_TABLE=0``): then only checked.
        A fresh aggregate, so the append races nothing and needs no retry."""
        if self.per_table == 0:
            check_report(report)
            return False
        self.ledger.append(MetricsReport.receive(warehouse_id, table_id, report, by))
        return True

    def caught_up(self) -> int:
        """The read model brought up to the log's head (503 ``CatchingUp``/``ReadModelStuck`` when it cannot be)."""
        return self.view.caught_up()
