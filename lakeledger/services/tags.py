"""Governance tags: a project's tag definitions, and attaching them to warehouses, namespaces, tables, views,
generic tables and columns (lakeledger/domain/tag.py).

A definition's name is held by a case-insensitive name claim in its project, so two creations of one name at once
append to one claim and one of them wins. A tag is named on its target by the definition's name, looked up in the
target's warehouse's project. What involves more than the definition is checked inside the append, against the
read models as every earlier append left them (lakeledger/services/unit_of_work.py): the target still exists when
a tag is attached, and a definition being deleted is attached to nothing that can still come back."""

from uuid import UUID, uuid4

from psycopg import Cursor

from lakeledger.domain.errors import AlreadyExists, NoSuchProject, NoSuchTable, NoSuchWarehouse, NotFound
from lakeledger.domain.name_claim import NameClaim
from lakeledger.domain.names import CASE_INSENSITIVE, name_key
from lakeledger.domain.project import Project
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.table import Table
from lakeledger.domain.tag import (
    TAG_NAME,
    NoSuchTagDefinition,
    TagDefinition,
    TagDefinitionInUse,
    TagNameAlreadyExists,
    Target,
)
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.projections.tags_queries import kept_attachments, live_target
from lakeledger.services import resolve
from lakeledger.services.conditions import Condition, project_exists
from lakeledger.services.metadata_files import MetadataFiles
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage.registry import Storages


class ColumnNotFound(NotFound):
    error_type = "ColumnNotFound"


_MISSING = {"warehouse": NoSuchWarehouse, "table": NoSuchTable, "column": NoSuchTable}


class TagService:
    def __init__(self, ledger: Ledger, view: ProjectionDriver, files: MetadataFiles, storages: Storages):
        self.ledger = ledger
        self.view = view  # the tags read model, applied inside these appends
        self.files = files
        self.storages = storages

    # --- definitions -------------------------------------------------------------------------------------------

    def create(self, project_id: UUID, name: object, description: object, scope: object, value_kind: object,
               allowed_values: object, by: Provenance) -> UUID:
        definition_id = uuid4()
        checked = TagDefinition.create(definition_id, project_id, name, description, scope, value_kind,
                                       allowed_values, by)

        def command() -> UUID:
            if self.ledger.log.get(Project, project_id) is None:
                raise NoSuchProject(f"Project does not exist: {project_id}")
            fresh = TagDefinition.create(definition_id, project_id, checked.name, checked.description, checked.scope,
                                         checked.value_kind, checked.allowed_values or None, by)
            claim = self._claim(project_id, fresh.name, definition_id, by)
            self.ledger.append(claim, fresh, conditions=[project_exists(project_id)], views=(self.view,))
            return definition_id

        return self.ledger.retrying(command, TagNameAlreadyExists,
                                    f"A tag definition named {checked.name} already exists")

    def definition(self, project_id: UUID, definition_id: UUID) -> TagDefinition:
        found = self.ledger.log.get(TagDefinition, definition_id)
        if found is None or found.deleted or found.project_id != project_id:
            raise NoSuchTagDefinition(f"Tag definition does not exist in project {project_id}: {definition_id}")
        return found

    def update(self, project_id: UUID, definition_id: UUID, name: object, description: object, scope: object,
               add_allowed_values: object, by: Provenance) -> None:
        def command() -> None:
            definition = self.definition(project_id, definition_id)
            before = definition.name
            definition.update(name, description, scope, add_allowed_values, by)
            claims = []
            if name_key(definition.name, CASE_INSENSITIVE) != name_key(before, CASE_INSENSITIVE):
                # a new name is claimed, the old one given up (a change of case alone keeps its claim)
                claims = [self._claim(project_id, definition.name, definition_id, by),
                          self.ledger.release(TAG_NAME, project_id, before, definition_id, by, CASE_INSENSITIVE)]
            self.ledger.append(*claims, definition, views=(self.view,))

        self.ledger.retrying(command, TagNameAlreadyExists, "A tag definition of that name already exists")

    def delete(self, project_id: UUID, definition_id: UUID, by: Provenance) -> None:
        def command() -> None:
            definition = self.definition(project_id, definition_id)
            definition.delete(by)
            claim = self.ledger.release(TAG_NAME, project_id, definition.name, definition_id, by, CASE_INSENSITIVE)
            self.ledger.append(definition, claim, conditions=[_unused(definition_id, definition.name)],
                               views=(self.view,))

        self.ledger.retrying(command)

    def _claim(self, project_id: UUID, name: str, definition_id: UUID, by: Provenance) -> NameClaim:
        try:
            return self.ledger.claim(TAG_NAME, project_id, name, definition_id, "Tag definition", by,
                                     matching=CASE_INSENSITIVE)
        except AlreadyExists as e:
            raise TagNameAlreadyExists(f"{e.message} (tag names are unique in a project, case-insensitively)") \
                from None

    # --- attachments -------------------------------------------------------------------------------------------

    def by_name(self, warehouse_id: UUID, name: str) -> TagDefinition:
        """The definition named ``name`` (any case) in the warehouse's project."""
        row = self.ledger.queries.warehouse(warehouse_id)
        if row is None:
            raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
        holder = self.ledger.holder(TAG_NAME, row.project_id, name, CASE_INSENSITIVE)
        found = self.ledger.log.get(TagDefinition, holder) if holder is not None else None
        if found is None or found.deleted:
            raise NoSuchTagDefinition(f"Tag definition does not exist: {name}")
        return found

    def apply(self, warehouse_id: UUID, target: Target, name: str, value: object, by: Provenance) -> TagDefinition:
        """Attaches the tag (or sets its value there); returns the definition as it is after the append."""
        def command() -> TagDefinition:
            definition = self.by_name(warehouse_id, name)
            if definition.apply(warehouse_id, target, value, by):
                self.ledger.append(definition, conditions=[_live(warehouse_id, target)], views=(self.view,))
            return definition

        return self.ledger.retrying(command)

    def remove(self, warehouse_id: UUID, target: Target, name: str, by: Provenance) -> None:
        def command() -> None:
            definition = self.by_name(warehouse_id, name)
            if definition.remove(target, by):
                self.ledger.append(definition, views=(self.view,))

        self.ledger.retrying(command)

    def field_id(self, warehouse_id: UUID, table_id: UUID, column: str) -> int:
        """The Iceberg field id of ``column`` (nested fields dotted: ``address.zip``) in the table's current
        schema."""
        table = self.ledger.log.get(Table, table_id)
        if table is None or table.dropped or table.warehouse_id != warehouse_id:
            raise NoSuchTable(f"Table does not exist: {table_id}")
        wh = resolve.warehouse(self.ledger, warehouse_id)
        schema = self.files.parsed(table.metadata_location, self.storages.of(wh)).schema()
        try:
            return schema.find_field(column).field_id
        except ValueError:
            raise ColumnNotFound(f"Column does not exist in the table's current schema: {column}") from None


def _live(warehouse_id: UUID, target: Target) -> Condition:
    kind, target_id, _ = target

    def check(cur: Cursor) -> None:
        if not live_target(cur, kind, warehouse_id, target_id):
            missing = _MISSING.get(kind, NotFound)
            raise missing(f"{kind.capitalize()} does not exist in warehouse {warehouse_id}: {target_id}")
    return check


def _unused(definition_id: UUID, name: str) -> Condition:
    def check(cur: Cursor) -> None:
        count = kept_attachments(cur, definition_id)
        if count:
            raise TagDefinitionInUse(f"Tag definition {name} is still attached to {count} target(s): remove them "
                                     "first")
    return check
