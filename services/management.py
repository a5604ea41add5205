"""Server, projects and warehouses: the Management API's commands."""

import os
from uuid import UUID, uuid4

from lakeledger.domain.errors import (
    AlreadyExists,
    BadRequest,
    CommitFailed,
    NoSuchProject,
    Unsupported,
)
from lakeledger.domain.name_claim import WAREHOUSE
from lakeledger.domain.names import server_aggregate_id
from lakeledger.domain.project import DEFAULT_PROJECT_ID, DEFAULT_PROJECT_NAME, Project
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.server import Server
from lakeledger.domain.storage_profile import FileStorageProfile
from lakeledger.domain.warehouse import (
    Warehouse,
    parse_delete_profile,
    parse_drop_purge_default,
    parse_storage_profile,
)
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.services import resolve
from lakeledger.services.conditions import warehouse_has_no_namespaces, warehouse_has_no_pending_deletions
from lakeledger.services.unit_of_work import Ledger


class ManagementService:
    def __init__(self, ledger: Ledger, server_id: UUID):
        self.ledger = ledger
        self.server_id = server_id

    def is_bootstrapped(self) -> bool:
        return self.ledger.log.get(Server, server_aggregate_id(self.server_id)) is not None

    def bootstrap(self, accept_terms_of_use: bool, is_operator: bool, by: Provenance,
                  with_default_project: bool) -> None:
        def command() -> None:
            server = Server.bootstrap(server_aggregate_id(self.server_id), self.server_id, accept_terms_of_use,
                                      is_operator, by, already=self.is_bootstrapped())
            self.ledger.append(server)

        self.ledger.retrying(command)
        if with_default_project:
            self.ensure_default_project(by)

    def ensure_default_project(self, by: Provenance) -> None:
        if self.ledger.log.get(Project, DEFAULT_PROJECT_ID) is not None:
            return
        try:
            self.ledger.append(Project.create(DEFAULT_PROJECT_ID, DEFAULT_PROJECT_NAME, by))
        except ConcurrentChange:
            pass  # another process created it at the same moment

    def create_project(self, name: str, project_id: UUID | None, by: Provenance) -> UUID:
        pid = project_id or uuid4()

        def command() -> UUID:
            if self.ledger.log.get(Project, pid) is not None:
                raise AlreadyExists(f"Project already exists: {pid}")
            self.ledger.append(Project.create(pid, name, by))
            return pid

        return self.ledger.retrying(command, AlreadyExists, f"Project already exists: {pid}")

    def project(self, project_id: UUID) -> Project:
        found = self.ledger.log.get(Project, project_id)
        if found is None:
            raise NoSuchProject(f"Project does not exist: {project_id}")
        return found

    def rename_project(self, project_id: UUID, new_name: str, by: Provenance) -> None:
        def command() -> None:
            project = self.project(project_id)
            project.rename(new_name, by)
            self.ledger.append(project)

        self.ledger.retrying(command)

    def create_warehouse(self, project_id: UUID, name: str, storage_profile: object, storage_credential: object,
                         delete_profile: object, by: Provenance, drop_purge_default: object = None) -> UUID:
        profile = parse_storage_profile(storage_profile)
        deletes = parse_delete_profile(delete_profile)
        purge_default = parse_drop_purge_default(drop_purge_default)
        if not isinstance(profile, FileStorageProfile):
            raise Unsupported(f"Storage of type {profile.type} is not available in this release; use type 'file'")
        if storage_credential is not None:
            raise BadRequest("A file storage profile takes no storage-credential")
        _prepare_directory(profile)

        def command() -> UUID:
            self.project(project_id)
            other = self.ledger.queries.overlapping_warehouse(profile.base_location())
            if other is not None:
                raise BadRequest(f"Storage location overlaps the location of warehouse {other}")
            warehouse_id = uuid4()
            claim = self.ledger.claim(WAREHOUSE, project_id, name, warehouse_id, "Warehouse", by)
            warehouse = Warehouse.create(warehouse_id, project_id, name, profile, deletes, by, purge_default)
            self.ledger.append(claim, warehouse)
            return warehouse_id

        return self.ledger.retrying(command, AlreadyExists, f"Warehouse already exists: {name}")

    def ensure_warehouse(self, project_id: UUID, name: str, storage_profile: dict, by: Provenance) -> None:
        if self.ledger.holder(WAREHOUSE, project_id, name) is not None:
            return
        try:
            self.create_warehouse(project_id, name, storage_profile, None, None, by)
        except AlreadyExists:
            pass  # another process created it at the same moment

    def rename_warehouse(self, warehouse_id: str, new_name: str, by: Provenance) -> None:
        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            if new_name == wh.name:
                return
            claim = self.ledger.claim(WAREHOUSE, wh.project_id, new_name, wh.id, "Warehouse", by)
            old = self.ledger.release(WAREHOUSE, wh.project_id, wh.name, wh.id, by)
            wh.rename(new_name, by)
            self.ledger.append(old, claim, wh)

        self.ledger.retrying(command, AlreadyExists, f"Warehouse already exists: {new_name}")

    def set_active(self, warehouse_id: str, active: bool, by: Provenance) -> None:
        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.activate(by) if active else wh.deactivate(by)
            self.ledger.append(wh)

        self.ledger.retrying(command, CommitFailed)

    def delete_warehouse(self, warehouse_id: str, force: bool, by: Provenance) -> None:
        """A warehouse must be empty, with no soft-deleted objects waiting for expiry nor purges pending; ``force``
        only overrides its protection."""
        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            claim = self.ledger.release(WAREHOUSE, wh.project_id, wh.name, wh.id, by)
            wh.delete(force, by)
            self.ledger.append(claim, wh, conditions=[warehouse_has_no_namespaces(wh.id, wh.name),
                                                      warehouse_has_no_pending_deletions(wh.id, wh.name)])

        self.ledger.retrying(command)

    def set_delete_profile(self, warehouse_id: str, delete_profile: object, by: Provenance) -> None:
        profile = parse_delete_profile(delete_profile, required=True)

        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.set_delete_profile(profile, by)
            self.ledger.append(wh)

        self.ledger.retrying(command)

    def set_drop_purge_default(self, warehouse_id: str, value: object, by: Provenance) -> None:
        value = parse_drop_purge_default(value, required=True)

        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.set_drop_purge_default(value, by)
            self.ledger.append(wh)

        self.ledger.retrying(command)


def _prepare_directory(profile: FileStorageProfile) -> None:
    path = profile.local_path(profile.location)
    try:
        os.makedirs(path, exist_ok=True)
    except (OSError, ValueError) as e:
        raise BadRequest(f"Cannot use {profile.location} as warehouse storage: {getattr(e, 'strerror', None) or e}") \
            from None
    if not os.access(path, os.W_OK):
        raise BadRequest(f"Cannot use {profile.location} as warehouse storage: not writable")
