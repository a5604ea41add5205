from datetime import timedelta
from typing import Any
from uuid import UUID

import isodate
from eventsourcing.domain import event
from pydantic import TypeAdapter, ValidationError

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.deletion import check_expiration
from lakeledger.domain.errors import BadRequest, NoSuchWarehouse, Protected, WarehouseInactive
from lakeledger.domain.format_versions import ALL_VERSIONS, FormatVersionPolicy
from lakeledger.domain.json_types import JsonObject
from lakeledger.domain.maintenance_policy import Duration
from lakeledger.domain.managed_access import managed_access_changes
from lakeledger.domain.names import CASE_INSENSITIVE, EXACT, NAME_MATCHINGS, check_composed_name
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_credential import SecretRef
from lakeledger.domain.storage_profile import DeleteProfile, StorageProfile

ACTIVE = "active"
INACTIVE = "inactive"

# What a table drop that does not say `purgeRequested` does with the table's files (``drop-purge-default``):
# "purge" deletes them, as Lakekeeper does for the tables it manages (most engines never send the flag);
# "keep" leaves them, the REST spec's default (absent = false), so the last metadata file can be registered
# again after a plain `DROP TABLE` or Java's `dropTable(id)`.
PURGE = "purge"
KEEP = "keep"
DROP_PURGE_DEFAULTS = (PURGE, KEEP)

_storage_profiles = TypeAdapter(StorageProfile)
_delete_profiles = TypeAdapter(DeleteProfile)


def parse_storage_profile(raw: Any) -> StorageProfile:
    try:
        return _storage_profiles.validate_python(raw)
    except ValidationError as e:
        raise BadRequest(f"Invalid storage-profile: {_first_error(e)}") from None


def dump_storage_profile(profile: StorageProfile) -> JsonObject:
    return profile.model_dump(by_alias=True, exclude_none=True)


def parse_delete_profile(raw: Any, required: bool = False) -> DeleteProfile:
    if raw is None and required:
        raise BadRequest("delete-profile is required")
    try:
        return _delete_profiles.validate_python(raw if raw is not None else {"type": "hard"})
    except ValidationError as e:
        raise BadRequest(f"Invalid delete-profile: {_first_error(e)}") from None


def parse_name_matching(raw: Any) -> str:
    """A new warehouse's ``name-matching``: case-insensitive (Lakekeeper's rule) unless asked for."""
    if raw is None:
        return CASE_INSENSITIVE
    if not isinstance(raw, str) or raw not in NAME_MATCHINGS:
        raise BadRequest(f"name-matching must be \"case-insensitive\" or \"exact\", not {raw!r}")
    return raw


def parse_drop_purge_default(raw: Any, required: bool = False) -> str:
    if raw is None and not required:
        return PURGE
    if not isinstance(raw, str) or raw not in DROP_PURGE_DEFAULTS:
        raise BadRequest(f"drop-purge-default must be \"purge\" or \"keep\", not {raw!r}")
    return raw


# A time-travel retention shorter than an hour protects nothing a snapshot-expiry policy could remove (its
# max-snapshot-age is an hour at least); the upper bound is the policies' own.
RETENTION_BOUNDS = (timedelta(hours=1), timedelta(days=36_500))
_retentions = TypeAdapter(Duration | None)


def parse_time_travel_retention(raw: Any) -> str | None:
    """A ``time-travel-retention``: an ISO-8601 duration (as the maintenance policies take them) or null (none),
    answered in ISO-8601's own spelling (``PT48H`` is ``P2D``), so an equal duration is an equal string."""
    try:
        found = _retentions.validate_python(raw)
    except ValidationError as e:
        raise BadRequest(f"time-travel-retention: {e.errors()[0].get('msg')}") from None
    if found is None:
        return None
    low, high = RETENTION_BOUNDS
    if not low <= found <= high:
        raise BadRequest(f"time-travel-retention must lie between {isodate.duration_isoformat(low)} and "
                         f"{isodate.duration_isoformat(high)}, not {raw}")
    return str(isodate.duration_isoformat(found))


def retention_of(value: str | None) -> timedelta | None:
    """A recorded time-travel retention as a duration."""
    return None if value is None else isodate.parse_duration(value)


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg')}" if where else str(err.get("msg"))


SELF_MANAGED = "self-managed"
INSTANCE_ADMIN = "instance-admin"
MANAGED_BY = (SELF_MANAGED, INSTANCE_ADMIN)

class Warehouse(CatalogAggregate):
    """A named storage root inside a project; clients pick it by name as their Iceberg warehouse."""

    # class defaults, unannotated (eventsourcing would take an annotation for a field of the aggregate's creation):
    # every warehouse allows every version until a FormatVersionPolicySet says otherwise
    allowed_format_versions = ALL_VERSIONS.allowed
    default_format_version = ALL_VERSIONS.default
    managed_by = SELF_MANAGED
    managed_access = False  # until a ManagedAccessSet (lakeledger/authz/model.py: managed access)
    time_travel_retention = None  # until a TimeTravelRetentionSet (an ISO-8601 duration)

    class Created(CatalogAggregate.Created):
        """Version 2 added ``drop_purge_default``; warehouses created before it purge, as they always did.
        Version 3 added ``storage_secret``, the reference to the storage credential (file warehouses have none).
        Version 4 added ``name_matching`` (lakeledger/domain/names.py); the names in warehouses created before it
        keep matching exactly, as they always did."""

        class_version = 4

        project_id: UUID
        name: str
        storage_profile: JsonObject
        delete_profile: JsonObject
        drop_purge_default: str
        storage_secret: JsonObject | None
        name_matching: str

        @staticmethod
        def upcast_v1_v2(state: JsonObject) -> None:
            state["drop_purge_default"] = PURGE

        @staticmethod
        def upcast_v2_v3(state: JsonObject) -> None:
            state["storage_secret"] = None

        @staticmethod
        def upcast_v3_v4(state: JsonObject) -> None:
            state["name_matching"] = EXACT

    class Renamed(CatalogAggregate.Event):
        old_name: str
        new_name: str

    class Deactivated(CatalogAggregate.Event):
        pass

    class Activated(CatalogAggregate.Event):
        pass

    class Deleted(CatalogAggregate.Event):
        name: str

    class DeleteProfileSet(CatalogAggregate.Event):
        delete_profile: JsonObject

    class DropPurgeDefaultSet(CatalogAggregate.Event):
        drop_purge_default: str

    class ManagedBySet(CatalogAggregate.Event):
        """``instance-admin``: the warehouse's own settings (storage, credential, delete profile, purge default,
        name, status, protection, format-version policy, deletion) change only by the server's admins and
        operators, whatever else the caller is granted (Lakekeeper 0.14); ``self-managed`` lifts it."""

        managed_by: str

    class FormatVersionPolicySet(CatalogAggregate.Event):
        """Which table format versions creates and upgrades may use, and a create's default (None: v2 where
        allowed, else the highest allowed; lakeledger/domain/format_versions.py)."""

        allowed_format_versions: list[int]
        default_format_version: int | None

    class ProtectionSet(CatalogAggregate.Event):
        protected: bool

    class TimeTravelRetentionSet(CatalogAggregate.Event):
        """How long a table's past stays readable (an ISO-8601 duration, or None: as long as its expiry policy
        keeps it): snapshot expiry run by the catalog's maintenance keeps every snapshot younger than this."""

        time_travel_retention: str | None

    class ManagedAccessSet(CatalogAggregate.Event):
        """Managed access on (or off): inside the warehouse, owning an object no longer gives the right to grant
        on it; only grant authority (``manage_grants`` on the warehouse or above, or where it was granted) does."""

        managed_access: bool

    class StorageChanged(CatalogAggregate.Event):
        """A new storage profile and credential, for the same location. The credential is a reference only."""

        storage_profile: JsonObject
        storage_secret: JsonObject | None

    class StorageCredentialRotated(CatalogAggregate.Event):
        storage_secret: JsonObject

    @event(Created)
    def __init__(self, id: UUID, project_id: UUID, name: str, storage_profile: JsonObject, delete_profile: JsonObject,
                 drop_purge_default: str, storage_secret: JsonObject | None, name_matching: str, actor: str,
                 request_id: str):
        self.name_matching = name_matching
        self.project_id = project_id
        self.storage_secret = storage_secret
        self.name = name
        self.storage_profile = storage_profile
        self.delete_profile = delete_profile
        self.drop_purge_default = drop_purge_default
        self.status = ACTIVE
        self.deleted = False
        self.protected = False

    @classmethod
    def create(cls, id: UUID, project_id: UUID, name: str, storage_profile: StorageProfile,
               delete_profile: DeleteProfile, by: Provenance, drop_purge_default: str = PURGE,
               storage_secret: SecretRef | None = None, name_matching: str = CASE_INSENSITIVE) -> "Warehouse":
        return cls(id=id, project_id=project_id, name=check_composed_name(name, "Warehouse"),
                   storage_profile=dump_storage_profile(storage_profile),
                   delete_profile=check_expiration(delete_profile).model_dump(by_alias=True),
                   drop_purge_default=parse_drop_purge_default(drop_purge_default, required=True),
                   storage_secret=storage_secret.as_event() if storage_secret else None,
                   name_matching=parse_name_matching(name_matching),
                   actor=by.actor, request_id=by.request_id)

    def profile(self) -> StorageProfile:
        return _storage_profiles.validate_python(self.storage_profile)

    def secret(self) -> SecretRef | None:
        return SecretRef.from_event(self.storage_secret)

    def change_storage(self, profile: StorageProfile, secret: SecretRef | None, by: Provenance) -> None:
        """Another way to reach the same place: the tables stay where they are, so the location (type, bucket and
        key prefix, or path) must not move."""
        self.ensure_live()
        self.check_same_location(profile)
        self._storage_changed(storage_profile=dump_storage_profile(profile),
                              storage_secret=secret.as_event() if secret else None,
                              actor=by.actor, request_id=by.request_id)

    def check_same_location(self, profile: StorageProfile) -> None:
        if profile.type != self.profile().type or profile.base_location() != self.profile().base_location():
            raise BadRequest(f"The new storage profile must keep the warehouse's location "
                             f"{self.profile().base_location()}; its tables live there")

    def rotate_credential(self, secret: SecretRef | None, by: Provenance) -> None:
        self.ensure_live()
        if self.storage_secret is None:
            raise BadRequest(f"Warehouse {self.name} has {self.profile().type} storage, which takes no credential")
        # the service read the profile before this command ran: it may have become one that needs a credential
        if secret is None:
            raise BadRequest(f"Warehouse {self.name} has {self.profile().type} storage, which needs a credential")
        self._storage_credential_rotated(storage_secret=secret.as_event(), actor=by.actor, request_id=by.request_id)

    def ensure_live(self) -> None:
        if self.deleted:
            raise NoSuchWarehouse(f"Warehouse does not exist: {self.id}")

    def ensure_active(self) -> None:
        self.ensure_live()
        if self.status != ACTIVE:
            raise WarehouseInactive(f"Warehouse {self.name} is deactivated")

    def rename(self, new_name: str, by: Provenance) -> None:
        self.ensure_live()
        check_composed_name(new_name, "Warehouse")
        if new_name != self.name:
            self._renamed(old_name=self.name, new_name=new_name, actor=by.actor, request_id=by.request_id)

    def deactivate(self, by: Provenance) -> None:
        self.ensure_live()
        if self.status == ACTIVE:
            self._deactivated(actor=by.actor, request_id=by.request_id)

    def activate(self, by: Provenance) -> None:
        self.ensure_live()
        if self.status != ACTIVE:
            self._activated(actor=by.actor, request_id=by.request_id)

    def delete(self, force: bool, by: Provenance) -> None:
        self.ensure_live()
        if self.protected and not force:
            raise Protected("warehouse", f"Warehouse {self.name} is protected; delete it with force=true "
                                         f"or remove the protection first")
        self._deleted(name=self.name, actor=by.actor, request_id=by.request_id)

    def deletes(self) -> DeleteProfile:
        return _delete_profiles.validate_python(self.delete_profile)

    def set_delete_profile(self, profile: DeleteProfile, by: Provenance) -> None:
        """Applies to drops made from now on; objects already soft-deleted keep the expiry they were given."""
        self.ensure_live()
        dumped = check_expiration(profile).model_dump(by_alias=True)
        if dumped != self.delete_profile:
            self._delete_profile_set(delete_profile=dumped, actor=by.actor, request_id=by.request_id)

    def set_drop_purge_default(self, value: str, by: Provenance) -> None:
        """Applies to drops made from now on; a drop records whether it purges when it is made."""
        self.ensure_live()
        value = parse_drop_purge_default(value, required=True)
        if value != self.drop_purge_default:
            self._drop_purge_default_set(drop_purge_default=value, actor=by.actor, request_id=by.request_id)

    def set_managed_by(self, managed_by: str, by: Provenance) -> None:
        self.ensure_live()
        if managed_by not in MANAGED_BY:
            raise BadRequest(f"managed-by must be one of {', '.join(MANAGED_BY)}, not {managed_by!r}")
        if managed_by != self.managed_by:
            self._managed_by_set(managed_by=managed_by, actor=by.actor, request_id=by.request_id)

    @event(ManagedBySet)
    def _managed_by_set(self, managed_by: str, actor: str, request_id: str) -> None:
        self.managed_by = managed_by

    def format_versions(self) -> FormatVersionPolicy:
        return FormatVersionPolicy(tuple(self.allowed_format_versions), self.default_format_version)

    def set_format_version_policy(self, policy: FormatVersionPolicy, by: Provenance) -> None:
        """Applies to creates and upgrades from now on; existing tables keep their versions."""
        self.ensure_live()
        if policy != self.format_versions():
            self._format_version_policy_set(allowed_format_versions=list(policy.allowed),
                                            default_format_version=policy.default, actor=by.actor,
                                            request_id=by.request_id)

    @event(FormatVersionPolicySet)
    def _format_version_policy_set(self, allowed_format_versions: list[int], default_format_version: int | None,
                                   actor: str, request_id: str) -> None:
        self.allowed_format_versions = tuple(allowed_format_versions)
        self.default_format_version = default_format_version

    def set_protection(self, protected: bool, by: Provenance) -> None:
        if not isinstance(protected, bool):
            raise BadRequest("protected must be true or false")
        self.ensure_live()
        if protected != self.protected:
            self._protection_set(protected=protected, actor=by.actor, request_id=by.request_id)

    def set_time_travel_retention(self, value: Any, by: Provenance) -> None:
        """Applies to expiry runs from now on; a snapshot already expired stays expired."""
        self.ensure_live()
        value = parse_time_travel_retention(value)
        if value != self.time_travel_retention:
            self._time_travel_retention_set(time_travel_retention=value, actor=by.actor, request_id=by.request_id)

    def set_managed_access(self, managed_access: bool, by: Provenance) -> None:
        self.ensure_live()
        if managed_access_changes(self.managed_access, managed_access):
            self._managed_access_set(managed_access=managed_access, actor=by.actor, request_id=by.request_id)

    @event(Renamed)
    def _renamed(self, old_name: str, new_name: str, actor: str, request_id: str) -> None:
        self.name = new_name

    @event(Deactivated)
    def _deactivated(self, actor: str, request_id: str) -> None:
        self.status = INACTIVE

    @event(Activated)
    def _activated(self, actor: str, request_id: str) -> None:
        self.status = ACTIVE

    @event(Deleted)
    def _deleted(self, name: str, actor: str, request_id: str) -> None:
        self.deleted = True

    @event(DeleteProfileSet)
    def _delete_profile_set(self, delete_profile: JsonObject, actor: str, request_id: str) -> None:
        self.delete_profile = delete_profile

    @event(DropPurgeDefaultSet)
    def _drop_purge_default_set(self, drop_purge_default: str, actor: str, request_id: str) -> None:
        self.drop_purge_default = drop_purge_default

    @event(StorageChanged)
    def _storage_changed(self, storage_profile: JsonObject, storage_secret: JsonObject | None, actor: str,
                         request_id: str) -> None:
        self.storage_profile = storage_profile
        self.storage_secret = storage_secret

    @event(StorageCredentialRotated)
    def _storage_credential_rotated(self, storage_secret: JsonObject, actor: str, request_id: str) -> None:
        self.storage_secret = storage_secret

    @event(ProtectionSet)
    def _protection_set(self, protected: bool, actor: str, request_id: str) -> None:
        self.protected = protected

    @event(TimeTravelRetentionSet)
    def _time_travel_retention_set(self, time_travel_retention: str | None, actor: str, request_id: str) -> None:
        self.time_travel_retention = time_travel_retention

    @event(ManagedAccessSet)
    def _managed_access_set(self, managed_access: bool, actor: str, request_id: str) -> None:
        self.managed_access = managed_access
