"""Conditions a command needs to still hold when its events are appended.

They run inside the append transaction, under the events-table lock that orders every append and
after the read model has absorbed every earlier append, so a check made there cannot be raced: a
namespace cannot lose its last child check to a table created at the same moment, nor a table be
created in a namespace being dropped. A failed condition raises, and nothing is appended."""

from collections.abc import Callable
from typing import Any
from uuid import UUID

from psycopg import Cursor

from lakeledger.domain.errors import (
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchWarehouse,
    UnfinishedDeletions,
    WarehouseNotEmpty,
)
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.projections.catalog_queries import (
    NAMESPACE_EXISTS,
    NAMESPACE_HAS_CHILDREN,
    TREE_GREW,
    WAREHOUSE_HAS_NAMESPACES,
    WAREHOUSE_HAS_PENDING_DELETIONS,
    WAREHOUSE_IS_ACTIVE,
)

Condition = Callable[[Cursor], None]


def _holds(cur: Cursor, sql: str, params: dict[str, Any]) -> bool:
    """``sql`` is one SELECT EXISTS: one row, one boolean."""
    cur.execute(sql, params)
    row = cur.fetchone()
    assert row is not None
    return bool(row[0])


def namespace_is_empty(namespace_id: UUID, label: str) -> Condition:
    def check(cur: Cursor) -> None:
        if _holds(cur, NAMESPACE_HAS_CHILDREN, {"id": namespace_id}):
            raise NamespaceNotEmpty(f"Namespace is not empty: {label}")
    return check


def namespace_exists(namespace_id: UUID, label: str) -> Condition:
    def check(cur: Cursor) -> None:
        if not _holds(cur, NAMESPACE_EXISTS, {"id": namespace_id}):
            raise NoSuchNamespace(f"Namespace does not exist: {label}")
    return check


def warehouse_has_no_namespaces(warehouse_id: UUID, label: str) -> Condition:
    def check(cur: Cursor) -> None:
        if _holds(cur, WAREHOUSE_HAS_NAMESPACES, {"id": warehouse_id}):
            raise WarehouseNotEmpty(f"Warehouse {label} is not empty: drop its namespaces first")
    return check


def warehouse_is_active(warehouse_id: UUID, label: str) -> Condition:
    def check(cur: Cursor) -> None:
        if not _holds(cur, WAREHOUSE_IS_ACTIVE, {"id": warehouse_id}):
            raise NoSuchWarehouse(f"Warehouse {label} does not exist or is deactivated")
    return check


def warehouse_has_no_pending_deletions(warehouse_id: UUID, label: str) -> Condition:
    def check(cur: Cursor) -> None:
        if _holds(cur, WAREHOUSE_HAS_PENDING_DELETIONS, {"id": warehouse_id}):
            raise UnfinishedDeletions(f"Warehouse {label} still has soft-deleted tables or views waiting for their "
                                      f"expiry, or purges not done yet")
    return check


def tree_unchanged(namespace_ids: list[UUID], tabular_ids: list[UUID]) -> Condition:
    """A recursive drop takes exactly the tree it read; if something was created in it meanwhile, the
    drop is run again on the new tree."""
    def check(cur: Cursor) -> None:
        if _holds(cur, TREE_GREW, {"namespaces": namespace_ids, "tabulars": tabular_ids}):
            raise ConcurrentChange("The namespace tree changed while it was being dropped")
    return check
