"""The users-and-roles read model: ``ll_users``, ``ll_roles`` and ``ll_role_members``, as they are now.

Applied inside the append of every user or role event (lakeledger/services/unit_of_work.py ``views``), so a change is
visible, and a membership-loop check sees every earlier membership, the moment its append commits. It reads
only its own topics, so catching up over catalog events costs nothing. Every statement is driven by the event's
own fields (times are the events' own), so a rebuild writes identical rows."""

from functools import singledispatchmethod
from typing import Any

from eventsourcing.utils import get_topic
from psycopg import Cursor

from lakeledger.domain.role import Role
from lakeledger.domain.user import User

TABLES = ("ll_users", "ll_roles", "ll_role_members")

EVENTS = (User.Created, User.Recreated, User.Updated, User.Deleted,
          Role.Created, Role.Updated, Role.SourceSystemChanged, Role.MemberAdded, Role.MemberRemoved, Role.Deleted)


class UsersRolesProjection:
    name = "users-roles"
    tables = TABLES
    topics: tuple[str, ...] = tuple(get_topic(cls) for cls in EVENTS)

    @singledispatchmethod
    def apply(self, event: Any, cur: Cursor) -> None:
        """Other events are not this read model's."""

    @apply.register(User.Created)
    @apply.register(User.Recreated)
    def _(self, e: User.Created | User.Recreated, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_users (id, name, email, user_type, last_updated_with, created_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s)",
                    (e.user_id, e.name, e.email, e.user_type, e.last_updated_with, e.timestamp))

    @apply.register
    def _(self, e: User.Updated, cur: Cursor) -> None:
        cur.execute("UPDATE ll_users SET name = %s, email = %s, user_type = %s, last_updated_with = %s,"
                    " updated_at = %s WHERE id = %s",
                    (e.name, e.email, e.user_type, e.last_updated_with, e.timestamp, e.user_id))

    @apply.register
    def _(self, e: User.Deleted, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_users WHERE id = %s", (e.user_id,))

    @apply.register
    def _(self, e: Role.Created, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_roles (id, project_id, name, description, provider_id, source_id, created_at)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (e.originator_id, e.project_id, e.name, e.description, e.provider_id, e.source_id, e.timestamp))

    @apply.register
    def _(self, e: Role.Updated, cur: Cursor) -> None:
        cur.execute("UPDATE ll_roles SET name = %s, description = %s, updated_at = %s WHERE id = %s",
                    (e.name, e.description, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Role.SourceSystemChanged, cur: Cursor) -> None:
        cur.execute("UPDATE ll_roles SET provider_id = %s, source_id = %s, updated_at = %s WHERE id = %s",
                    (e.provider_id, e.source_id, e.timestamp, e.originator_id))

    @apply.register
    def _(self, e: Role.MemberAdded, cur: Cursor) -> None:
        cur.execute("INSERT INTO ll_role_members (role_id, member_type, member_id, project_id, added_at)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (e.originator_id, e.member_type, e.member_id, e.project_id, e.timestamp))

    @apply.register
    def _(self, e: Role.MemberRemoved, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_role_members WHERE role_id = %s AND member_type = %s AND member_id = %s",
                    (e.originator_id, e.member_type, e.member_id))

    @apply.register
    def _(self, e: Role.Deleted, cur: Cursor) -> None:
        cur.execute("DELETE FROM ll_roles WHERE id = %s", (e.originator_id,))

