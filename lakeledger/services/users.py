"""Users: created through the Management API, or provisioned the first time an authenticated principal calls.

``provision(principal)`` is what the request path calls for every authenticated request: after the first time
it costs one dictionary lookup (known ids are remembered for ``KNOWN_SECONDS``), and two processes provisioning
the same principal at the same moment append to the same aggregate at the same version, so one ``user.created``
is recorded and the other request carries on."""

import contextlib
import threading
import time
from dataclasses import dataclass
from uuid import UUID

from psycopg import Cursor

from lakeledger.domain.errors import AlreadyExists, BadRequest
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.role import USER, Role
from lakeledger.domain.user import (
    CREATE_ENDPOINT,
    FIRST_REQUEST,
    UPDATE_ENDPOINT,
    NoSuchUser,
    User,
    check_user_id,
    user_aggregate_id,
)
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.identity.principal import Principal
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.users_roles_queries import roles_holding
from lakeledger.services.conditions import Condition
from lakeledger.services.unit_of_work import Ledger

# How long a process trusts that a principal it saw is still a user. A user deleted meanwhile (by another
# process) is provisioned again on its first request after that.
KNOWN_SECONDS = 60.0


@dataclass(frozen=True)
class UserFields:
    """What a create request says, each part None when absent."""

    id: str | None = None
    name: str | None = None
    email: str | None = None
    user_type: str | None = None


class UserService:
    def __init__(self, ledger: Ledger, view: ProjectionDriver):
        self.ledger = ledger
        self.view = view  # the users-roles read model, applied inside these appends
        self._known: dict[str, float] = {}
        self._lock = threading.Lock()

    # --- implicit provisioning -------------------------------------------------------------------------------

    def is_known(self, principal: Principal) -> bool:
        """True when ``provision`` has nothing to do (anonymous, or seen lately): a dictionary lookup, safe on the
        event loop, so a caller hops to a thread for ``provision`` only when this is False."""
        return not principal.authenticated or self._known.get(principal.id, 0.0) > time.monotonic()

    def provision(self, principal: Principal, request_id: str | None = None) -> None:
        """Records the principal as a user unless it is one already; nothing for an anonymous caller. Blocks
        (reads and appends): call it on a worker thread."""
        if self.is_known(principal):
            return
        by = Provenance(principal.id, request_id or "provisioning")
        user = self.ledger.log.get(User, user_aggregate_id(check_user_id(principal.id)))
        name, email, user_type = _from_token(principal)
        if user is None:
            user = User.create(principal.id, name, email, user_type, FIRST_REQUEST, by)
        elif user.deleted:
            user.recreate(name, email, user_type, FIRST_REQUEST, by)
        with contextlib.suppress(ConcurrentChange):  # another request of the same principal provisioned it first
            self.ledger.append(user, views=(self.view,))
        self._remember(principal.id)

    def _remember(self, user_id: str) -> None:
        with self._lock:
            if len(self._known) > 100_000:
                self._known.clear()
            self._known[user_id] = time.monotonic() + KNOWN_SECONDS

    def _forget(self, user_id: str) -> None:
        with self._lock:
            self._known.pop(user_id, None)

    # --- the user endpoints ----------------------------------------------------------------------------------

    def create(self, fields: UserFields, update_if_exists: bool, caller: Principal, by: Provenance) -> tuple[str, bool]:
        """Lakekeeper's create: a caller provisioning itself (no id, or its own) may leave out what its token
        says; anyone else must give the name and type. An existing user is a conflict unless
        ``update_if_exists``. Returns the user id and whether the user was created."""
        user_id, name, email, user_type = _resolve(fields, caller)
        aggregate_id = user_aggregate_id(user_id)

        def command() -> bool:
            user = self.ledger.log.get(User, aggregate_id)
            if user is None:
                user = User.create(user_id, name, email, user_type, CREATE_ENDPOINT, by)
                created = True
            elif user.deleted:
                user.recreate(name, email, user_type, CREATE_ENDPOINT, by)
                created = True
            elif not update_if_exists:
                raise AlreadyExists(f"User with id {user_id} already exists")
            else:
                user.update(name, email, user_type, CREATE_ENDPOINT, by)
                created = False
            self.ledger.append(user, views=(self.view,))
            return created

        created = self.ledger.retrying(command)
        self._remember(user_id)
        return user_id, created

    def update(self, user_id: str, name: object, email: object, user_type: object, by: Provenance) -> None:
        def command() -> None:
            user = self._user(user_id)
            user.update(name, email, user_type, UPDATE_ENDPOINT, by)  # type: ignore[arg-type]
            self.ledger.append(user, views=(self.view,))

        self.ledger.retrying(command)

    def delete(self, user_id: str, by: Provenance) -> None:
        """The user, and its place in every role (one ``role.member-removed`` each, in the same append)."""
        def command() -> None:
            user = self._user(user_id)
            holding = self._roles_holding(user_id)
            roles = [role for role in (self.ledger.log.get(Role, role_id) for role_id in sorted(holding)) if role]
            for role in roles:
                role.remove_member(USER, user_id, by)
            user.delete(by)
            self.ledger.append(*roles, user, conditions=[_still_held_by(user_id, holding)], views=(self.view,))

        self.ledger.retrying(command)
        self._forget(user_id)

    def _user(self, user_id: str) -> User:
        try:
            check_user_id(user_id)
        except BadRequest:
            raise NoSuchUser(f"User with id {user_id} not found") from None
        user = self.ledger.log.get(User, user_aggregate_id(user_id))
        if user is None:
            raise NoSuchUser(f"User with id {user_id} not found")
        user.ensure_live()
        return user

    def _roles_holding(self, user_id: str) -> set[UUID]:
        with self.ledger.queries.pool.connection() as conn, conn.cursor() as cur:
            return roles_holding(cur, USER, user_id)


def _still_held_by(user_id: str, holding: set[UUID]) -> Condition:
    def check(cur: Cursor) -> None:
        if roles_holding(cur, USER, user_id) != holding:
            raise ConcurrentChange(f"The roles of user {user_id} changed while it was being deleted")
    return check


def _from_token(principal: Principal) -> tuple[str, str | None, str]:
    return (principal.name or f"Nameless App with ID {principal.id}", principal.email or None,
            principal.kind if principal.kind in ("human", "application") else "application")


def _resolve(fields: UserFields, caller: Principal) -> tuple[str, str, str | None, str]:
    user_id = fields.id if fields.id is not None else (caller.id if caller.authenticated else None)
    if user_id is None:
        raise BadRequest("User ID could not be extracted from the token and must be provided for creating a user")
    check_user_id(user_id)
    name = fields.name or None
    email = fields.email or None
    if caller.authenticated and user_id == caller.id:
        token_name, token_email, token_type = _from_token(caller)
        return user_id, name or token_name, email or token_email, fields.user_type or token_type
    if name is None:
        raise BadRequest("Name must be provided for user provisioning")
    if fields.user_type is None:
        raise BadRequest("user-type must be provided for user provisioning")
    return user_id, name, email, fields.user_type
