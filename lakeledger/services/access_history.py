"""Who held which right on an object at an instant, and through what: derived from the access-history read model
(lakeledger/projections/access_history.py), the log's own consequences, never from OpenFGA's current state.

The instant resolves to a log position (the prefix time travel shows). At that position: the object's ancestors
(namespace, warehouse, project, server) as the hierarchy ranges had them; every grant or creator ownership then
valid on the object or an ancestor; each role grantee expanded to the users then holding it, through nested roles.
What a relation gives on the object follows the authorization model (lakeledger/authz/model.py): ownership implies the
object's privileges, modify ⊃ select ⊃ describe, create ⊃ describe, privileges on an ancestor flow down, a
project's data_admin modifies and its security_admin manages grants below it, a server operator is every
project's admin; below a warehouse or namespace under managed access, owning an object gives no right to grant."""

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg_pool import ConnectionPool

from lakeledger.authz.objects import id_of, type_of
from lakeledger.eventstore.append_time import FutureInstant
from lakeledger.eventstore.log import EventLog
from lakeledger.projections.driver import ProjectionDriver

HIERARCHY_UP = {"parent": "object", "project": "object", "server": "object"}  # relation naming a child's parent

_SAME = {
    "ownership": {"manage_grants", "describe", "select", "modify", "create"},
    "modify": {"select"}, "select": {"describe"}, "create": {"describe"},
    "project_admin": {"security_admin", "data_admin", "modify", "role_creator"},
    "security_admin": {"role_creator", "describe"}, "data_admin": {"create", "describe"},
}
_DOWN = {  # (parent type) -> relation on the parent -> relations it gives the child
    "server": {"operator": {"project_admin"}},
    "project": {"describe": {"describe"}, "select": {"select"}, "create": {"create"}, "modify": {"modify"},
                "data_admin": {"modify"}, "security_admin": {"manage_grants"}},
    "warehouse": {r: {r} for r in ("manage_grants", "describe", "select", "create", "modify")},
    "namespace": {r: {r} for r in ("manage_grants", "describe", "select", "create", "modify")},
}
PRIVILEGES = {
    "table": ("ownership", "pass_grants", "manage_grants", "describe", "select", "modify"),
    "view": ("ownership", "pass_grants", "manage_grants", "describe", "select", "modify"),
    "generic-table": ("ownership", "pass_grants", "manage_grants", "describe", "select", "modify"),
    "namespace": ("ownership", "pass_grants", "manage_grants", "describe", "select", "create", "modify"),
    "warehouse": ("ownership", "pass_grants", "manage_grants", "describe", "select", "create", "modify"),
}


def closure(relations: set[str]) -> set[str]:
    found, pending = set(relations), list(relations)
    while pending:
        for implied in _SAME.get(pending.pop(), ()):
            if implied not in found:
                found.add(implied)
                pending.append(implied)
    return found


def rights_on(target: str, chain: list[str], relation: str, on: str, managed: frozenset[str] = frozenset()) -> set[str]:
    """What ``relation`` held on ``on`` (``target`` itself or one of its ancestors in ``chain``, nearest first)
    gives on ``target``. ``managed``: the objects of the chain under managed access then; owning an object below
    one of them gives no right to grant (the model's ``ownership but not managed_access_inheritance from parent``)."""
    held = closure({relation})
    if relation == "ownership" and managed & set(chain[chain.index(on) + 1:]):
        held.discard("manage_grants")
    # from ``on`` down to the target's parent: each hands on what it holds to the one below
    for parent in reversed(chain[1:chain.index(on) + 1]):
        passed: set[str] = set()
        for r in held:
            passed |= _DOWN.get(type_of(parent), {}).get(r, set())
        held = closure(passed)
    return held & set(PRIVILEGES.get(type_of(target), held))


@dataclass(frozen=True)
class Range:
    object: str
    relation: str
    user: str
    source: str
    from_seq: int
    from_at: datetime
    from_actor: str


def _valid(conn: Connection, position: int, where: str, params: tuple[object, ...]) -> list[Range]:
    rows = conn.execute(
        'SELECT object, relation, "user", source, from_seq, from_at, from_actor FROM ll_access_ranges'
        f" WHERE from_seq <= %s AND (to_seq IS NULL OR to_seq > %s) AND ({where}) ORDER BY from_seq, id",
        (position, position, *params)).fetchall()
    return [Range(*r) for r in rows]


def position_of(log: EventLog, at: datetime | None) -> int:
    if at is None:
        return log.head()
    try:
        return log.position_at(at)
    except FutureInstant:
        return log.head()


class HolderHistory:
    """Who held which right on an object at an instant: the read model caught up with the log first, so that the
    answer includes every change committed before the question."""

    def __init__(self, log: EventLog, pool: ConnectionPool, read_model: ProjectionDriver):
        self.log = log
        self.pool = pool
        self.read_model = read_model

    def holders_at(self, object_: str, at: datetime | None) -> tuple[int, dict[str, Any]]:
        """The log position ``at`` resolves to (None: the head), and ``holders`` there."""
        self.read_model.caught_up()
        position = position_of(self.log, at)
        with self.pool.connection() as conn:
            return position, holders(conn, object_, position)


def holders(conn: Connection, object_: str, position: int) -> dict[str, Any]:
    # the way up, as it was then
    chain = [object_]
    while True:
        up = _valid(conn, position, "object = %s AND relation = ANY(%s) AND source = 'hierarchy'",
                    (chain[-1], list(HIERARCHY_UP)))
        parents = [r.user for r in up if type_of(r.user) in ("namespace", "warehouse", "project", "server")]
        if not parents or parents[0] in chain:
            break
        chain.append(parents[0])
    grants = _valid(conn, position, "object = ANY(%s) AND source IN ('grant', 'creation')", (chain,))
    managed = frozenset(r.object for r in _valid(conn, position, "object = ANY(%s) AND relation = 'managed_access'",
                                                  (chain,)))
    by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
    rights: dict[str, set[str]] = defaultdict(set)
    for g in grants:
        given = rights_on(object_, chain, g.relation, g.object, managed)
        if not given:
            continue
        through = {"relation": g.relation, "on": {"type": type_of(g.object), "id": id_of(g.object)},
                   "source": g.source, "granted-by": g.from_actor, "granted-at": g.from_at.isoformat(),
                   "sequence": g.from_seq}
        for member, roles in _members(conn, position, g.user):
            by_user[member].append({**through, "roles": roles})
            rights[member] |= given
    return {"chain": [{"type": type_of(o), "id": id_of(o)} for o in chain],
            "holders": [{"user": u, "rights": sorted(rights[u]), "through": by_user[u]} for u in sorted(by_user)]}


def _members(conn: Connection, position: int, grantee: str,
             roles: tuple[str, ...] = ()) -> list[tuple[str, list[str]]]:
    """The users a grantee stood for then: itself if a user; a role's members (and its owner), through nesting."""
    if type_of(grantee) == "user":
        return [(id_of(grantee), [id_of(r) for r in roles])]
    role = grantee.partition("#")[0]
    if role in roles:
        return []
    found = []
    for r in _valid(conn, position, "object = %s AND relation IN ('assignee', 'ownership')", (role,)):
        found += _members(conn, position, r.user, (*roles, role))
    return found
