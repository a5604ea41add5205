"""A governance tag definition (Lakekeeper 0.14's tags): a project's vocabulary entry, and every place it is attached.

The definition says where it may be attached (its scope: warehouses, namespaces, tables, views, generic tables,
columns) and what value an attachment carries (none for a marker, any text, or one of an enumerated set). Its name
is unique in the project case-insensitively (a name claim, lakeledger/services/tags.py); ``system.`` and
``lakekeeper.`` names are reserved, as Lakekeeper reserves them.

Attachments are events of the definition, one per change, so that two requests attaching the same tag race on one
aggregate, a definition knows whether it is in use, and who attached what when is a fold of its events. A target
is named by its id (a column by its table's id and Iceberg field id), so a rename or a move leaves its tags in
place, and a drop followed by an undrop finds them again."""

from uuid import UUID

from eventsourcing.domain import event

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import AlreadyExists, BadRequest, InUse, NotFound
from lakeledger.domain.provenance import Provenance

WAREHOUSE, NAMESPACE, TABLE, VIEW, GENERIC_TABLE, COLUMN = (
    "warehouse", "namespace", "table", "view", "generic-table", "column")
SCOPES = (WAREHOUSE, NAMESPACE, TABLE, VIEW, GENERIC_TABLE, COLUMN)
MARKER, FREE_TEXT, ENUMERATED = "marker", "free-text", "enumerated"
VALUE_KINDS = (MARKER, FREE_TEXT, ENUMERATED)
RESERVED_PREFIXES = ("system.", "lakekeeper.")
MAX_NAME_LENGTH = 256
MAX_VALUE_LENGTH = 256
MAX_DESCRIPTION_LENGTH = 4096

TAG_NAME = "tag-name"  # name-claim scope: a definition's name is unique in its project, case-insensitively

# an attachment's target: (kind, object id, Iceberg field id of a column else None)
Target = tuple[str, UUID, int | None]


class NoSuchTagDefinition(NotFound):
    error_type = "TagDefinitionNotFound"


class TagNameAlreadyExists(AlreadyExists):
    error_type = "TagNameAlreadyExists"


class InvalidTagName(BadRequest):
    error_type = "InvalidTagName"


class ReservedTagNamespace(BadRequest):
    error_type = "ReservedTagNamespace"


class InvalidTagDefinition(BadRequest):
    error_type = "InvalidTagDefinition"


class TagScopeNarrowed(BadRequest):
    error_type = "TagScopeNarrowed"


class TagScopeNotAllowed(BadRequest):
    error_type = "TagScopeNotAllowed"


class InvalidTagValue(BadRequest):
    error_type = "InvalidTagValue"


class TagDefinitionInUse(InUse):
    """409: a definition still attached somewhere is not deleted (remove its attachments first)."""

    error_type = "TagDefinitionInUse"


def _control(text: str) -> bool:
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in text)


def check_tag_name(name: object) -> str:
    if not isinstance(name, str):
        raise InvalidTagName("A tag name must be a string")
    why = None
    if not 1 <= len(name) <= MAX_NAME_LENGTH:
        why = f"must be 1 to {MAX_NAME_LENGTH} characters"
    elif name != name.strip():
        why = "must not have leading or trailing whitespace"
    elif _control(name):
        why = "must not contain control characters"
    elif name.startswith(".") or name.endswith("."):
        why = "must not start or end with '.'"
    elif ".." in name:
        why = "must not contain empty segments ('..')"
    if why:
        raise InvalidTagName(f"Invalid tag name {name!r}: {why}")
    lower = name.lower()
    if any(lower.startswith(p) or lower == p.rstrip(".") for p in RESERVED_PREFIXES):
        raise ReservedTagNamespace(f"Tag names starting with {' or '.join(RESERVED_PREFIXES)} are reserved: {name!r}")
    return name


def check_description(description: object) -> str | None:
    if description is None:
        return None
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidTagDefinition(f"A description is a string of at most {MAX_DESCRIPTION_LENGTH} characters")
    return description


def check_scope(scope: object) -> list[str]:
    if not isinstance(scope, list) or not scope:
        raise InvalidTagDefinition("The scope must name at least one target type")
    unknown = [s for s in scope if s not in SCOPES]
    if unknown:
        raise InvalidTagDefinition(f"Unknown scope {unknown[0]!r}: one of {', '.join(SCOPES)}")
    return [s for s in SCOPES if s in scope]  # one order, whatever order it was given in


def _check_values(values: object) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise InvalidTagDefinition("Allowed values are a list of strings")
    for value in values:
        if not value or len(value) > MAX_VALUE_LENGTH or _control(value):
            raise InvalidTagDefinition(f"Allowed values must be 1 to {MAX_VALUE_LENGTH} characters without control "
                                       "characters")
    if len(set(values)) != len(values):
        raise InvalidTagDefinition("Allowed values must be unique")
    return list(values)


class TagDefinition(CatalogAggregate):
    class Created(CatalogAggregate.Created):
        project_id: UUID
        name: str
        description: str | None
        scope: list[str]
        value_kind: str
        allowed_values: list[str]

    class Updated(CatalogAggregate.Event):
        """The definition as it is now: name, description and scope replaced, ``added_values`` joined to the
        allowed values."""

        name: str
        description: str | None
        scope: list[str]
        added_values: list[str]

    class Applied(CatalogAggregate.Event):
        """Attached to a target, or its value there changed. ``field_id`` names a column of the table
        ``target_id`` (``target_type`` column)."""

        project_id: UUID
        name: str
        warehouse_id: UUID
        target_type: str
        target_id: UUID
        field_id: int | None
        value: str | None

    class Removed(CatalogAggregate.Event):
        project_id: UUID
        name: str
        warehouse_id: UUID
        target_type: str
        target_id: UUID
        field_id: int | None

    class Deleted(CatalogAggregate.Event):
        """Preceded, in the same append, by a Removed for each attachment left to targets that no longer exist."""

        project_id: UUID
        name: str

    @event(Created)
    def __init__(self, id: UUID, project_id: UUID, name: str, description: str | None, scope: list[str],
                 value_kind: str, allowed_values: list[str], actor: str, request_id: str):
        self.project_id = project_id
        self.name = name
        self.description = description
        self.scope = list(scope)
        self.value_kind = value_kind
        self.allowed_values = list(allowed_values)
        # target -> (warehouse id, value)
        self.attachments: dict[Target, tuple[UUID, str | None]] = {}
        self.deleted = False

    @classmethod
    def create(cls, id: UUID, project_id: UUID, name: object, description: object, scope: object,
               value_kind: object, allowed_values: object, by: Provenance) -> "TagDefinition":
        if value_kind not in VALUE_KINDS:
            raise InvalidTagDefinition(f"value-kind must be one of {', '.join(VALUE_KINDS)}, not {value_kind!r}")
        if value_kind == ENUMERATED:
            values = _check_values(allowed_values)
            if not values:
                raise InvalidTagDefinition("An enumerated tag definition needs at least one allowed value")
        elif allowed_values is not None:
            raise InvalidTagDefinition("Only an enumerated tag definition takes allowed values")
        else:
            values = []
        return cls(id=id, project_id=project_id, name=check_tag_name(name), description=check_description(description),
                   scope=check_scope(scope), value_kind=value_kind, allowed_values=values, actor=by.actor,
                   request_id=by.request_id)

    def ensure_live(self) -> None:
        if self.deleted:
            raise NoSuchTagDefinition(f"Tag definition does not exist: {self.id}")

    def update(self, name: object, description: object, scope: object, add_allowed_values: object,
               by: Provenance) -> None:
        """Lakekeeper's update: name, description (absent removes it) and scope replaced, the scope only widened,
        allowed values only added (to an enumerated definition)."""
        self.ensure_live()
        name, description, scope = check_tag_name(name), check_description(description), check_scope(scope)
        narrowed = [s for s in self.scope if s not in scope]
        if narrowed:
            raise TagScopeNarrowed(f"Tag definition scope cannot be narrowed. Removed scopes: {', '.join(narrowed)}")
        added: list[str] = []
        if add_allowed_values is not None:
            if self.value_kind != ENUMERATED:
                raise InvalidTagDefinition("Only an enumerated tag definition takes allowed values")
            added = [v for v in _check_values(add_allowed_values) if v not in self.allowed_values]
        if (name, description, scope, added) != (self.name, self.description, self.scope, []):
            self._updated(name=name, description=description, scope=scope, added_values=added, actor=by.actor,
                          request_id=by.request_id)

    def check_value(self, value: object) -> str | None:
        if value is not None and not isinstance(value, str):
            raise InvalidTagValue("A tag value is a string")
        if self.value_kind == MARKER:
            if value is not None:
                raise InvalidTagValue("Marker tags do not take a value")
        elif self.value_kind == FREE_TEXT:
            if not value:
                raise InvalidTagValue("A value is required for this tag")
            if len(value) > MAX_VALUE_LENGTH or _control(value):
                raise InvalidTagValue(f"A tag value must be at most {MAX_VALUE_LENGTH} characters without control "
                                      "characters")
        elif value is None:
            raise InvalidTagValue("A value is required for this tag")
        elif value not in self.allowed_values:
            raise InvalidTagValue("Value is not in the allowed values for this tag")
        return value

    def apply(self, warehouse_id: UUID, target: Target, value: object, by: Provenance) -> bool:
        """Attaches the tag, or changes its value there; the same value again records nothing (returns False)."""
        self.ensure_live()
        if target[0] not in self.scope:
            raise TagScopeNotAllowed(f"Tag does not allow scope `{target[0]}`")
        checked = self.check_value(value)
        if self.attachments.get(target) == (warehouse_id, checked):
            return False
        self._applied(project_id=self.project_id, name=self.name, warehouse_id=warehouse_id, target_type=target[0],
                      target_id=target[1], field_id=target[2], value=checked, actor=by.actor,
                      request_id=by.request_id)
        return True

    def remove(self, target: Target, by: Provenance) -> bool:
        """Idempotent, as Lakekeeper's: removing a tag that is not attached records nothing."""
        self.ensure_live()
        attached = self.attachments.get(target)
        if attached is None:
            return False
        self._removed(project_id=self.project_id, name=self.name, warehouse_id=attached[0], target_type=target[0],
                      target_id=target[1], field_id=target[2], actor=by.actor, request_id=by.request_id)
        return True

    def delete(self, by: Provenance) -> None:
        """The service has made sure no attachment's target still exists; what is left of them goes with it."""
        self.ensure_live()
        for target in sorted(self.attachments, key=lambda t: (t[0], str(t[1]), t[2] or 0)):
            self.remove(target, by)
        self._deleted(project_id=self.project_id, name=self.name, actor=by.actor, request_id=by.request_id)

    @event(Updated)
    def _updated(self, name: str, description: str | None, scope: list[str], added_values: list[str], actor: str,
                 request_id: str) -> None:
        self.name, self.description, self.scope = name, description, list(scope)
        self.allowed_values = [*self.allowed_values, *added_values]

    @event(Applied)
    def _applied(self, project_id: UUID, name: str, warehouse_id: UUID, target_type: str, target_id: UUID,
                 field_id: int | None, value: str | None, actor: str, request_id: str) -> None:
        self.attachments[(target_type, target_id, field_id)] = (warehouse_id, value)

    @event(Removed)
    def _removed(self, project_id: UUID, name: str, warehouse_id: UUID, target_type: str, target_id: UUID,
                 field_id: int | None, actor: str, request_id: str) -> None:
        self.attachments.pop((target_type, target_id, field_id), None)

    @event(Deleted)
    def _deleted(self, project_id: UUID, name: str, actor: str, request_id: str) -> None:
        self.deleted = True
