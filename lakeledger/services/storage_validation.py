"""Dry runs of creating a warehouse and of changing its storage (Lakekeeper's ``warehouse-creation-validation`` and
``storage/validate-*``): the checks the change would make, each reported passed, failed or skipped with why, and
nothing recorded, no credential kept. The storage probe is the connection test a create runs
(lakeledger/storage/checks.py: write, read, list and delete a probe object, and an STS credential when the profile
vends them); it is one probe, so the finer checks Lakekeeper names are reported as covered by it."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID

from lakeledger.domain.errors import AlreadyExists, BadRequest, CatalogError, WarehouseManaged
from lakeledger.domain.format_versions import parse_format_version_policy
from lakeledger.domain.name_claim import WAREHOUSE
from lakeledger.domain.names import check_composed_name
from lakeledger.domain.storage_credential import StorageCredential, parse_storage_credential
from lakeledger.domain.storage_profile import StorageProfile
from lakeledger.domain.warehouse import (
    INSTANCE_ADMIN,
    MANAGED_BY,
    SELF_MANAGED,
    Warehouse,
    parse_delete_profile,
    parse_drop_purge_default,
    parse_storage_profile,
)
from lakeledger.secretstore import SecretStore
from lakeledger.services import resolve
from lakeledger.services.unit_of_work import Ledger
from lakeledger.storage.checks import prove_access

Status = Literal["passed", "failed", "skipped"]

PREREQUISITE = "A prerequisite check failed."
ONLY_CREATE = "Only applies when creating a warehouse."
ONLY_UPDATE = "Only applies when updating an existing warehouse."
_COVERED = "Not probed on its own: lakekeeper-read-write's one probe covers it"
_PROBE_PARTS = {
    "storage-client-initialized": f"{_COVERED} (it builds the storage client first).",
    "vended-credentials-issued": f"{_COVERED} when the profile vends credentials (an S3 profile with sts-enabled "
                                 "obtains a session credential scoped to the location); otherwise none are vended.",
    "vended-credentials-read-write": "Not probed: the probe does not read or write with the vended credential.",
    "vended-credentials-scope-enforced": "Not probed: the probe does not try the vended credential outside its "
                                         "scope.",
    "cleanup": f"{_COVERED} (it deletes the probe object it wrote).",
}


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    duration_ms: int | None = None
    error: CatalogError | None = None
    reason: str | None = None


@dataclass
class Report:
    checks: list[Check] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return all(c.status != "failed" for c in self.checks)

    def run(self, name: str, step: Callable[[], Any]) -> bool:
        """Runs ``step``; a CatalogError it raises is the check's failure (any other error is the request's)."""
        started = time.perf_counter()
        try:
            step()
        except CatalogError as e:
            self.checks.append(Check(name, "failed", _ms(started), error=e))
            return False
        self.checks.append(Check(name, "passed", _ms(started)))
        return True

    def skip(self, name: str, reason: str) -> None:
        self.checks.append(Check(name, "skipped", reason=reason))

    def probe(self, ready: bool, profile: Callable[[], StorageProfile],
              credential: Callable[[], StorageCredential | None]) -> None:
        """The storage probe and the checks it covers, in Lakekeeper's order."""
        if not ready:
            for name in ("storage-client-initialized", "lakekeeper-read-write", *list(_PROBE_PARTS)[1:]):
                self.skip(name, PREREQUISITE)
            return
        self.skip("storage-client-initialized", _PROBE_PARTS["storage-client-initialized"])
        self.run("lakekeeper-read-write", lambda: prove_access(profile(), credential()))
        for name in list(_PROBE_PARTS)[1:]:
            self.skip(name, _PROBE_PARTS[name])


def _ms(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


class StorageValidation:
    def __init__(self, ledger: Ledger, secrets: SecretStore):
        self.ledger = ledger
        self.secrets = secrets

    def creation(self, project_id: UUID, name: str, storage_profile: object, storage_credential: object,
                 delete_profile: object, drop_purge_default: object, allowed_format_versions: object = None,
                 default_format_version: object = None, managed_by: object = SELF_MANAGED,
                 may_manage: bool = True) -> Report:
        """``may_manage``: the caller may make a warehouse managed by instance-admin."""
        report = Report()
        parsed: dict[str, Any] = {}

        def well_formed() -> None:
            parsed["profile"] = parse_storage_profile(storage_profile)
            parsed["credential"] = parse_storage_credential(storage_credential, parsed["profile"])
            parse_delete_profile(delete_profile)
            parse_drop_purge_default(drop_purge_default)

        ready = report.run("profile-well-formed", well_formed)
        report.skip("profile-compatible", ONLY_UPDATE)
        report.skip("spec-mutable", ONLY_UPDATE)
        report.run("format-version-policy-consistent",
                   lambda: parse_format_version_policy(allowed_format_versions, default_format_version))
        def managed_by_allowed() -> None:
            if managed_by not in MANAGED_BY:
                raise BadRequest(f"managed-by must be one of {', '.join(MANAGED_BY)}, not {managed_by!r}")
            if managed_by == INSTANCE_ADMIN and not may_manage:
                raise WarehouseManaged("Only the server's admins and operators may create a warehouse managed by "
                                       "instance-admin")

        report.run("managed-by-allowed", managed_by_allowed)

        def name_free() -> None:
            check_composed_name(name, "Warehouse")
            if self.ledger.holder(WAREHOUSE, project_id, name) is not None:
                raise AlreadyExists(f"Warehouse already exists: {name}")

        report.run("warehouse-name-valid", name_free)

        def exclusive() -> None:
            other = self.ledger.queries.overlapping_warehouse(parsed["profile"].base_location())
            if other is not None:
                raise BadRequest(f"Storage location overlaps the location of warehouse {other}")

        if ready:
            report.run("location-exclusive", exclusive)
        else:
            report.skip("location-exclusive", PREREQUISITE)
        report.probe(ready, lambda: parsed["profile"], lambda: parsed["credential"])
        return report

    def new_profile(self, warehouse_id: str, storage_profile: object, storage_credential: object,
                    locked: CatalogError | None = None) -> Report:
        """Dry run of ``ManagementService.change_storage``; ``locked``: why the caller may not change the
        warehouse's settings (it is managed by instance-admin), if so."""
        warehouse = self._mutable(warehouse_id)
        report = Report()
        parsed: dict[str, Any] = {}

        def well_formed() -> None:
            parsed["profile"] = parse_storage_profile(storage_profile)
            parsed["credential"] = parse_storage_credential(storage_credential, parsed["profile"])

        ready = report.run("profile-well-formed", well_formed)
        if ready:
            report.run("profile-compatible", lambda: warehouse.check_same_location(parsed["profile"]))
        else:
            report.skip("profile-compatible", PREREQUISITE)
        report.skip("warehouse-name-valid", "Changing the storage does not change the warehouse's name.")
        report.skip("location-exclusive", "The location cannot change, so no overlap can arise.")
        report.run("spec-mutable", lambda: _mutable(warehouse, locked))
        report.skip("format-version-policy-consistent", ONLY_CREATE)
        report.skip("managed-by-allowed", ONLY_CREATE)
        report.probe(ready, lambda: parsed["profile"], lambda: parsed["credential"])
        return report

    def new_credential(self, warehouse_id: str, storage_credential: object,
                       locked: CatalogError | None = None) -> Report:
        """Dry run of ``ManagementService.rotate_credential``: the stored profile with the given credential."""
        warehouse = self._mutable(warehouse_id)
        profile = warehouse.profile()
        parsed: dict[str, Any] = {}

        def well_formed() -> None:
            if warehouse.storage_secret is None:
                raise BadRequest(f"Warehouse {warehouse.name} has {profile.type} storage, which takes no credential")
            parsed["credential"] = parse_storage_credential(storage_credential, profile)

        return self._stored(warehouse, well_formed, lambda: parsed["credential"],
                            "The stored storage profile is unchanged by a credential rotation.", locked=locked)

    def current(self, warehouse_id: str) -> Report:
        """The storage the warehouse runs with now (its stored profile and credential), active or not."""
        warehouse = resolve.warehouse_aggregate(self.ledger, warehouse_id)
        parsed: dict[str, Any] = {}

        def well_formed() -> None:
            secret = warehouse.secret()
            stored = self.secrets.get(secret.secret_id) if secret is not None else None
            parsed["credential"] = parse_storage_credential(stored, warehouse.profile())

        return self._stored(warehouse, well_formed, lambda: parsed["credential"],
                            "Validating the storage the warehouse runs with now.", mutable=False)

    def _stored(self, warehouse: Warehouse, well_formed: Callable[[], None],
                credential: Callable[[], StorageCredential | None], why_well_formed: str,
                mutable: bool = True, locked: CatalogError | None = None) -> Report:
        report = Report()
        ready = report.run("profile-well-formed", well_formed)
        report.skip("profile-compatible", "The storage profile is not changed, so there is nothing to be "
                                          "compatible with.")
        report.skip("warehouse-name-valid", "The warehouse's name is not changed.")
        report.skip("location-exclusive", "The location is not changed, so no overlap can arise.")
        if mutable:
            report.run("spec-mutable", lambda: _mutable(warehouse, locked))
        else:
            report.skip("spec-mutable", why_well_formed)
        report.skip("format-version-policy-consistent", ONLY_CREATE)
        report.skip("managed-by-allowed", ONLY_CREATE)
        report.probe(ready, warehouse.profile, credential)
        return report

    def _mutable(self, warehouse_id: str) -> Warehouse:
        """The warehouse a change would change: it must exist (404 otherwise, as the change would answer)."""
        return resolve.warehouse_aggregate(self.ledger, warehouse_id)



def _mutable(warehouse: Warehouse, locked: CatalogError | None) -> None:
    warehouse.ensure_live()
    if locked is not None:
        raise locked
