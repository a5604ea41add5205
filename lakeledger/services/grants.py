"""Granting and revoking: the permission endpoints' commands, recorded as Grant events (lakeledger/domain/grant.py)
before anything reaches OpenFGA (the tuple projection writes them from the log before the call returns).

Which relations an object takes follows Lakekeeper's assignment types per object kind. ``assignee`` on a role is
membership, and membership has its own events and checks (lakeledger/services/roles.py: the member must exist, no loop),
so it goes there rather than becoming a second record of the same fact. Whether the caller may grant is the API's
question (lakeledger/api/routers/permissions.py), asked of OpenFGA before this runs."""

from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

from lakeledger.authz.objects import id_of, role_members, type_of, user
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.grant import Grant, grant_aggregate_id
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.role import ROLE, USER, NoSuchRole, Role
from lakeledger.domain.user import check_user_id
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.services.unit_of_work import Ledger

if TYPE_CHECKING:
    from lakeledger.services.roles import RoleService

_DATA = ("describe", "select", "modify", "manage_tags")
RELATIONS = {
    "server": ("admin", "operator"),
    "project": ("project_admin", "security_admin", "data_admin", "role_creator", "tag_creator", "describe", "select",
                "create", "modify"),
    # ``manage_maintenance`` is ours (maintenance policies), not Lakekeeper's: its grants API takes an open vocabulary
    "warehouse": ("ownership", "pass_grants", "manage_grants", "describe", "select", "create", "modify", "manage_tags",
                  "manage_maintenance"),
    "namespace": ("ownership", "pass_grants", "manage_grants", "describe", "select", "create", "modify", "manage_tags",
                  "manage_maintenance"),
    "table": ("ownership", "pass_grants", "manage_grants", *_DATA, "manage_maintenance"),
    "view": ("ownership", "pass_grants", "manage_grants", *_DATA),
    "generic-table": ("ownership", "pass_grants", "manage_grants", *_DATA),
    "role": ("assignee", "ownership"),
    "tag-definition": ("ownership", "apply"),
}


@dataclass(frozen=True)
class Assignment:
    """One assignment as Lakekeeper's JSON has it: ``{"type": <relation>, "user": <id>}`` or ``"role": <uuid>``."""

    relation: str
    kind: str  # user or role
    id: str

    @property
    def grantee(self) -> str:
        return user(self.id) if self.kind == USER else role_members(self.id)

    def json(self) -> dict[str, str]:
        return {"type": self.relation, self.kind: self.id}


def parse_assignment(raw: object, object_: str) -> Assignment:
    allowed = RELATIONS[type_of(object_)]
    if not isinstance(raw, dict) or "type" not in raw or len(raw) != 2 or not ({"user", "role"} & set(raw)):
        raise BadRequest('An assignment is {"type": <relation>, "user": <user id>} or {"type": <relation>, '
                         '"role": <role id>}')
    relation = raw["type"]
    if relation not in allowed:
        raise BadRequest(f"A {type_of(object_)} takes the assignments {', '.join(allowed)}, not {relation!r}")
    if "user" in raw:
        return Assignment(relation, USER, check_user_id(raw["user"]))
    try:
        return Assignment(relation, ROLE, str(UUID(str(raw["role"]))))
    except ValueError:
        raise BadRequest(f"A role id is a UUID, not {raw['role']!r}") from None


def from_tuple(grantee: str, relation: str) -> Assignment | None:
    """The assignment a tuple's grantee makes, if it is one (hierarchy tuples are not)."""
    kind = type_of(grantee)
    if kind == USER:
        return Assignment(relation, USER, id_of(grantee))
    if kind == ROLE and grantee.endswith("#assignee"):
        return Assignment(relation, ROLE, id_of(grantee))
    return None


class GrantService:
    def __init__(self, ledger: Ledger, roles: "RoleService", access_history: ProjectionDriver):
        self.ledger = ledger
        self.access_history = access_history
        self.roles = roles  # membership (``assignee`` on a role)

    def update(self, object_: str, writes: list[Assignment], deletes: list[Assignment], by: Provenance) -> None:
        """All or nothing: the grants and revokes of one request are one append."""
        both = {(a.relation, a.grantee) for a in writes} & {(a.relation, a.grantee) for a in deletes}
        if both:
            raise BadRequest(f"An assignment cannot be both written and deleted: {sorted(both)[0]}")
        self._check_roles_exist([a for a in [*writes, *deletes] if a.kind == ROLE])
        if type_of(object_) == "role":
            self._memberships(object_, [a for a in writes if a.relation == "assignee"],
                              [a for a in deletes if a.relation == "assignee"], by)
            writes = [a for a in writes if a.relation != "assignee"]
            deletes = [a for a in deletes if a.relation != "assignee"]
        if not writes and not deletes:
            return

        def command() -> None:
            changed = []
            for a in deletes:
                known = self.ledger.log.get(Grant, grant_aggregate_id(object_, a.relation, a.grantee))
                implicit = known is None and self._created_with(object_, a)
                changed.append(Grant.remove(known, object_, a.relation, a.grantee, by, implicit=implicit))
            for a in writes:
                known = self.ledger.log.get(Grant, grant_aggregate_id(object_, a.relation, a.grantee))
                changed.append(Grant.add(known, object_, a.relation, a.grantee, by))
            changed = [g for g in changed if g is not None]
            if changed:
                self.ledger.append(*changed)

        self.ledger.retrying(command)

    def _memberships(self, role_object: str, adds: list[Assignment], removes: list[Assignment],
                     by: Provenance) -> None:
        role_id = UUID(id_of(role_object))
        found = self.ledger.log.get(Role, role_id)
        if found is None or found.deleted:
            raise NoSuchRole(f"Role does not exist: {role_id}")
        if adds:
            self.roles.add_members(found.project_id, role_id, [(a.kind, a.id) for a in adds], by)
        for a in removes:
            self.roles.remove_member(found.project_id, role_id, (a.kind, a.id), by)

    def _check_roles_exist(self, assignments: list[Assignment]) -> None:
        for a in assignments:
            found = self.ledger.log.get(Role, UUID(a.id))
            if found is None or found.deleted:
                raise NoSuchRole(f"Role does not exist: {a.id}")

    def _created_with(self, object_: str, a: Assignment) -> bool:
        """Whether ``a`` is held without a grant: a creator's ownership, as the access read model has it now."""
        self.access_history.caught_up()
        with self.ledger.queries.pool.connection() as conn:
            row = conn.execute('SELECT EXISTS (SELECT 1 FROM ll_access_ranges WHERE object = %s AND relation = %s'
                               ' AND "user" = %s AND source = \'creation\' AND to_seq IS NULL)',
                               (object_, a.relation, a.grantee)).fetchone()
        assert row is not None  # EXISTS answers one row
        return bool(row[0])
