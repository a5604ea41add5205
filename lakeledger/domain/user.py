"""A user of the catalog: a person or an application known by the subject its identity provider gives it.

Users are global to the server (roles belong to projects). A user's id is ``<idp>~<subject>`` as Lakekeeper
writes it (``oidc~1234``); its aggregate id is derived from that id, so two requests that provision the same
principal at the same moment append to one aggregate at one version and exactly one of them wins. A deleted user
that comes back (a later login, or an explicit create) is the same aggregate, created again."""

from uuid import UUID, uuid5

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import AlreadyExists, BadRequest, NotFound
from lakeledger.domain.provenance import Provenance

HUMAN, APPLICATION = "human", "application"
USER_TYPES = (HUMAN, APPLICATION)

# How the user was last written (Lakekeeper's `last-updated-with`): the user endpoints, or implicitly when an
# authenticated principal first called (Lakekeeper provisions on its /config call; we do on any first request).
CREATE_ENDPOINT, UPDATE_ENDPOINT, FIRST_REQUEST = "create-endpoint", "update-endpoint", "config-call-creation"

MAX_SUBJECT_LENGTH = 127
MAX_FIELD_LENGTH = 512

_USERS = UUID("3d0c6a52-9b1e-5f47-8c2d-7e4b1a9f0c65")


class NoSuchUser(NotFound):
    error_type = "NoSuchUserException"


def user_aggregate_id(user_id: str) -> UUID:
    return uuid5(_USERS, user_id)


def check_user_id(user_id: object) -> str:
    """``<idp>~<subject>``: both parts present, no control characters, the subject shorter than 128 characters
    (Lakekeeper's limits)."""
    if not isinstance(user_id, str):
        raise BadRequest("User id must be a string")
    idp, sep, subject = user_id.partition("~")
    if not sep or not idp or not subject:
        raise BadRequest(f"Invalid user id {user_id!r}: expected <idp-id>~<subject>, e.g. oidc~1234")
    if len(subject) > MAX_SUBJECT_LENGTH:
        raise BadRequest(f"User id subject must be shorter than {MAX_SUBJECT_LENGTH + 1} characters")
    _no_control_characters(user_id, "User id")
    return user_id


def check_user_type(user_type: object) -> str:
    if not isinstance(user_type, str) or user_type not in USER_TYPES:
        raise BadRequest(f"user-type must be \"human\" or \"application\", not {user_type!r}")
    return user_type


def check_user_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("Name cannot be empty")
    if len(name) > MAX_FIELD_LENGTH:
        raise BadRequest(f"Name is longer than {MAX_FIELD_LENGTH} characters")
    _no_control_characters(name, "Name")
    return name


def check_email(email: object) -> str | None:
    """An empty email is no email (as Lakekeeper treats it)."""
    if email is None or email == "":
        return None
    if not isinstance(email, str):
        raise BadRequest("Email must be a string")
    if len(email) > MAX_FIELD_LENGTH:
        raise BadRequest(f"Email is longer than {MAX_FIELD_LENGTH} characters")
    _no_control_characters(email, "Email")
    return email


def _no_control_characters(value: str, what: str) -> None:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise BadRequest(f"{what} must not contain control characters")


class User(CatalogAggregate):
    class Created(CatalogAggregate.Created):
        user_id: str
        name: str
        email: str | None
        user_type: str
        last_updated_with: str

    class Recreated(CatalogAggregate.Event):
        """A deleted user is known again: created explicitly, or provisioned when it called once more."""

        user_id: str
        name: str
        email: str | None
        user_type: str
        last_updated_with: str

    class Updated(CatalogAggregate.Event):
        user_id: str
        name: str
        email: str | None
        user_type: str
        last_updated_with: str

    class Deleted(CatalogAggregate.Event):
        user_id: str

    @event(Created)
    def __init__(self, id: UUID, user_id: str, name: str, email: str | None, user_type: str,
                 last_updated_with: str, actor: str, request_id: str):
        self._set(user_id, name, email, user_type, last_updated_with)
        self.deleted = False

    @classmethod
    def create(cls, user_id: str, name: str, email: str | None, user_type: str, last_updated_with: str,
               by: Provenance) -> "User":
        return cls(id=user_aggregate_id(check_user_id(user_id)), user_id=user_id, name=check_user_name(name),
                   email=check_email(email), user_type=check_user_type(user_type),
                   last_updated_with=last_updated_with, actor=by.actor, request_id=by.request_id)

    def _set(self, user_id: str, name: str, email: str | None, user_type: str, last_updated_with: str) -> None:
        self.user_id = user_id
        self.name = name
        self.email = email
        self.user_type = user_type
        self.last_updated_with = last_updated_with

    def ensure_live(self) -> None:
        if self.deleted:
            raise NoSuchUser(f"User with id {self.user_id} not found")

    def recreate(self, name: str, email: str | None, user_type: str, last_updated_with: str,
                 by: Provenance) -> None:
        if not self.deleted:
            raise AlreadyExists(f"User with id {self.user_id} already exists")
        self._recreated(user_id=self.user_id, name=check_user_name(name), email=check_email(email),
                        user_type=check_user_type(user_type), last_updated_with=last_updated_with,
                        actor=by.actor, request_id=by.request_id)

    def update(self, name: str, email: str | None, user_type: str, last_updated_with: str, by: Provenance) -> bool:
        """Replaces name, email and type (Lakekeeper's PUT: an absent email is no email); nothing is recorded when
        nothing changes. Returns whether anything did."""
        self.ensure_live()
        name, email, user_type = check_user_name(name), check_email(email), check_user_type(user_type)
        if (name, email, user_type) == (self.name, self.email, self.user_type):
            return False
        self._updated(user_id=self.user_id, name=name, email=email, user_type=user_type,
                      last_updated_with=last_updated_with, actor=by.actor, request_id=by.request_id)
        return True

    def delete(self, by: Provenance) -> None:
        self.ensure_live()
        self._deleted(user_id=self.user_id, actor=by.actor, request_id=by.request_id)

    @event(Recreated)
    def _recreated(self, user_id: str, name: str, email: str | None, user_type: str, last_updated_with: str,
                   actor: str, request_id: str) -> None:
        self._set(user_id, name, email, user_type, last_updated_with)
        self.deleted = False

    @event(Updated)
    def _updated(self, user_id: str, name: str, email: str | None, user_type: str, last_updated_with: str,
                 actor: str, request_id: str) -> None:
        self._set(user_id, name, email, user_type, last_updated_with)

    @event(Deleted)
    def _deleted(self, user_id: str, actor: str, request_id: str) -> None:
        self.deleted = True
