"""The access-history read model: every tuple the authorization derives from the log, with when it started and
ended (``ll_access_ranges``), so that who could do what on an object at any past instant is a query of the log's
own consequences, never of OpenFGA's current state.

It is the tuple projection (lakeledger/projections/authz_tuples.py) with another store: where that one writes a tuple to
OpenFGA and its mirror, this one opens a range; where that one deletes, this one closes it. One set of rules for
both, so the history cannot tell a different story from the tuples that decide. It runs under either backend (with
allowall the grants are recorded too, and their history is there the day OpenFGA is switched on).

Run by the workers; the access-history and assignments endpoints catch it up before they answer."""

from collections import defaultdict
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import Cursor

from lakeledger.authz.objects import RelationTuple
from lakeledger.projections import appended
from lakeledger.projections.authz_tuples import HIERARCHY, TO_CHILD, TO_PARENT, AuthzTuplesProjection

# the range of a tuple that holds now: its source rewritten, or its end recorded
_SET_SOURCE = ('UPDATE ll_access_ranges SET source = %s WHERE object = %s AND relation = %s AND "user" = %s'
               " AND to_seq IS NULL")
_CLOSE = ("UPDATE ll_access_ranges SET to_seq = %s, to_at = %s, to_actor = %s, to_request = %s"
          ' WHERE object = %s AND relation = %s AND "user" = %s AND to_seq IS NULL')


# where a range starts or ends: (log position, append time, actor, request id)
When = tuple[int, datetime, str, str]


class AccessHistoryProjection(AuthzTuplesProjection):
    name = "access-history"
    tables = ("ll_access_ranges",)
    # a rebuild finds a range by its unique (object, relation, user) while open: the others wait for the fill
    indexed_after_fill = tables
    table = "ll_access_ranges"
    current = "to_seq IS NULL"

    def rebuilder(self) -> "AccessHistoryRebuild":
        return AccessHistoryRebuild(self.server_id)

    def _when(self, cur: Cursor) -> When:
        event: Any = self._local.event
        found = getattr(self._local, "when", None)
        if found is None or found[0] is not event:
            found = (event, (*appended.lookup(event, cur), event.actor, event.request_id))
            self._local.when = found
        return found[1]

    def _store(self, cur: Cursor, t: RelationTuple, source: str) -> None:
        # two statements that need no answer between them (no rowcount): a rebuild runs them in pipeline mode
        cur.execute(_SET_SOURCE, (source, t.object, t.relation, t.user))
        cur.execute('INSERT INTO ll_access_ranges (object, relation, "user", source, from_seq, from_at,'
                    " from_actor, from_request) SELECT %s, %s, %s, %s, %s, %s, %s, %s WHERE NOT EXISTS ("
                    ' SELECT 1 FROM ll_access_ranges WHERE object = %s AND relation = %s AND "user" = %s'
                    " AND to_seq IS NULL)",
                    (t.object, t.relation, t.user, source, *self._when(cur), t.object, t.relation, t.user))

    def _unstore(self, cur: Cursor, t: RelationTuple) -> None:
        cur.execute(_CLOSE, (*self._when(cur), t.object, t.relation, t.user))


_COLUMNS = (
    'object, relation, "user", source, from_seq, from_at, from_actor, from_request, to_seq, to_at, to_actor, to_request'
)


class _Range:
    """One row of ``ll_access_ranges`` while a rebuild holds it in memory."""

    __slots__ = ("tuple", "source", "start", "end", "written")

    def __init__(self, t: RelationTuple, source: str, start: When):
        self.tuple, self.source, self.start, self.written = t, source, start, False
        self.end: When | None = None

    def row(self) -> tuple[Any, ...]:
        t = self.tuple
        return (t.object, t.relation, t.user, self.source, *self.start, *(self.end or (None, None, None, None)))

    def closing(self) -> tuple[Any, ...]:
        """The parameters of ``_CLOSE`` for a range that has ended."""
        assert self.end is not None
        t = self.tuple
        return (*self.end, t.object, t.relation, t.user)


class AccessHistoryRebuild(AccessHistoryProjection):
    """The access history written by a rebuild (lakeledger/projections/rebuild.py), the only writer of the empty tables
    it fills from the log's start: the same rules (the handlers are the projection's own), with the ranges that hold
    kept in memory and indexed by object and user, so a handler reads nothing back, and each batch's new ranges written
    with one COPY (the ranges an earlier batch wrote and this one ended, with one UPDATE each)."""

    reads_while_applying = False

    def __init__(self, server_id: UUID):
        super().__init__(server_id)
        self.holding: dict[RelationTuple, _Range] = {}
        self.by_object: dict[str, set[RelationTuple]] = defaultdict(set)
        self.by_user: dict[str, set[RelationTuple]] = defaultdict(set)  # also under a role member's role ("role:x")
        self.unwritten: list[_Range] = []
        self.ended: list[_Range] = []  # written while they held, ended since

    # the batch writer's interface
    def add(self, logged: Any, cur: Cursor) -> None:
        appended.apply(self, logged, cur)

    def flush(self, cur: Cursor) -> None:
        self.pending()  # what OpenFGA would be told: nothing to tell here
        if self.unwritten:
            with cur.copy(f"COPY ll_access_ranges ({_COLUMNS}) FROM STDIN") as copy:
                for r in self.unwritten:
                    copy.write_row(r.row())
                    r.written = True
            self.unwritten = []
        if self.ended:
            cur.executemany(_CLOSE, [r.closing() for r in self.ended])
            self.ended = []

    # the stored ranges, in memory
    def _store(self, cur: Cursor, t: RelationTuple, source: str) -> None:
        held = self.holding.get(t)
        if held is not None:
            if held.source != source:  # the rare case of a tuple written again by another rule: its row is rewritten
                held.source = source
                if held.written:
                    cur.execute(_SET_SOURCE, (source, t.object, t.relation, t.user))
            return
        held = self.holding[t] = _Range(t, source, self._when(cur))
        self.unwritten.append(held)
        self.by_object[t.object].add(t)
        for key in _user_keys(t.user):
            self.by_user[key].add(t)

    def _unstore(self, cur: Cursor, t: RelationTuple) -> None:
        held = self.holding.pop(t, None)
        if held is None:
            return
        held.end = self._when(cur)
        if held.written:
            self.ended.append(held)
        self.by_object[t.object].discard(t)
        for key in _user_keys(t.user):
            self.by_user[key].discard(t)

    def _naming(self, cur: Cursor, object_: str, sources: tuple[str, ...]) -> list[RelationTuple]:
        found = self.by_object.get(object_, set()) | self.by_user.get(object_, set())
        return [t for t in found if self.holding[t].source in sources
                and (t.object == object_ or t.user == object_ or t.user.startswith(object_ + "#"))]

    def _parent_links(self, cur: Cursor, child: str) -> list[RelationTuple]:
        return [t for t in self.by_object.get(child, set()) | self.by_user.get(child, set())
                if self.holding[t].source == HIERARCHY
                and ((t.object == child and t.relation in TO_PARENT) or (t.user == child and t.relation in TO_CHILD))]


def _user_keys(user_: str) -> tuple[str, ...]:
    """A user is found by itself, and a role's members (``role:x#assignee``) by their role too."""
    base, hash_, _ = user_.partition("#")
    return (user_, base) if hash_ else (user_,)
