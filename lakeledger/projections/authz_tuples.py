"""OpenFGA's tuples as a projection of the log: the hierarchy (project → server, warehouse → project, namespace →
parent namespace or warehouse, table/view → namespace), what a principal creates it owns (Lakekeeper's rule: a
project's creator is its ``project_admin``, any other object's creator holds ``ownership``; nobody owns what the
system or an anonymous caller made), role membership (``user:<id>`` or ``role:<id>#assignee`` as ``assignee`` of
the role), grants (lakeledger/domain/grant.py), and managed access on a warehouse or namespace (the wildcard tuples
``user:*`` and ``role:*`` as its ``managed_access``, lakeledger/authz/model.py).

A table or view renamed into another namespace moves (the old parent's tuples go, the new one's come), and so does
a namespace moved under another parent (those below it keep theirs); a soft
drop keeps everything, so an undrop finds its rights where they were (an undrop into another namespace moves
it); a final deletion (hard drop, expiry, warehouse deletion, role deletion) removes every tuple naming the
object that its creation or the hierarchy wrote. Tuples written by grants stay: a grant's life is its own events
(revoke it to remove it); on an object that is gone it is inert, nothing can reach the object through it.

Every tuple written is mirrored in ``ll_authz_tuples`` in the transaction that moves the projection's position,
so the projection knows which tuples name an object when it goes, and which parent a table had before it moved,
from its own state rather than from OpenFGA. OpenFGA is written before that transaction commits, with
idempotent writes: a crash in between replays the batch, which changes nothing. The batch's changes are netted
(the last change to a tuple wins) so OpenFGA never sees a tuple written and deleted in one request.

OpenFGA is not transactional with Postgres, so the projection cannot run inside an append (an append refused
after OpenFGA was written would leave a phantom tuple). Read-your-writes comes instead from ``catch_up``: after
an append that changes tuples, the request that made it advances this projection up to its own event before it
answers (lakeledger/services/unit_of_work.py ``after_append``)."""

import threading
from functools import singledispatchmethod
from typing import Any
from uuid import UUID

from eventsourcing.utils import get_topic
from psycopg import Cursor

from lakeledger.authz.objects import RelationTuple, hierarchy, obj, role_members, user
from lakeledger.domain.generic_table import GenericTable
from lakeledger.domain.grant import Grant
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.project import Project
from lakeledger.domain.provenance import ANONYMOUS, SYSTEM
from lakeledger.domain.role import ROLE, Role
from lakeledger.domain.table import Table
from lakeledger.domain.tabular import GENERIC_TABLE, TABLE, VIEW, Tabular
from lakeledger.domain.tag import TagDefinition
from lakeledger.domain.view import View
from lakeledger.domain.warehouse import Warehouse

EVENTS = (Project.Created, Project.Deleted, Warehouse.Created, Warehouse.Deleted,
          Namespace.Created, Namespace.Moved, Namespace.Dropped, Namespace.Undropped, Namespace.Expired,
          Table.Created, Table.Registered, View.Created, View.Registered, GenericTable.Created,
          Tabular.Renamed, Tabular.Dropped, Tabular.Undropped, Tabular.Expired,
          Role.Created, Role.MemberAdded, Role.MemberRemoved, Role.Deleted,
          Grant.Added, Grant.Removed, TagDefinition.Created, TagDefinition.Deleted,
          Warehouse.ManagedAccessSet, Namespace.ManagedAccessSet)


def _with_subclasses(classes) -> list[type]:
    # tables and views record renames and drops under classes derived from Tabular's, each with its own topic
    found: list[type] = []
    pending = list(classes)
    while pending:
        cls = pending.pop(0)
        if cls not in found:
            subclasses = cls.__subclasses__()
            # an event class declared in an aggregate's body (Table.Unregistered) is redefined by eventsourcing under
            # the same name: the redefinition is the one recorded, and a topic names one class
            if not any(sub.__qualname__ == cls.__qualname__ and sub.__module__ == cls.__module__
                       for sub in subclasses):
                found.append(cls)
            pending.extend(subclasses)
    return found


TOPICS = tuple(get_topic(cls) for cls in _with_subclasses(EVENTS))
RELEVANT = frozenset(_with_subclasses(EVENTS))

HIERARCHY, CREATION, MEMBERSHIP, GRANT = "hierarchy", "creation", "membership", "grant"
MANAGED_ACCESS = "managed-access"  # the switch's wildcard tuples: they go with the object, as its hierarchy does
FORGOTTEN = (HIERARCHY, CREATION, MEMBERSHIP, MANAGED_ACCESS)
# the hierarchy's relations between a child and its parent: on the child naming the parent, and the other way
TO_PARENT = ("parent", "project", "server")
TO_CHILD = ("child", "warehouse", "namespace")


def tabular(kind: str, id_: UUID) -> str:
    """The object of a table, view or generic table (``kind`` as the events record it; any other word, which only a
    damaged log could hold, names a view, as it always has)."""
    return obj(kind if kind in (TABLE, GENERIC_TABLE) else VIEW, id_)


class AuthzTuplesProjection:
    name = "authz-tuples"
    # the mirror only: the store id row is kept across a rebuild, which empties the store it names
    tables = ("ll_authz_tuples",)
    topics = TOPICS

    # its handlers read the tuples they replace (``_stored``): a rebuild applies it outside pipeline mode
    reads_while_applying = True

    def __init__(self, server_id: UUID):
        self.server_id = server_id
        self.server = obj("server", server_id)
        self._local = threading.local()

    # ---- the batch's pending changes, per thread (the worker and request threads share this object) ----------

    def begin(self) -> None:
        self._local.changes = {}

    def pending(self) -> tuple[list[RelationTuple], list[RelationTuple]]:
        changes: dict[RelationTuple, bool] = getattr(self._local, "changes", {})
        self._local.changes = {}
        return [t for t, w in changes.items() if w], [t for t, w in changes.items() if not w]

    def _changes(self) -> dict:
        if not hasattr(self._local, "changes"):
            self._local.changes = {}
        return self._local.changes

    # ---- the stored tuples: the mirror here; with validity ranges in the access-history read model ------------

    table = "ll_authz_tuples"
    current = "true"

    def _store(self, cur: Cursor, t: RelationTuple, source: str) -> None:
        cur.execute('INSERT INTO ll_authz_tuples (object, relation, "user", source) VALUES (%s, %s, %s, %s)'
                    ' ON CONFLICT (object, relation, "user") DO UPDATE SET source = EXCLUDED.source',
                    (t.object, t.relation, t.user, source))

    def _unstore(self, cur: Cursor, t: RelationTuple) -> None:
        cur.execute('DELETE FROM ll_authz_tuples WHERE object = %s AND relation = %s AND "user" = %s',
                    (t.object, t.relation, t.user))

    def _stored(self, cur: Cursor, where: str, params: tuple) -> list[RelationTuple]:
        cur.execute(f'SELECT object, relation, "user" FROM {self.table} WHERE {self.current} AND ({where})', params)
        return [RelationTuple(u, r, o) for o, r, u in cur.fetchall()]

    def _write(self, cur: Cursor, tuples: list[RelationTuple], source: str) -> None:
        changes = self._changes()
        for t in tuples:
            self._store(cur, t, source)
            changes.pop(t, None)
            changes[t] = True

    def _delete(self, cur: Cursor, tuples: list[RelationTuple]) -> None:
        changes = self._changes()
        for t in tuples:
            self._unstore(cur, t)
            changes.pop(t, None)
            changes[t] = False

    def _forget(self, cur: Cursor, object_: str, sources: tuple[str, ...] = FORGOTTEN) -> None:
        """Every tuple naming ``object_`` (as object, as user, or as a role's members) that ``sources`` wrote."""
        self._delete(cur, self._naming(cur, object_, sources))

    def _detach(self, cur: Cursor, child: str) -> None:
        """The links between ``child`` and whatever parent it has now."""
        self._delete(cur, self._parent_links(cur, child))

    def _naming(self, cur: Cursor, object_: str, sources: tuple[str, ...]) -> list[RelationTuple]:
        like = object_.replace("%", r"\%").replace("_", r"\_") + "#%"
        return self._stored(cur, 'source = ANY(%s) AND (object = %s OR "user" = %s OR "user" LIKE %s)',
                            (list(sources), object_, object_, like))

    def _parent_links(self, cur: Cursor, child: str) -> list[RelationTuple]:
        return self._stored(cur, 'source = %s AND ((object = %s AND relation = ANY(%s)) OR ("user" = %s AND'
                                 " relation = ANY(%s)))", (HIERARCHY, child, list(TO_PARENT), child, list(TO_CHILD)))

    def _place(self, cur: Cursor, child: str, parent: str, new: bool = False) -> None:
        """``new``: ``child`` was created by this event (its aggregate's first, so its id was never seen before):
        it has no links to detach, and none are read back."""
        if not new:
            self._detach(cur, child)
        self._write(cur, hierarchy(child, parent), HIERARCHY)

    def _owned(self, cur: Cursor, actor: str, relation: str, object_: str) -> None:
        # an empty actor (recorded by no version, but a log may hold anything) names no user: it owns nothing
        if actor not in (ANONYMOUS, SYSTEM, ""):
            self._write(cur, [RelationTuple(user(actor), relation, object_)], CREATION)

    # ---- events ----------------------------------------------------------------------------------------------

    def apply(self, event: Any, cur: Cursor) -> None:
        self._local.event = event
        self._apply(event, cur)

    @singledispatchmethod
    def _apply(self, event: Any, cur: Cursor) -> None:
        """Events that change no tuple."""

    @_apply.register
    def _(self, e: Project.Created, cur: Cursor) -> None:
        project = obj("project", e.originator_id)
        self._place(cur, project, self.server, new=True)
        self._owned(cur, e.actor, "project_admin", project)

    @_apply.register
    def _(self, e: Project.Deleted, cur: Cursor) -> None:
        self._forget(cur, obj("project", e.originator_id))

    @_apply.register
    def _(self, e: Warehouse.Created, cur: Cursor) -> None:
        warehouse = obj("warehouse", e.originator_id)
        self._place(cur, warehouse, obj("project", e.project_id), new=True)
        self._owned(cur, e.actor, "ownership", warehouse)

    @_apply.register
    def _(self, e: Warehouse.Deleted, cur: Cursor) -> None:
        self._forget(cur, obj("warehouse", e.originator_id))

    @_apply.register
    def _(self, e: Namespace.Created, cur: Cursor) -> None:
        namespace = obj("namespace", e.originator_id)
        self._place(cur, namespace, _namespace_parent(e), new=True)
        self._owned(cur, e.actor, "ownership", namespace)

    @_apply.register
    def _(self, e: Namespace.Moved, cur: Cursor) -> None:
        # only the namespace a move named changes parent; those below it move with it, their tuples unchanged
        if e.to_parent_id != e.from_parent_id:
            self._place(cur, obj("namespace", e.originator_id), _parent(e.to_parent_id, e.warehouse_id))

    @_apply.register
    def _(self, e: Namespace.Dropped, cur: Cursor) -> None:
        if e.expires_at is None:
            self._forget(cur, obj("namespace", e.originator_id))

    @_apply.register
    def _(self, e: Namespace.Undropped, cur: Cursor) -> None:
        self._place(cur, obj("namespace", e.originator_id), _namespace_parent(e))

    @_apply.register
    def _(self, e: Namespace.Expired, cur: Cursor) -> None:
        self._forget(cur, obj("namespace", e.originator_id))

    @_apply.register
    def _(self, e: Table.Created, cur: Cursor) -> None:
        self._created(cur, "table", e, new=True)

    @_apply.register
    def _(self, e: View.Created, cur: Cursor) -> None:
        self._created(cur, "view", e, new=True)

    @_apply.register
    def _(self, e: Table.Registered, cur: Cursor) -> None:
        self._created(cur, "table", e)

    @_apply.register
    def _(self, e: View.Registered, cur: Cursor) -> None:
        self._created(cur, "view", e)

    @_apply.register
    def _(self, e: GenericTable.Created, cur: Cursor) -> None:
        self._created(cur, GENERIC_TABLE, e, new=True)

    def _created(self, cur: Cursor, kind: str, e: Any, new: bool = False) -> None:
        """A created tabular, or one registered (then perhaps a dropped one registered back, whose links may
        remain)."""
        object_ = tabular(kind, e.originator_id)
        self._place(cur, object_, obj("namespace", e.namespace_id), new)
        self._owned(cur, e.actor, "ownership", object_)

    @_apply.register
    def _(self, e: Tabular.Renamed, cur: Cursor) -> None:
        if e.to_namespace_id != e.from_namespace_id:
            self._place(cur, tabular(e.typ, e.originator_id), obj("namespace", e.to_namespace_id))

    @_apply.register
    def _(self, e: Tabular.Dropped, cur: Cursor) -> None:
        if e.expires_at is None:
            self._forget(cur, tabular(e.typ, e.originator_id))

    @_apply.register
    def _(self, e: Tabular.Undropped, cur: Cursor) -> None:
        self._place(cur, tabular(e.typ, e.originator_id), obj("namespace", e.namespace_id))

    @_apply.register
    def _(self, e: Tabular.Expired, cur: Cursor) -> None:
        self._forget(cur, tabular(e.typ, e.originator_id))

    @_apply.register
    def _(self, e: Role.Created, cur: Cursor) -> None:
        role = obj("role", e.originator_id)
        self._write(cur, [RelationTuple(obj("project", e.project_id), "project", role)], HIERARCHY)
        self._owned(cur, e.actor, "ownership", role)

    @_apply.register
    def _(self, e: Role.MemberAdded, cur: Cursor) -> None:
        self._write(cur, _membership(e), MEMBERSHIP)

    @_apply.register
    def _(self, e: Role.MemberRemoved, cur: Cursor) -> None:
        self._delete(cur, _membership(e))

    @_apply.register
    def _(self, e: Role.Deleted, cur: Cursor) -> None:
        self._forget(cur, obj("role", e.originator_id))

    @_apply.register
    def _(self, e: TagDefinition.Created, cur: Cursor) -> None:
        definition = obj("tag-definition", e.originator_id)
        self._write(cur, [RelationTuple(obj("project", e.project_id), "project", definition)], HIERARCHY)
        self._owned(cur, e.actor, "ownership", definition)

    @_apply.register
    def _(self, e: TagDefinition.Deleted, cur: Cursor) -> None:
        self._forget(cur, obj("tag-definition", e.originator_id))

    @_apply.register
    def _(self, e: Warehouse.ManagedAccessSet, cur: Cursor) -> None:
        self._managed_access(cur, obj("warehouse", e.originator_id), e.managed_access)

    @_apply.register
    def _(self, e: Namespace.ManagedAccessSet, cur: Cursor) -> None:
        self._managed_access(cur, obj("namespace", e.originator_id), e.managed_access)

    def _managed_access(self, cur: Cursor, object_: str, on: bool) -> None:
        tuples = managed_access_tuples(object_)
        if on:
            self._write(cur, tuples, MANAGED_ACCESS)
        else:
            self._delete(cur, tuples)

    @_apply.register
    def _(self, e: Grant.Added, cur: Cursor) -> None:
        self._write(cur, [RelationTuple(e.grantee, e.relation, e.object)], GRANT)

    @_apply.register
    def _(self, e: Grant.Removed, cur: Cursor) -> None:
        self._delete(cur, [RelationTuple(e.grantee, e.relation, e.object)])


def managed_access_tuples(object_: str) -> list[RelationTuple]:
    """Managed access on a warehouse or namespace, as Lakekeeper writes it: wildcards, so that a check may ask
    ``user:*`` whether an object is under it (lakeledger/authz/model.py)."""
    return [RelationTuple(f"{kind}:*", "managed_access", object_) for kind in ("user", "role")]


def _namespace_parent(e: Any) -> str:
    return _parent(e.parent_id, e.warehouse_id)


def _parent(parent_id: UUID | None, warehouse_id: UUID) -> str:
    """A namespace's parent object: the namespace above it, or its warehouse at the root."""
    return obj("namespace", parent_id) if parent_id is not None else obj("warehouse", warehouse_id)


def _membership(e: Any) -> list[RelationTuple]:
    """The membership's tuple; none for an empty member id, which names nobody in OpenFGA."""
    if not e.member_id:
        return []
    member = role_members(e.member_id) if e.member_type == ROLE else user(e.member_id)
    return [RelationTuple(member, "assignee", obj("role", e.originator_id))]
