"""A role: a named set of users and other roles inside one project, to which rights are granted.

Membership is recorded on the role that gains or loses the member, one event per member, so that what a
member holds through a role at any moment is a fold of these events (and OpenFGA's tuples a projection of
them). A role never contains itself, directly or through nesting: the role checks the direct case, the
service the nested one, inside the append (lakeledger/services/roles.py)."""

from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import BadRequest, NotFound
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.user import check_user_id

USER, ROLE = "user", "role"
MEMBER_TYPES = (USER, ROLE)
DEFAULT_PROVIDER = "lakekeeper"  # roles made through this API, as Lakekeeper names its own
MAX_FIELD_LENGTH = 512

ROLE_IDENT = "role-ident"  # name-claim scope: a role's `provider~source` is unique in its project


class NoSuchRole(NotFound):
    error_type = "NoSuchRoleException"


def check_role_name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise BadRequest("Role name cannot be empty")
    return _text(name, "Role name")


def check_description(description: object) -> str | None:
    if description is None:
        return None
    if not isinstance(description, str):
        raise BadRequest("Role description must be a string")
    return _text(description, "Role description", allow_newlines=True)


def check_ident(provider_id: object, source_id: object) -> tuple[str, str]:
    """Both given or neither (then the server's own provider and the role's id)."""
    if (provider_id is None) != (source_id is None):
        raise BadRequest("provider-id and source-id must be provided together, or both omitted")
    for value, what in ((provider_id, "provider-id"), (source_id, "source-id")):
        if not isinstance(value, str) or not value:
            raise BadRequest(f"{what} must be a non-empty string")
        _text(value, what)
    if "~" in provider_id:  # type: ignore[operator]
        raise BadRequest("provider-id must not contain '~' (it separates provider and source in the ident)")
    return provider_id, source_id  # type: ignore[return-value]


def check_member(member: object) -> tuple[str, str]:
    """A member reference as Lakekeeper sends it: {"type": "user", "id": "oidc~..."} or {"type": "role",
    "id": "<uuid>"}; returns (type, id) with a role id in its canonical form."""
    if not isinstance(member, dict) or set(member) != {"type", "id"}:
        raise BadRequest("A member is {\"type\": \"user\"|\"role\", \"id\": ...} and nothing else")
    kind, member_id = member["type"], member["id"]
    if kind not in MEMBER_TYPES:
        raise BadRequest(f"Member type must be \"user\" or \"role\", not {kind!r}")
    if not isinstance(member_id, str):
        raise BadRequest("Member id must be a string")
    if kind == ROLE:
        try:
            return kind, str(UUID(member_id))
        except ValueError:
            raise BadRequest(f"A role member's id must be a UUID, not {member_id!r}") from None
    return kind, check_user_id(member_id)


def _text(value: str, what: str, allow_newlines: bool = False) -> str:
    if len(value) > MAX_FIELD_LENGTH:
        raise BadRequest(f"{what} is longer than {MAX_FIELD_LENGTH} characters")
    allowed = "\n\r\t" if allow_newlines else ""
    if any((ord(c) < 0x20 and c not in allowed) or ord(c) == 0x7F for c in value):
        raise BadRequest(f"{what} must not contain control characters")
    return value


class Role(CatalogAggregate):
    class Created(CatalogAggregate.Created):
        project_id: UUID
        name: str
        description: str | None
        provider_id: str
        source_id: str

    class Updated(CatalogAggregate.Event):
        name: str
        description: str | None

    class SourceSystemChanged(CatalogAggregate.Event):
        """The role now answers to another provider and source (its ``ident``), as when an identity provider's
        group it mirrors is moved or renamed."""

        project_id: UUID
        provider_id: str
        source_id: str

    class MemberAdded(CatalogAggregate.Event):
        """``member_type`` user (``member_id`` its user id) or role (the member role's id as text)."""

        project_id: UUID
        member_type: str
        member_id: str

    class MemberRemoved(CatalogAggregate.Event):
        project_id: UUID
        member_type: str
        member_id: str

    class Deleted(CatalogAggregate.Event):
        """Preceded, in the same append, by a MemberRemoved for each of its members and on each role it was a
        member of: a deleted role leaves no membership behind."""

        project_id: UUID
        name: str

    @event(Created)
    def __init__(self, id: UUID, project_id: UUID, name: str, description: str | None, provider_id: str,
                 source_id: str, actor: str, request_id: str):
        self.project_id = project_id
        self.name = name
        self.description = description
        self.provider_id = provider_id
        self.source_id = source_id
        self.members: set[tuple[str, str]] = set()
        self.deleted = False

    @classmethod
    def create(cls, id: UUID, project_id: UUID, name: str, description: str | None, provider_id: str | None,
               source_id: str | None, by: Provenance) -> "Role":
        if provider_id is None and source_id is None:
            provider_id, source_id = DEFAULT_PROVIDER, str(id)
        provider_id, source_id = check_ident(provider_id, source_id)
        return cls(id=id, project_id=project_id, name=check_role_name(name), description=check_description(description),
                   provider_id=provider_id, source_id=source_id, actor=by.actor, request_id=by.request_id)

    @property
    def ident(self) -> str:
        return f"{self.provider_id}~{self.source_id}"

    def ensure_live(self) -> None:
        if self.deleted:
            raise NoSuchRole(f"Role does not exist: {self.id}")

    def update(self, name: str, description: str | None, by: Provenance) -> None:
        """Lakekeeper's update: the name, and the description (absent removes it)."""
        self.ensure_live()
        name, description = check_role_name(name), check_description(description)
        if (name, description) != (self.name, self.description):
            self._updated(name=name, description=description, actor=by.actor, request_id=by.request_id)

    def change_source_system(self, provider_id: object, source_id: object, by: Provenance) -> bool:
        """Lakekeeper's update of the source system: both given; returns whether the ident changed."""
        self.ensure_live()
        if provider_id is None or source_id is None:
            raise BadRequest("provider-id and source-id are both required")
        provider_id, source_id = check_ident(provider_id, source_id)
        if (provider_id, source_id) == (self.provider_id, self.source_id):
            return False
        self._source_system_changed(project_id=self.project_id, provider_id=provider_id, source_id=source_id,
                                    actor=by.actor, request_id=by.request_id)
        return True

    def add_member(self, member_type: str, member_id: str, by: Provenance) -> bool:
        """Idempotent: a member already present is not recorded again. Returns whether it was added."""
        self.ensure_live()
        if member_type == ROLE and member_id == str(self.id):
            raise BadRequest("A role cannot be a member of itself")
        if (member_type, member_id) in self.members:
            return False
        self._member_added(project_id=self.project_id, member_type=member_type, member_id=member_id,
                           actor=by.actor, request_id=by.request_id)
        return True

    def remove_member(self, member_type: str, member_id: str, by: Provenance) -> bool:
        """Idempotent, as Lakekeeper's: removing an absent member records nothing."""
        self.ensure_live()
        if (member_type, member_id) not in self.members:
            return False
        self._member_removed(project_id=self.project_id, member_type=member_type, member_id=member_id,
                             actor=by.actor, request_id=by.request_id)
        return True

    def delete(self, by: Provenance) -> None:
        self.ensure_live()
        for member_type, member_id in sorted(self.members):
            self.remove_member(member_type, member_id, by)
        self._deleted(project_id=self.project_id, name=self.name, actor=by.actor, request_id=by.request_id)

    @event(Updated)
    def _updated(self, name: str, description: str | None, actor: str, request_id: str) -> None:
        self.name = name
        self.description = description

    @event(SourceSystemChanged)
    def _source_system_changed(self, project_id: UUID, provider_id: str, source_id: str, actor: str,
                               request_id: str) -> None:
        self.provider_id = provider_id
        self.source_id = source_id

    @event(MemberAdded)
    def _member_added(self, project_id: UUID, member_type: str, member_id: str, actor: str, request_id: str) -> None:
        self.members.add((member_type, member_id))

    @event(MemberRemoved)
    def _member_removed(self, project_id: UUID, member_type: str, member_id: str, actor: str,
                        request_id: str) -> None:
        self.members.discard((member_type, member_id))

    @event(Deleted)
    def _deleted(self, project_id: UUID, name: str, actor: str, request_id: str) -> None:
        self.deleted = True
