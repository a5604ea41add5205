"""Roles of a project and their members (users and other roles).

Checks that involve more than the role itself run inside the append, under the lock that orders every append,
against the users-roles read model as every earlier append left it (lakeledger/services/unit_of_work.py): a member must
exist when it is added, a role must not come to contain itself through nesting, and a deletion must take along
every membership that exists at that moment. Two requests cannot race past them (two roles added to each other
at once: the second append sees the first and is refused)."""

from uuid import UUID, uuid4

from psycopg import Cursor

from lakeledger.domain.errors import AlreadyExists, BadRequest, NoSuchProject
from lakeledger.domain.project import Project
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.role import ROLE, ROLE_IDENT, USER, NoSuchRole, Role
from lakeledger.domain.user import NoSuchUser
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.users_roles_queries import contains, role_in_project, roles_holding, user_exists
from lakeledger.services.conditions import Condition, project_exists
from lakeledger.services.unit_of_work import Ledger


class RoleService:
    def __init__(self, ledger: Ledger, view: ProjectionDriver):
        self.ledger = ledger
        self.view = view  # the users-roles read model, applied inside these appends

    def create(self, project_id: UUID, name: object, description: object, provider_id: object,
               source_id: object, by: Provenance) -> UUID:
        role_id = uuid4()
        role = Role.create(role_id, project_id, name, description, provider_id, source_id, by)  # type: ignore[arg-type]

        def command() -> UUID:
            if self.ledger.log.get(Project, project_id) is None:
                raise NoSuchProject(f"Project does not exist: {project_id}")
            fresh = Role.create(role_id, project_id, role.name, role.description, role.provider_id,
                                role.source_id, by)
            claim = self.ledger.claim(ROLE_IDENT, project_id, fresh.ident, role_id, "Role with ident", by)
            self.ledger.append(claim, fresh, conditions=[project_exists(project_id)], views=(self.view,))
            return role_id

        return self.ledger.retrying(command, AlreadyExists, f"Role with ident {role.ident} already exists")

    def role(self, project_id: UUID, role_id: UUID) -> Role:
        role = self.ledger.log.get(Role, role_id)
        if role is None or role.deleted or role.project_id != project_id:
            raise NoSuchRole(f"Role does not exist in project {project_id}: {role_id}")
        return role

    def update(self, project_id: UUID, role_id: UUID, name: object, description: object, by: Provenance) -> None:
        def command() -> None:
            role = self.role(project_id, role_id)
            role.update(name, description, by)  # type: ignore[arg-type]
            self.ledger.append(role, views=(self.view,))

        self.ledger.retrying(command)

    def change_source_system(self, project_id: UUID, role_id: UUID, provider_id: object, source_id: object,
                             by: Provenance) -> None:
        """A new ``provider~source`` ident, unique in the project as a new role's is: the old one is released
        and the new one claimed in the same append (409 when another role holds it)."""
        def command() -> None:
            role = self.role(project_id, role_id)
            old = role.ident
            if not role.change_source_system(provider_id, source_id, by):
                return
            released = self.ledger.release(ROLE_IDENT, project_id, old, role_id, by)
            claimed = self.ledger.claim(ROLE_IDENT, project_id, role.ident, role_id, "Role with ident", by)
            self.ledger.append(role, released, claimed, views=(self.view,))

        self.ledger.retrying(command, AlreadyExists, "Another role of the project has this ident")

    def delete(self, project_id: UUID, role_id: UUID, by: Provenance) -> None:
        """The role, its members' memberships and its own place in other roles, in one append."""
        def command() -> None:
            role = self.role(project_id, role_id)
            holding = self._roles_holding(ROLE, str(role_id))
            parents = [p for p in (self.ledger.log.get(Role, r) for r in sorted(holding)) if p is not None]
            for parent in parents:
                parent.remove_member(ROLE, str(role_id), by)
            role.delete(by)
            claim = self.ledger.release(ROLE_IDENT, project_id, role.ident, role_id, by)
            self.ledger.append(*parents, role, claim, conditions=[_still_held(ROLE, str(role_id), holding)],
                               views=(self.view,))

        self.ledger.retrying(command)

    def add_members(self, project_id: UUID, role_id: UUID, members: list[tuple[str, str]],
                    by: Provenance) -> None:
        """All or nothing; members already present are accepted and not recorded again."""
        wanted = list(dict.fromkeys(members))

        def command() -> None:
            role = self.role(project_id, role_id)
            added = [(t, m) for t, m in wanted if role.add_member(t, m, by)]
            if added:
                self.ledger.append(role, conditions=[_may_join(role_id, project_id, added)], views=(self.view,))

        self.ledger.retrying(command)

    def remove_member(self, project_id: UUID, role_id: UUID, member: tuple[str, str], by: Provenance) -> None:
        def command() -> None:
            role = self.role(project_id, role_id)
            if role.remove_member(*member, by):
                self.ledger.append(role, views=(self.view,))

        self.ledger.retrying(command)

    def _roles_holding(self, member_type: str, member_id: str) -> set[UUID]:
        with self.ledger.queries.pool.connection() as conn, conn.cursor() as cur:
            return roles_holding(cur, member_type, member_id)


def _may_join(role_id: UUID, project_id: UUID, added: list[tuple[str, str]]) -> Condition:
    def check(cur: Cursor) -> None:
        for member_type, member_id in added:
            if member_type == USER:
                if not user_exists(cur, member_id):
                    raise NoSuchUser(f"User with id {member_id} not found: create it (POST /management/v1/user)"
                                     " before adding it to a role")
                continue
            member = UUID(member_id)
            if not role_in_project(cur, member, project_id):
                raise NoSuchRole(f"Role does not exist in project {project_id}: {member_id}")
            if contains(cur, member, role_id):
                raise BadRequest(f"Role {member_id} already contains role {role_id} (directly or through nested "
                                 "roles): adding it as a member would make a membership loop")
    return check


def _still_held(member_type: str, member_id: str, holding: set[UUID]) -> Condition:
    def check(cur: Cursor) -> None:
        if roles_holding(cur, member_type, member_id) != holding:
            raise ConcurrentChange(f"The roles holding {member_type} {member_id} changed while it was being deleted")
    return check
