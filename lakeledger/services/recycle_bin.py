"""What a soft delete profile keeps: the soft-deleted tables, views and namespaces of a warehouse, undrop,
and their final deletion when they expire (fired by the expiry worker from the schedule)."""

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID, uuid4

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import AlreadyExists, BadRequest, NotFound
from lakeledger.domain.name_claim import NAMESPACE, TABULAR, NameClaim
from lakeledger.domain.names import dotted, name_key
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import SYSTEM, Provenance
from lakeledger.domain.tabular import Tabular
from lakeledger.projections.expiry_schedule import NAMESPACE as SCHEDULED_NAMESPACE
from lakeledger.services import resolve
from lakeledger.services.conditions import Condition, namespace_exists
from lakeledger.services.resolve import WarehouseSettings
from lakeledger.services.unit_of_work import Ledger, all_found


@dataclass(frozen=True)
class UndropTarget:
    type: str
    id: UUID


class _Claims:
    """The name claims one undrop takes, each loaded once even when several targets touch it."""

    def __init__(self, ledger: Ledger, by: Provenance, matching: str):
        self.ledger, self.by, self.matching = ledger, by, matching  # the warehouse's rule for names
        self.taken: dict[tuple[str, UUID, str], NameClaim] = {}

    def take(self, scope: str, container_id: UUID, name: str, holder_id: UUID, what: str, label: str) -> None:
        key = (scope, container_id, name_key(name, self.matching))
        try:
            if key in self.taken:
                self.taken[key].claim(holder_id, what, self.by)
            else:
                self.taken[key] = self.ledger.claim(scope, container_id, name, holder_id, what, self.by,
                                                    matching=self.matching)
        except AlreadyExists:
            other = "table or view" if scope == TABULAR else "namespace"
            raise AlreadyExists(f"Cannot undrop {what.lower()} {label}: the name is now taken by another {other}; "
                                f"rename or drop that one first") from None


class RecycleBin:
    def __init__(self, ledger: Ledger):
        self.ledger = ledger

    def undrop(self, warehouse_id: str, targets: list[UndropTarget], by: Provenance) -> None:
        """Restores every target in one append: all of them come back, or none."""
        if not targets:
            raise BadRequest("Undrop needs at least one target")
        if len({t.id for t in targets}) != len(targets):
            raise BadRequest("A target appears twice in one undrop")

        def command() -> None:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            now = self.ledger.now()
            claims = _Claims(self.ledger, by, wh.name_matching)
            restored: list[CatalogAggregate] = []
            conditions: list[Condition] = []
            for target in targets:
                if target.type == "namespace":
                    restored.extend(self._namespace(wh, target.id, now, claims, conditions, by))
                else:
                    restored.append(self._tabular(wh, target, now, claims, conditions, by))
            self.ledger.append(*claims.taken.values(), *restored, conditions=conditions)

        self.ledger.retrying(command)

    def _tabular(self, wh: WarehouseSettings, target: UndropTarget, now: datetime, claims: _Claims,
                 conditions: list[Condition], by: Provenance) -> Tabular:
        tabular = self.ledger.log.get(Tabular, target.id)
        if tabular is None or tabular.kind != target.type or tabular.warehouse_id != wh.id:
            raise NotFound(f"No soft-deleted {target.type} with id {target.id} in warehouse {wh.name}")
        tabular.deletion.check_restorable(tabular.kind, f"{tabular.identifier} ({tabular.id})", now)
        if tabular.deletion.with_namespace is not None:
            raise AlreadyExists(f"The {tabular.kind} {tabular.identifier} was dropped with namespace "
                                f"{tabular.deletion.with_namespace}; undrop that namespace to bring it back")
        ns = self._home(wh, tabular)
        claims.take(TABULAR, ns.id, tabular.name, tabular.id, tabular.word, tabular.identifier)
        tabular.undrop(ns.id, tuple(ns.path), now, by)
        conditions.append(namespace_exists(ns.id, ns.path))
        return tabular

    def _home(self, wh: WarehouseSettings, tabular: Tabular) -> Namespace:
        """The namespace a table or view comes back to: its own, or, if that was dropped since, the
        namespace now at the same path."""
        own = self.ledger.log.get(Namespace, tabular.namespace_id)
        if own is not None and not own.dropped:
            return own
        try:
            return resolve.namespace(self.ledger, wh, tuple(tabular.namespace))
        except NotFound:
            raise AlreadyExists(f"Cannot undrop {tabular.kind} {tabular.identifier}: its namespace "
                                f"{dotted(tabular.namespace)} no longer exists; create or undrop it first") from None

    def _namespace(self, wh: WarehouseSettings, namespace_id: UUID, now: datetime, claims: _Claims,
                   conditions: list[Condition], by: Provenance) -> list[CatalogAggregate]:
        root = self.ledger.log.get(Namespace, namespace_id)
        if root is None or root.warehouse_id != wh.id:
            raise NotFound(f"No soft-deleted namespace with id {namespace_id} in warehouse {wh.name}")
        root.deletion.check_restorable("namespace", f"{dotted(root.path)} ({root.id})", now)
        if root.deletion.with_namespace is not None:
            raise AlreadyExists(f"Namespace {dotted(root.path)} was dropped with namespace "
                                f"{root.deletion.with_namespace}; undrop that namespace to bring it back")
        if root.parent_id is not None:
            parent = self.ledger.log.get(Namespace, root.parent_id)
            if parent is None or parent.dropped:
                raise AlreadyExists(f"Cannot undrop namespace {dotted(root.path)}: its parent namespace "
                                    f"{dotted(root.path[:-1])} no longer exists; undrop or create it first")
            conditions.append(namespace_exists(parent.id, parent.path))
        claims.take(NAMESPACE, root.parent_id or wh.id, root.name, root.id, "Namespace", dotted(root.path))
        contents = root.contents or {}
        children = [self.ledger.log.get(Namespace, UUID(i)) for i in contents.get("namespaces", [])]
        tabulars = [self.ledger.log.get(Tabular, UUID(i)) for i in contents.get("tabulars", [])]
        if not (all_found(children) and all_found(tabulars)):
            raise NotFound(f"Namespace {dotted(root.path)} cannot be restored: part of it is missing from the log")
        root.undrop(now, by)
        for child in children:
            assert child.parent_id is not None  # a namespace inside another has a parent
            claims.take(NAMESPACE, child.parent_id, child.name, child.id, "Namespace", dotted(child.path))
            child.undrop(now, by)
        for tabular in tabulars:
            claims.take(TABULAR, tabular.namespace_id, tabular.name, tabular.id, tabular.word,
                        tabular.identifier)
            tabular.undrop(tabular.namespace_id, tuple(tabular.namespace), now, by)
        return [root, *children, *tabulars]

    # -- expiry ------------------------------------------------------------------------------

    def expire(self, entity_id: UUID, entity_type: str) -> bool:
        """Records the final deletion of one soft-deleted object if it is due. Safe to call from any number of
        workers at once and again after a crash: the aggregate records at most one expiry per drop."""
        by = Provenance(SYSTEM, f"expiry-{uuid4()}")

        def command() -> bool:
            cls: type[Namespace] | type[Tabular] = Namespace if entity_type == SCHEDULED_NAMESPACE else Tabular
            item = self.ledger.log.get(cls, entity_id)
            if item is None or not item.expire(self.ledger.now(), by):
                return False
            self.ledger.append(item)
            return True

        return self.ledger.retrying(command)
