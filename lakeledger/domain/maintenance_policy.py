"""Maintenance policies: how the catalog is to look after its tables (compaction of data files and of manifests,
snapshot expiry, orphan-file removal), set on a warehouse, a namespace or a table and inherited downwards.

The four policy types and their parameters follow Apache Polaris's inheritable ``system.*`` policies, in this
catalog's kebab-case JSON, with the trigger thresholds and the schedule a runner needs. Each object holds, per type,
only the settings someone set on it; what an object's policy *is* comes from merging, setting by setting, the
object's own settings over its namespace's, its parent namespaces', then the warehouse's, then the defaults
(``effective``), and every setting says where it came from. So a table can override one setting (keep 10
snapshots) and inherit the rest (the namespace's age limit).

The settings of one object are one aggregate (id derived from the object), so two requests changing one object's
policies race on one aggregate and exactly one wins per version; an object is named by its id, so a rename, a
move or a soft drop and undrop keep its policies."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any
from uuid import UUID, uuid5

from eventsourcing.utils import get_topic
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from lakeledger.domain.base import CatalogAggregate, OpensOrContinues
from lakeledger.domain.errors import BadRequest
from lakeledger.domain.provenance import Provenance

WAREHOUSE, NAMESPACE, TABLE = "warehouse", "namespace", "table"
TARGET_TYPES = (WAREHOUSE, NAMESPACE, TABLE)
DEFAULT = "default"  # where a setting nobody set comes from

DATA_COMPACTION = "system.data-compaction"
METADATA_COMPACTION = "system.metadata-compaction"
SNAPSHOT_EXPIRY = "system.snapshot-expiry"
ORPHAN_FILE_REMOVAL = "system.orphan-file-removal"

MIB = 2**20

# Below this age a file that no snapshot references may still be one an in-flight write has staged and not yet
# committed (a long Spark job writes its data files for hours before its one commit): deleting it would make that
# commit point at a missing file. A day is the smallest age Iceberg's own guidance leaves room for (its default is
# three days), and longer than any write this catalog's vended credentials let run unrenewed.
ORPHAN_AGE_FLOOR = timedelta(days=1)


class InvalidMaintenancePolicy(BadRequest):
    error_type = "InvalidMaintenancePolicy"


class UnknownPolicyType(BadRequest):
    error_type = "UnknownPolicyType"


def _iso_duration(value: object) -> object:
    """Durations are ISO-8601 strings (``P7D``, ``PT6H``): a bare number would leave its unit to a guess. pydantic also
    reads ``7 days`` and ``02:00:00``, which are not ISO-8601: only what starts with the designator ``P`` goes on."""
    if not isinstance(value, str) or not value.startswith("P"):
        raise ValueError("a duration is an ISO-8601 string such as P7D or PT6H")
    return value


def _duration(low: timedelta, high: timedelta, description: str) -> Any:
    return Field(default=None, ge=low, le=high, strict=False, description=description)


Duration = Annotated[timedelta, BeforeValidator(_iso_duration)]
SCHEDULE = "How often the table is checked (and the action run when its trigger holds): an ISO-8601 duration"


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class _Parameters(BaseModel):
    """The settings one object sets for one type: every one optional (an absent one is inherited), nothing else
    accepted, no type coerced (``"5"`` is not 5, ``1`` is not true)."""

    model_config = ConfigDict(extra="forbid", strict=True, alias_generator=_kebab, populate_by_name=False)

    enabled: StrictBool | None = Field(default=None, description="Whether the action runs at all")
    schedule_interval: Duration | None = _duration(timedelta(minutes=5), timedelta(days=365), SCHEDULE)


class DataCompaction(_Parameters):
    """Rewrites small data files into files of the target size (Iceberg's ``rewrite_data_files``)."""

    target_file_size_bytes: StrictInt | None = Field(default=None, ge=1 * MIB, le=16 * 1024 * MIB)
    min_input_files: StrictInt | None = Field(default=None, ge=2, le=100_000,
                                              description="A file group is rewritten only with this many files")
    trigger_small_files: StrictInt | None = Field(
        default=None, ge=1, le=10_000_000,
        description="Runs when the table has more than this many files smaller than 3/4 of the target size")
    rewrite_position_deletes: StrictBool | None = Field(
        default=None, description="Also compacts position delete files (``rewrite_position_delete_files``)")


class MetadataCompaction(_Parameters):
    """Rewrites manifests (Iceberg's ``rewrite_manifests``)."""

    target_manifest_size_bytes: StrictInt | None = Field(default=None, ge=1 * MIB, le=1024 * MIB)
    trigger_manifests: StrictInt | None = Field(default=None, ge=1, le=10_000_000,
                                                description="Runs when the current snapshot has more manifests")


class SnapshotExpiry(_Parameters):
    """Expires old snapshots (Iceberg's ``expire_snapshots``); branches and tags keep what they need."""

    max_snapshot_age: Duration | None = _duration(timedelta(hours=1), timedelta(days=36_500),
                                                  "Snapshots older than this may expire")
    min_snapshots_to_keep: StrictInt | None = Field(default=None, ge=1, le=1_000_000,
                                                    description="Never fewer snapshots than this are kept")
    trigger_snapshots: StrictInt | None = Field(default=None, ge=1, le=100_000_000,
                                                description="Runs when the table has more snapshots than this")


class OrphanFileRemoval(_Parameters):
    """Deletes files under the table's location that no metadata references (``remove_orphan_files``)."""

    min_orphan_age: Duration | None = _duration(
        ORPHAN_AGE_FLOOR, timedelta(days=36_500),
        "Only files older than this are deleted; never less than a day (an in-flight write's staged files)")


MODELS: dict[str, type[_Parameters]] = {DATA_COMPACTION: DataCompaction, METADATA_COMPACTION: MetadataCompaction,
                                        SNAPSHOT_EXPIRY: SnapshotExpiry, ORPHAN_FILE_REMOVAL: OrphanFileRemoval}
POLICY_TYPES = tuple(MODELS)

# what holds where nobody set anything: off, with Iceberg's own defaults for the rest
DEFAULTS: dict[str, dict[str, Any]] = {
    DATA_COMPACTION: {"enabled": False, "schedule-interval": "PT1H", "target-file-size-bytes": 512 * MIB,
                      "min-input-files": 5, "trigger-small-files": 100, "rewrite-position-deletes": True},
    METADATA_COMPACTION: {"enabled": False, "schedule-interval": "P1D", "target-manifest-size-bytes": 8 * MIB,
                          "trigger-manifests": 100},
    SNAPSHOT_EXPIRY: {"enabled": False, "schedule-interval": "PT6H", "max-snapshot-age": "P5D",
                      "min-snapshots-to-keep": 1, "trigger-snapshots": 100},
    ORPHAN_FILE_REMOVAL: {"enabled": False, "schedule-interval": "P7D", "min-orphan-age": "P3D"},
}


def setting_names(policy_type: str) -> list[str]:
    """A type's settings, in its model's order."""
    return [field.alias or name for name, field in MODELS[policy_type].model_fields.items()]


def check_policy_type(policy_type: object) -> str:
    if policy_type not in MODELS:
        raise UnknownPolicyType(f"Unknown policy type {policy_type!r}: one of {', '.join(POLICY_TYPES)}")
    return str(policy_type)


def check_parameters(policy_type: str, parameters: object) -> dict[str, Any]:
    """The settings as they are recorded: validated by the type's model, in its canonical JSON (durations as
    ISO-8601, e.g. ``PT36H`` for ``P1DT12H``), only what was given."""
    model = MODELS[check_policy_type(policy_type)]
    if not isinstance(parameters, dict):
        raise InvalidMaintenancePolicy("A policy's settings are a JSON object")
    try:
        checked = model.model_validate(parameters)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
                             for err in e.errors()[:3])
        raise InvalidMaintenancePolicy(f"Invalid {policy_type} policy: {problems}") from None
    recorded = checked.model_dump(mode="json", by_alias=True, exclude_none=True)
    if not recorded:
        raise InvalidMaintenancePolicy("A policy sets at least one setting (DELETE removes the object's own)")
    return recorded


def policies_id(target_type: str, target_id: UUID) -> UUID:
    return uuid5(_POLICIES, f"{target_type}:{target_id}")


_POLICIES = UUID("3c9a51e2-7d04-5b8f-a6e1-0f2b9c4d8e17")


class MaintenancePolicy(CatalogAggregate):
    """The maintenance policies set on one object (warehouse, namespace or table), per type."""

    class _Either(OpensOrContinues):
        """An event that may open the aggregate's history (the object's first policy) or continue it."""

        warehouse_id: UUID
        target_type: str
        target_id: UUID
        policy_type: str

    class Set(_Either):
        """The object's settings of one type, replaced whole by ``parameters`` (validated when recorded)."""

        parameters: dict[str, Any]

        def apply(self, aggregate: "MaintenancePolicy") -> None:
            aggregate.policies[self.policy_type] = dict(self.parameters)

    class Removed(_Either):
        """The object no longer sets anything of this type: it inherits all of it."""

        def apply(self, aggregate: "MaintenancePolicy") -> None:
            aggregate.policies.pop(self.policy_type, None)

    def __init__(self, warehouse_id: UUID, target_type: str, target_id: UUID, policy_type: str, actor: str,
                 request_id: str, parameters: dict[str, Any] | None = None):
        self.warehouse_id, self.target_type, self.target_id = warehouse_id, target_type, target_id
        self.policies: dict[str, dict[str, Any]] = {}

    @classmethod
    def set(cls, found: "MaintenancePolicy | None", warehouse_id: UUID, target_type: str, target_id: UUID,
            policy_type: str, parameters: object, by: Provenance) -> "MaintenancePolicy | None":
        """The object's policies with a ``Set`` pending; None when they already say exactly this."""
        checked = check_parameters(policy_type, parameters)
        if found is not None and found.policies.get(policy_type) == checked:
            return None
        return cls._change(cls.Set, found, warehouse_id, target_type, target_id, policy_type, by,
                           parameters=checked)

    @classmethod
    def remove(cls, found: "MaintenancePolicy | None", policy_type: str,
               by: Provenance) -> "MaintenancePolicy | None":
        """With a ``Removed`` pending; None when nothing of the type is set (removing again records nothing)."""
        check_policy_type(policy_type)
        if found is None or policy_type not in found.policies:
            return None
        return cls._change(cls.Removed, found, found.warehouse_id, found.target_type, found.target_id, policy_type,
                           by)

    @classmethod
    def _change(cls, event_class: type[_Either], found: "MaintenancePolicy | None", warehouse_id: UUID,
                target_type: str, target_id: UUID, policy_type: str, by: Provenance,
                **extra: Any) -> "MaintenancePolicy":
        fields = {"warehouse_id": warehouse_id, "target_type": target_type, "target_id": target_id,
                  "policy_type": policy_type, "actor": by.actor, "request_id": by.request_id, **extra}
        if found is None:
            return cls._create(event_class, id=policies_id(target_type, target_id), **fields)
        found.trigger_event(event_class, originator_topic=get_topic(cls), **fields)
        return found


# --- the effective policy -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Source:
    """Where a setting comes from: an object (its kind, id and name: a namespace's path, a table's namespace and
    name) or, for what nobody set, the defaults (``kind`` DEFAULT, no id)."""

    kind: str
    id: UUID | None = None
    name: tuple[str, ...] = ()

    def json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"type": self.kind}
        if self.id is not None:
            body["id"] = str(self.id)
            body["name"] = list(self.name)
        return body


@dataclass(frozen=True)
class Level:
    """One object on the way from the asked object up to its warehouse, with the settings it sets per type."""

    source: Source
    policies: dict[str, dict[str, Any]]


@dataclass(frozen=True)
class Setting:
    value: Any
    source: Source


def effective(levels: Sequence[Level]) -> dict[str, dict[str, Setting]]:
    """Per type, per setting, the value that holds and where it comes from: the nearest level that sets it
    (``levels`` nearest first: the object, its namespace, ..., the warehouse), else the default."""
    found: dict[str, dict[str, Setting]] = {}
    for policy_type in POLICY_TYPES:
        settings: dict[str, Setting] = {}
        for name in setting_names(policy_type):
            for level in levels:
                own = level.policies.get(policy_type) or {}
                if name in own:
                    settings[name] = Setting(own[name], level.source)
                    break
            else:
                settings[name] = Setting(DEFAULTS[policy_type][name], Source(DEFAULT))
        found[policy_type] = settings
    return found
