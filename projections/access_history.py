"""The access-history read model: every tuple the authorization derives from the log, with when it started and
ended (``ll_access_ranges``), so that who could do what on an object at any past instant is a query of the log's
own consequences, never of OpenFGA's current state.

It is the tuple projection (projections/authz_tuples.py) with another store: where that one writes a tuple to
OpenFGA and its mirror, this one opens a range; where that one deletes, this one closes it. One set of rules for
both, so the history cannot tell a different story from the tuples that decide. It runs under either backend (with
allowall the grants are recorded too, and their history is there the day OpenFGA is switched on).

Run by the workers; the access-history and assignments endpoints catch it up before they answer."""

from typing import Any

from psycopg import Cursor

from lakeledger.authz.objects import RelationTuple
from lakeledger.projections.authz_tuples import AuthzTuplesProjection


class AccessHistoryProjection(AuthzTuplesProjection):
    name = "access-history"
    tables = ("ll_access_ranges",)
    table = "ll_access_ranges"
    current = "to_seq IS NULL"

    def _when(self, cur: Cursor) -> tuple:
        event: Any = self._local.event
        found = getattr(self._local, "when", None)
        if found is None or found[0] is not event:
            cur.execute("SELECT notification_id, appended_at FROM lakeledger_events"
                        " WHERE originator_id = %s AND originator_version = %s",
                        (event.originator_id, event.originator_version))
            sequence, appended_at = cur.fetchone()
            found = (event, (sequence, appended_at, event.actor, event.request_id))
            self._local.when = found
        return found[1]

    def _store(self, cur: Cursor, t: RelationTuple, source: str) -> None:
        # two statements that need no answer between them (no rowcount): a rebuild runs them in pipeline mode
        cur.execute('UPDATE ll_access_ranges SET source = %s WHERE object = %s AND relation = %s AND "user" = %s'
                    " AND to_seq IS NULL", (source, t.object, t.relation, t.user))
        cur.execute('INSERT INTO ll_access_ranges (object, relation, "user", source, from_seq, from_at,'
                    " from_actor, from_request) SELECT %s, %s, %s, %s, %s, %s, %s, %s WHERE NOT EXISTS ("
                    ' SELECT 1 FROM ll_access_ranges WHERE object = %s AND relation = %s AND "user" = %s'
                    " AND to_seq IS NULL)",
                    (t.object, t.relation, t.user, source, *self._when(cur), t.object, t.relation, t.user))

    def _unstore(self, cur: Cursor, t: RelationTuple) -> None:
        cur.execute("UPDATE ll_access_ranges SET to_seq = %s, to_at = %s, to_actor = %s, to_request = %s"
                    ' WHERE object = %s AND relation = %s AND "user" = %s AND to_seq IS NULL',
                    (*self._when(cur), t.object, t.relation, t.user))
