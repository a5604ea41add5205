"""Conditions a command needs to still hold when its events are appended.

They run inside the append transaction, under the events-table lock that orders every append and
after the read model has absorbed every earlier append, so a check made there cannot be raced: a
namespace cannot lose its last child check to a table created at the same moment, nor a table be
created in a namespace being dropped. A failed condition raises, and nothing is appended."""

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from psycopg import Cursor

from lakeledger.domain.errors import (
    NamespaceNotEmpty,
    NoSuchNamespace,
    NoSuchProject,
    NoSuchWarehouse,
    ProjectNotEmpty,
    UnfinishedDeletions,
    WarehouseNotEmpty,
)
from lakeledger.domain.names import dotted
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.projections.catalog_queries import (
    MOVED_TREE_GREW,
    NAMESPACE_HAS_CHILDREN,
    NAMESPACE_PATH,
    OBJECT_EXISTS,
    PROJECT_GREW,
    PROJECT_HAS_WAREHOUSES,
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


def namespace_exists(namespace_id: UUID, path: Sequence[str]) -> Condition:
    """The namespace is live, and still at ``path``, the path the command read and records (a new table's
    namespace, a new child's parent): a move appended since then is a lost race, and the command runs again on the
    tree as it is now (where the path it was asked for may lead nowhere: 404)."""
    def check(cur: Cursor) -> None:
        cur.execute(NAMESPACE_PATH, {"id": namespace_id})
        row = cur.fetchone()
        if row is None:
            raise NoSuchNamespace(f"Namespace does not exist: {dotted(list(path))}")
        if list(row[0]) != list(path):
            raise ConcurrentChange(f"Namespace {dotted(list(path))} moved to {dotted(row[0])} meanwhile")
    return check


def warehouse_has_no_namespaces(warehouse_id: UUID, label: str) -> Condition:
    def check(cur: Cursor) -> None:
        if _holds(cur, WAREHOUSE_HAS_NAMESPACES, {"id": warehouse_id}):
            raise WarehouseNotEmpty(f"Warehouse {label} is not empty: drop its namespaces first")
    return check


def project_has_no_warehouses(project_id: UUID, label: str) -> Condition:
    def check(cur: Cursor) -> None:
        if _holds(cur, PROJECT_HAS_WAREHOUSES, {"id": project_id}):
            raise ProjectNotEmpty(f"Project {label} is not empty: delete its warehouses first")
    return check


def project_holds_only(project_id: UUID, roles: list[UUID], tag_definitions: list[UUID]) -> Condition:
    """A project's deletion takes exactly the roles and tag definitions it read; one created meanwhile runs it
    again."""
    def check(cur: Cursor) -> None:
        if _holds(cur, PROJECT_GREW, {"id": project_id, "roles": roles, "tags": tag_definitions}):
            raise ConcurrentChange("The project gained a role or tag definition while it was being deleted")
    return check


def project_exists(project_id: UUID) -> Condition:
    """What a project holds is created only while it exists: a deletion at the same moment comes first or after."""
    def check(cur: Cursor) -> None:
        if not _holds(cur, OBJECT_EXISTS["project"], {"id": project_id}):
            raise NoSuchProject(f"Project does not exist: {project_id}")
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


def moved_tree_unchanged(warehouse_id: UUID, namespace_ids: list[UUID], tabular_ids: list[UUID]) -> Condition:
    """A move carries exactly the tree it read, soft-dropped parts included; if something entered it meanwhile, the
    move is run again on the new tree."""
    def check(cur: Cursor) -> None:
        if _holds(cur, MOVED_TREE_GREW, {"warehouse_id": warehouse_id, "namespaces": namespace_ids,
                                         "tabulars": tabular_ids}):
            raise ConcurrentChange("The namespace tree changed while it was being moved")
    return check
