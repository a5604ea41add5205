"""Questions the users-and-roles read model answers: for the API (asynchronously), and for the write side's
checks inside an append (``Cursor`` functions, run under the append lock by lakeledger/services/roles.py)."""

from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import class_row
from psycopg_pool import AsyncConnectionPool

USER_COLUMNS = "id, name, email, user_type, last_updated_with, created_at, updated_at"
ROLE_COLUMNS = "id, project_id, name, description, provider_id, source_id, created_at, updated_at"
SEARCH_LIMIT = 10
SEARCH_LENGTH = 64  # Lakekeeper truncates search strings to 64 characters

# Keyset pages over (created_at, id), Lakekeeper's order for users and roles.
_AFTER = ("(%(after_time)s::timestamptz IS NULL OR ({prefix}created_at, {prefix}id) >"
          " (%(after_time)s, %(after_id)s::{id_type}))")


# the live roles of a project, which its deletion deletes with it
PROJECT_ROLES = "SELECT id FROM ll_roles WHERE project_id = %(id)s ORDER BY id"

@dataclass(frozen=True)
class UserRow:
    """A user, in USER_COLUMNS' order."""
    id: str
    name: str
    email: str | None
    user_type: str
    last_updated_with: str
    created_at: datetime
    updated_at: datetime | None


@dataclass(frozen=True)
class RoleRow:
    """A role, in ROLE_COLUMNS' order."""
    id: UUID
    project_id: UUID
    name: str
    description: str | None
    provider_id: str
    source_id: str
    created_at: datetime
    updated_at: datetime | None


@dataclass(frozen=True)
class MemberRow:
    """A direct member of a role: a user (``user_name``, ``email``, ``user_type``) or a role (``role_name``,
    ``provider_id``, ``source_id``); the other kind's fields are None."""
    member_type: str
    member_id: str
    user_name: str | None
    email: str | None
    user_type: str | None
    role_name: str | None
    provider_id: str | None
    source_id: str | None


Row = TypeVar("Row")


def like_pattern(term: str) -> str:
    """``term`` as a literal inside a LIKE pattern."""
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _search_rank(columns: tuple[str, ...]) -> str:
    """0 for an exact id, then an exact, a leading and a contained match of any of ``columns`` (case-insensitive);
    NULL for no match."""
    exact = " OR ".join(f"lower({c}) = lower(%(term)s)" for c in columns)
    prefix = " OR ".join(f"{c} ILIKE %(pattern)s || '%%'" for c in columns)
    inside = " OR ".join(f"{c} ILIKE '%%' || %(pattern)s || '%%'" for c in columns)
    return (f"CASE WHEN id::text = %(term)s THEN 0 WHEN {exact} THEN 1 WHEN {prefix} THEN 2"
            f" WHEN {inside} THEN 3 END")


def _search_params(term: str) -> dict[str, Any]:
    term = term[:SEARCH_LENGTH]
    return {"term": term, "pattern": like_pattern(term), "limit": SEARCH_LIMIT}


def _page_params(after: list | None, limit: int | None) -> dict[str, Any]:
    after_time = datetime.fromisoformat(after[0]) if after else None
    return {"after_time": after_time, "after_id": after[1] if after else None, "limit": limit}


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    return isinstance(value, (list, tuple)) and any(_has_nul(v) for v in value)


class UsersRolesQueries:
    def __init__(self, pool: AsyncConnectionPool):
        self.pool = pool

    async def _all(self, row: type[Row], sql: str, params: dict[str, Any]) -> list[Row]:
        if any(_has_nul(value) for value in params.values()):
            return []  # Postgres text cannot hold NUL, so nothing stored matches it (and psycopg refuses to send it)
        async with self.pool.connection() as conn:
            cur = conn.cursor(row_factory=class_row(row))
            await cur.execute(sql, params)
            return await cur.fetchall()

    async def _one(self, row: type[Row], sql: str, params: dict[str, Any]) -> Row | None:
        rows = await self._all(row, sql, params)
        return rows[0] if rows else None

    # --- users ---------------------------------------------------------------------------------------------

    async def user(self, user_id: str) -> UserRow | None:
        return await self._one(UserRow, f"SELECT {USER_COLUMNS} FROM ll_users WHERE id = %(id)s", {"id": user_id})

    async def users(self, name: str | None, after: list | None, limit: int | None) -> list[UserRow]:
        """``name``: a case-insensitive part of the name (Lakekeeper's filter)."""
        return await self._all(
            UserRow,
            f"SELECT {USER_COLUMNS} FROM ll_users WHERE (%(name)s::text IS NULL OR name ILIKE '%%' || %(name)s || '%%')"
            f" AND {_AFTER.format(prefix='', id_type='text')} ORDER BY created_at, id LIMIT %(limit)s",
            {"name": like_pattern(name) if name else None, **_page_params(after, limit)})

    async def search_users(self, term: str) -> list[UserRow]:
        rank = _search_rank(("name", "email", "id"))
        return await self._all(
            UserRow,
            f"SELECT {USER_COLUMNS} FROM (SELECT {USER_COLUMNS}, {rank} AS rank FROM ll_users) u WHERE rank IS NOT NULL"
            " ORDER BY rank, name, id LIMIT %(limit)s", _search_params(term))

    # --- roles ---------------------------------------------------------------------------------------------

    async def role_exists(self, role_id: UUID) -> bool:
        """In any project."""
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM ll_roles WHERE id = %(id)s)", {"id": role_id})
            row = await cur.fetchone()
        return row is not None and bool(row[0])

    async def roles_of_ident(self, provider_id: str, source_ids: list[str]) -> list[UUID]:
        """The roles, in every project, whose ident is ``provider_id~<one of source_ids>``."""
        async with self.pool.connection() as conn:
            cur = await conn.execute("SELECT id FROM ll_roles WHERE provider_id = %(provider)s"
                                     " AND source_id = ANY(%(sources)s) ORDER BY id",
                                     {"provider": provider_id, "sources": source_ids})
            return [row[0] for row in await cur.fetchall()]

    async def role(self, project_id: UUID, role_id: UUID) -> RoleRow | None:
        return await self._one(RoleRow,
                               f"SELECT {ROLE_COLUMNS} FROM ll_roles WHERE id = %(id)s AND project_id = %(project)s",
                               {"id": role_id, "project": project_id})

    async def roles(self, project_id: UUID, role_ids: list[UUID] | None, source_ids: list[str] | None,
                    provider_ids: list[str] | None, after: list | None, limit: int | None) -> list[RoleRow]:
        return await self._all(
            RoleRow, f"SELECT {ROLE_COLUMNS} FROM ll_roles WHERE project_id = %(project)s"
            " AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s))"
            " AND (%(sources)s::text[] IS NULL OR source_id = ANY(%(sources)s))"
            " AND (%(providers)s::text[] IS NULL OR provider_id = ANY(%(providers)s))"
            f" AND {_AFTER.format(prefix='', id_type='uuid')} ORDER BY created_at, id LIMIT %(limit)s",
            {"project": project_id, "ids": role_ids, "sources": source_ids, "providers": provider_ids,
             **_page_params(after, limit)})

    async def search_roles(self, project_id: UUID, term: str) -> list[RoleRow]:
        rank = _search_rank(("name", "source_id"))
        return await self._all(
            RoleRow,
            f"SELECT {ROLE_COLUMNS} FROM (SELECT {ROLE_COLUMNS}, {rank} AS rank FROM ll_roles"
            " WHERE project_id = %(project)s) r"
            " WHERE rank IS NOT NULL ORDER BY rank, name, id LIMIT %(limit)s",
            {"project": project_id, **_search_params(term)})

    # --- membership ----------------------------------------------------------------------------------------

    async def members(self, role_id: UUID, member_type: str | None, after: list | None,
                      limit: int | None, transitive: bool = False) -> list[MemberRow]:
        """Direct members (or, ``transitive``, the members of the role and of every role below it, those roles
        included), users with their name, email and type, roles with their name and ident; ordered by
        (type, id)."""
        source = _BELOW if transitive else "ll_role_members"
        return await self._all(
            MemberRow,
            f"{_BELOW_CTE if transitive else ''}"
            "SELECT m.member_type, m.member_id, u.name AS user_name, u.email, u.user_type, r.name AS role_name,"
            f" r.provider_id, r.source_id FROM {source} m"
            " LEFT JOIN ll_users u ON m.member_type = 'user' AND u.id = m.member_id"
            " LEFT JOIN ll_roles r ON m.member_type = 'role' AND r.id::text = m.member_id"
            " WHERE m.role_id = %(role)s AND (%(type)s::text IS NULL OR m.member_type = %(type)s)"
            " AND (%(after_type)s::text IS NULL OR (m.member_type, m.member_id) > (%(after_type)s, %(after_id)s))"
            " ORDER BY m.member_type, m.member_id LIMIT %(limit)s",
            {"role": role_id, "type": member_type, "after_type": after[0] if after else None,
             "after_id": after[1] if after else None, "limit": limit})

    async def roles_of(self, project_id: UUID, member_type: str, member_id: str, after: list | None,
                       limit: int | None, transitive: bool = False) -> list[RoleRow]:
        """The roles of the project that ``member_id`` is a direct member of (or, ``transitive``, those and every
        role above them)."""
        source = _ABOVE if transitive else "ll_role_members"
        return await self._all(
            RoleRow, f"{_ABOVE_CTE if transitive else ''}"
            f"SELECT {', '.join('r.' + c.strip() for c in ROLE_COLUMNS.split(','))} FROM {source} m"
            " JOIN ll_roles r ON r.id = m.role_id WHERE m.member_type = %(type)s AND m.member_id = %(member)s"
            " AND r.project_id = %(project)s"
            f" AND {_AFTER.format(prefix='r.', id_type='uuid')}"
            " ORDER BY r.created_at, r.id LIMIT %(limit)s",
            {"project": project_id, "type": member_type, "member": member_id, **_page_params(after, limit)})

    async def role_anywhere(self, role_id: UUID) -> RoleRow | None:
        """The role, in whichever project it is (its metadata is readable across projects)."""
        return await self._one(RoleRow, f"SELECT {ROLE_COLUMNS} FROM ll_roles WHERE id = %(id)s", {"id": role_id})


# Memberships closed over nesting, with the columns of ll_role_members the questions read: ``below`` pairs the asked
# role with every member of it or of a role beneath it; ``above`` pairs the asked member with every role holding
# it directly or through roles. UNION, not UNION ALL: a member reached along two paths is listed once.
_BELOW_CTE = ("WITH RECURSIVE below(role_id, member_type, member_id) AS ("
              " SELECT role_id, member_type, member_id FROM ll_role_members WHERE role_id = %(role)s"
              " UNION SELECT b.role_id, m.member_type, m.member_id FROM ll_role_members m"
              " JOIN below b ON b.member_type = 'role' AND m.role_id = b.member_id::uuid) ")
_BELOW = "below"
_ABOVE_CTE = ("WITH RECURSIVE above(role_id, member_type, member_id) AS ("
              " SELECT role_id, member_type, member_id FROM ll_role_members"
              " WHERE member_type = %(type)s AND member_id = %(member)s"
              " UNION SELECT m.role_id, a.member_type, a.member_id FROM ll_role_members m"
              " JOIN above a ON m.member_type = 'role' AND m.member_id = a.role_id::text) ")
_ABOVE = "above"


# --- inside an append ----------------------------------------------------------------------------------------

def _exists(cur: Cursor) -> bool:
    """The answer of a ``SELECT EXISTS`` just executed."""
    row = cur.fetchone()
    return row is not None and bool(row[0])


def user_exists(cur: Cursor, user_id: str) -> bool:
    cur.execute("SELECT EXISTS (SELECT 1 FROM ll_users WHERE id = %s)", (user_id,))
    return _exists(cur)


def role_in_project(cur: Cursor, role_id: UUID, project_id: UUID) -> bool:
    cur.execute("SELECT EXISTS (SELECT 1 FROM ll_roles WHERE id = %s AND project_id = %s)", (role_id, project_id))
    return _exists(cur)


def contains(cur: Cursor, outer: UUID, inner: UUID) -> bool:
    """Whether role ``outer`` holds role ``inner`` through any chain of role memberships (or is it)."""
    cur.execute(
        "WITH RECURSIVE below(id) AS (SELECT %(outer)s::uuid UNION"
        " SELECT m.member_id::uuid FROM ll_role_members m JOIN below ON m.role_id = below.id"
        " WHERE m.member_type = 'role')"
        " SELECT EXISTS (SELECT 1 FROM below WHERE id = %(inner)s)", {"outer": outer, "inner": inner})
    return _exists(cur)


def roles_holding(cur: Cursor, member_type: str, member_id: str) -> set[UUID]:
    """The roles ``member_id`` is a direct member of, in any project."""
    cur.execute("SELECT role_id FROM ll_role_members WHERE member_type = %s AND member_id = %s",
                (member_type, member_id))
    return {row[0] for row in cur.fetchall()}
