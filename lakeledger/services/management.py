"""Server, projects and warehouses: the Management API's commands."""

import contextlib
from collections.abc import Callable
from typing import Any, TypeVar
from uuid import UUID, uuid4

from lakeledger.authz.objects import obj, user
from lakeledger.domain.errors import (
    AlreadyExists,
    BadRequest,
    CommitFailed,
    NoSuchProject,
)
from lakeledger.domain.format_versions import ALL_VERSIONS, FormatVersionPolicy
from lakeledger.domain.grant import Grant, grant_aggregate_id
from lakeledger.domain.maintenance import MaintenanceMode, maintenance_aggregate_id
from lakeledger.domain.name_claim import WAREHOUSE
from lakeledger.domain.names import CASE_INSENSITIVE, server_aggregate_id
from lakeledger.domain.project import DEFAULT_PROJECT_ID, DEFAULT_PROJECT_NAME, Project
from lakeledger.domain.provenance import ANONYMOUS, SYSTEM, Provenance
from lakeledger.domain.role import ROLE_IDENT, Role
from lakeledger.domain.server import Server
from lakeledger.domain.storage_credential import SecretRef, StorageCredential, parse_storage_credential
from lakeledger.domain.storage_profile import StorageProfile
from lakeledger.domain.tag import TAG_NAME, TagDefinition
from lakeledger.domain.warehouse import (
    SELF_MANAGED,
    Warehouse,
    parse_delete_profile,
    parse_drop_purge_default,
    parse_name_matching,
    parse_storage_profile,
    parse_time_travel_retention,
)
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.secretstore import SecretStore
from lakeledger.services import resolve
from lakeledger.services.conditions import (
    project_has_no_warehouses,
    project_holds_only,
    warehouse_has_no_namespaces,
    warehouse_has_no_pending_deletions,
)
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage.checks import prove_access

T = TypeVar("T")


class ManagementService:
    def __init__(self, ledger: Ledger, server_id: UUID, secrets: SecretStore,
                 project_views: tuple[ProjectionDriver, ...] = ()):
        self.ledger = ledger
        self.server_id = server_id
        self.secrets = secrets
        self.project_views = project_views  # the users-roles and tags read models, which a project's deletion changes

    def set_read_only(self, read_only: bool, by: Provenance) -> None:
        """Read-only maintenance mode on or off, recorded as an event (the API processes follow the read model)."""
        def command() -> None:
            mode = self.ledger.log.get(MaintenanceMode, maintenance_aggregate_id(self.server_id))
            if mode is None:
                if not read_only:
                    return  # never switched on: nothing to record
                mode = MaintenanceMode.start(self.server_id, read_only, by)
            else:
                mode.switch(read_only, by)
            self.ledger.append(mode)

        self.ledger.retrying(command)

    def is_bootstrapped(self) -> bool:
        return self.ledger.log.get(Server, server_aggregate_id(self.server_id)) is not None

    def bootstrap(self, accept_terms_of_use: bool, is_operator: bool, by: Provenance,
                  with_default_project: bool) -> None:
        def command() -> None:
            server = Server.bootstrap(server_aggregate_id(self.server_id), self.server_id, accept_terms_of_use,
                                      is_operator, by, already=self.is_bootstrapped())
            self.ledger.append(server, self._first_admin(is_operator, by))

        self.ledger.retrying(command)
        if with_default_project:
            self.ensure_default_project(by)

    def _first_admin(self, is_operator: bool, by: Provenance) -> Grant | None:
        """Who bootstraps administers the server (``operator`` if it said so, as in Lakekeeper): a grant like any
        other, recorded with the bootstrap. An anonymous bootstrap (no identity provider) makes nobody admin."""
        if by.actor in (ANONYMOUS, SYSTEM):
            return None
        server, relation, grantee = (
            obj("server", self.server_id),
            "operator" if is_operator else "admin",
            user(by.actor),
        )
        known = self.ledger.log.get(Grant, grant_aggregate_id(server, relation, grantee))
        return Grant.add(known, server, relation, grantee, by)

    def ensure_default_project(self, by: Provenance) -> None:
        if self.ledger.log.get(Project, DEFAULT_PROJECT_ID) is not None:
            return
        with contextlib.suppress(ConcurrentChange):  # another process created it at the same moment
            self.ledger.append(Project.create(DEFAULT_PROJECT_ID, DEFAULT_PROJECT_NAME, by))

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
        if found is None or found.deleted:
            raise NoSuchProject(f"Project does not exist: {project_id}")
        return found

    def delete_project(self, project_id: UUID, by: Provenance) -> None:
        """Refused (409 ProjectNotEmpty) while the project holds a warehouse, active or not, as Lakekeeper does;
        its roles and tag definitions (and their names' claims) are deleted with it, in the same append."""
        def command() -> None:
            project = self.project(project_id)
            held = self.ledger.queries.project_holdings(project_id)
            roles = [r for r in (self.ledger.log.get(Role, i) for i in held.roles) if r is not None and not r.deleted]
            definitions = [d for d in (self.ledger.log.get(TagDefinition, i) for i in held.tag_definitions)
                           if d is not None and not d.deleted]
            released = []
            for role in roles:
                role.delete(by)
                released.append(self.ledger.release(ROLE_IDENT, project_id, role.ident, role.id, by))
            for definition in definitions:
                definition.delete(by)
                released.append(self.ledger.release(TAG_NAME, project_id, definition.name, definition.id, by,
                                                    CASE_INSENSITIVE))
            project.delete(by)
            self.ledger.append(*roles, *definitions, *released, project,
                               conditions=[project_has_no_warehouses(project.id, project.name),
                                           project_holds_only(project.id, held.roles, held.tag_definitions)],
                               views=self.project_views)

        self.ledger.retrying(command)

    def rename_project(self, project_id: UUID, new_name: str, by: Provenance) -> None:
        def command() -> None:
            project = self.project(project_id)
            project.rename(new_name, by)
            self.ledger.append(project)

        self.ledger.retrying(command)

    def create_warehouse(self, project_id: UUID, name: str, storage_profile: object, storage_credential: object,
                         delete_profile: object, by: Provenance, drop_purge_default: object = None,
                         name_matching: object = None, format_versions: FormatVersionPolicy = ALL_VERSIONS,
                         managed_by: str = SELF_MANAGED) -> UUID:
        """``format_versions``: a policy other than every version is a FormatVersionPolicySet appended with the
        creation."""
        profile = parse_storage_profile(storage_profile)
        matching = parse_name_matching(name_matching)
        deletes = parse_delete_profile(delete_profile)
        purge_default = parse_drop_purge_default(drop_purge_default)
        credential = parse_storage_credential(storage_credential, profile)

        def command(secret: SecretRef | None) -> UUID:
            self.project(project_id)
            other = self.ledger.queries.overlapping_warehouse(profile.base_location())
            if other is not None:
                raise BadRequest(f"Storage location overlaps the location of warehouse {other}")
            warehouse_id = uuid4()
            claim = self.ledger.claim(WAREHOUSE, project_id, name, warehouse_id, "Warehouse", by)
            warehouse = Warehouse.create(warehouse_id, project_id, name, profile, deletes, by, purge_default, secret,
                                         matching)
            warehouse.set_format_version_policy(format_versions, by)
            warehouse.set_managed_by(managed_by, by)
            self.ledger.append(claim, warehouse)
            return warehouse_id

        return self._with_new_secret(profile, credential, lambda secret: self.ledger.retrying(
            lambda: command(secret), AlreadyExists, f"Warehouse already exists: {name}"))

    def test_storage(self, storage_profile: object, storage_credential: object) -> None:
        """What creating a warehouse on this storage would prove first (write, read, list, delete under the
        location; an STS credential when asked for), without creating it or keeping the credential; a failure is
        the same 400 a create would get."""
        profile = parse_storage_profile(storage_profile)
        prove_access(profile, parse_storage_credential(storage_credential, profile))

    def change_storage(self, warehouse_id: str, storage_profile: object, storage_credential: object,
                       by: Provenance) -> None:
        """A new profile (and credential) for the same location, proven to work before it is recorded."""
        profile = parse_storage_profile(storage_profile)
        credential = parse_storage_credential(storage_credential, profile)
        resolve.warehouse_aggregate(self.ledger, warehouse_id)  # a missing warehouse is a 404 before any probe

        def command(secret: SecretRef | None) -> SecretRef | None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            replaced = wh.secret()
            wh.change_storage(profile, secret, by)
            self.ledger.append(wh)
            return replaced

        self._forget(self._with_new_secret(profile, credential, lambda secret: self.ledger.retrying(
            lambda: command(secret))))

    def rotate_credential(self, warehouse_id: str, storage_credential: object, by: Provenance) -> None:
        profile = resolve.warehouse_aggregate(self.ledger, warehouse_id).profile()
        credential = parse_storage_credential(storage_credential, profile)

        def command(secret: SecretRef | None) -> SecretRef | None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            replaced = wh.secret()
            wh.rotate_credential(secret, by)
            self.ledger.append(wh)
            return replaced

        self._forget(self._with_new_secret(profile, credential, lambda secret: self.ledger.retrying(
            lambda: command(secret))))

    def _with_new_secret(self, profile: StorageProfile, credential: StorageCredential | None,
                         command: Callable[[SecretRef | None], T]) -> T:
        """Proves the storage works with ``credential``, keeps the credential in the secret store and runs
        ``command`` with its reference; a command that fails leaves no secret behind."""
        if credential is not None:
            self.secrets.ensure_available()  # before any probe: without an encryption key, refuse at once
        prove_access(profile, credential)
        secret = self.secrets.put(credential.model_dump(by_alias=True)) if credential is not None else None
        try:
            return command(secret)
        except BaseException:
            if secret is not None:
                self.secrets.delete(secret.secret_id)
            raise

    def _forget(self, replaced: SecretRef | None) -> None:
        """A superseded credential is of no further use (reads, purges and past views all use the current one)."""
        if replaced is not None:
            self.secrets.delete(replaced.secret_id)

    def ensure_warehouse(self, project_id: UUID, name: str, storage_profile: dict[str, Any], by: Provenance) -> None:
        if self.ledger.holder(WAREHOUSE, project_id, name) is not None:
            return
        with contextlib.suppress(AlreadyExists):  # another process created it at the same moment
            self.create_warehouse(project_id, name, storage_profile, None, None, by)

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
        def command() -> SecretRef | None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            claim = self.ledger.release(WAREHOUSE, wh.project_id, wh.name, wh.id, by)
            wh.delete(force, by)
            self.ledger.append(claim, wh, conditions=[warehouse_has_no_namespaces(wh.id, wh.name),
                                                      warehouse_has_no_pending_deletions(wh.id, wh.name)])
            return wh.secret()

        self._forget(self.ledger.retrying(command))

    def set_delete_profile(self, warehouse_id: str, delete_profile: object, by: Provenance) -> None:
        profile = parse_delete_profile(delete_profile, required=True)

        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.set_delete_profile(profile, by)
            self.ledger.append(wh)

        self.ledger.retrying(command)

    def set_managed_by(self, warehouse_id: str, managed_by: str, by: Provenance) -> None:
        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.set_managed_by(managed_by, by)
            self.ledger.append(wh)

        self.ledger.retrying(command)

    def set_format_version_policy(self, warehouse_id: str, policy: FormatVersionPolicy, by: Provenance) -> None:
        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.set_format_version_policy(policy, by)
            self.ledger.append(wh)

        self.ledger.retrying(command)

    def set_time_travel_retention(self, warehouse_id: str, value: object, by: Provenance) -> None:
        value = parse_time_travel_retention(value)

        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.set_time_travel_retention(value, by)
            self.ledger.append(wh)

        self.ledger.retrying(command)

    def set_drop_purge_default(self, warehouse_id: str, value: object, by: Provenance) -> None:
        value = parse_drop_purge_default(value, required=True)

        def command() -> None:
            wh = resolve.warehouse_aggregate(self.ledger, warehouse_id)
            wh.set_drop_purge_default(value, by)
            self.ledger.append(wh)

        self.ledger.retrying(command)

