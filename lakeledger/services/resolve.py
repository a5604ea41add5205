"""Finding what a command acts on by the names clients use: namespaces and tables through the name
claims in the log, a warehouse's settings through the catalog read model (kept current by the
append transaction itself)."""

from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar
from uuid import UUID

import orjson

from lakeledger.domain.errors import (
    NoSuchNamespace,
    NoSuchWarehouse,
    WarehouseInactive,
)
from lakeledger.domain.format_versions import ALL_VERSIONS, FormatVersionPolicy
from lakeledger.domain.name_claim import NAMESPACE, TABULAR
from lakeledger.domain.names import EXACT, dotted, name_key, path_key
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.storage_credential import SecretRef
from lakeledger.domain.storage_profile import DeleteProfile, StorageProfile
from lakeledger.domain.tabular import Tabular
from lakeledger.domain.warehouse import ACTIVE, PURGE, Warehouse, parse_delete_profile, parse_storage_profile
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.projections.catalog_queries import WarehouseRow
from lakeledger.services.unit_of_work import Ledger

T = TypeVar("T", bound=Tabular)


@dataclass(frozen=True)
class WarehouseSettings:
    """What commands on namespaces and tables need of their warehouse. Read from the catalog read
    model, which the append transaction itself keeps current, so it is as fresh as the log."""

    id: UUID
    name: str
    storage_profile: StorageProfile
    delete_profile: DeleteProfile
    drop_purge_default: str = PURGE
    storage_secret: SecretRef | None = None
    name_matching: str = EXACT  # of the names inside it (lakeledger/domain/names.py)
    format_versions: FormatVersionPolicy = ALL_VERSIONS

    def profile(self) -> StorageProfile:
        return self.storage_profile

    def secret(self) -> SecretRef | None:
        return self.storage_secret


def _warehouse_id(warehouse_id: UUID | str) -> UUID:
    try:
        return warehouse_id if isinstance(warehouse_id, UUID) else UUID(str(warehouse_id))
    except ValueError:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}") from None


def warehouse(ledger: Ledger, warehouse_id: UUID | str) -> WarehouseSettings:
    """An active warehouse's settings."""
    return _active(ledger.queries.warehouse(_warehouse_id(warehouse_id)), warehouse_id)


@dataclass(frozen=True)
class TabularHint:
    """What the read model says of a tabular by name: its id and its last version in the log (None, None when no
    live tabular has that name). A hint: the log decides."""

    id: UUID | None
    version: int | None


def warehouse_and_tabular(ledger: Ledger, warehouse_id: UUID | str, namespace: tuple[str, ...],
                          name: str) -> tuple[WarehouseSettings, TabularHint]:
    """``warehouse`` and the hint for one tabular in it, in one query."""
    row = ledger.queries.warehouse_and_tabular(_warehouse_id(warehouse_id), namespace, name)
    settings = _active(row.warehouse if row else None, warehouse_id)
    assert row is not None  # _active refused a missing warehouse
    return settings, TabularHint(row.tabular_id, row.tabular_version)


def _active(row: WarehouseRow | None, warehouse_id: UUID | str) -> WarehouseSettings:
    if row is None:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
    if row.status != ACTIVE:
        raise WarehouseInactive(f"Warehouse {row.name} is deactivated")
    return settings_of(row)


@lru_cache(maxsize=1024)
def storage_settings(warehouse_id: UUID, profile_json: str, secret_json: str | None) -> WarehouseSettings:
    """Just the storage of a warehouse (profile and credential reference), from their JSON: for loadTable's fast
    path, which reads them with the table and hands out cached access without another lookup."""
    # by keyword: positionally the secret would land in drop_purge_default, and the fast path would look up
    # the credential cache without it, miss every time and leave each vended load to the slow route
    return WarehouseSettings(warehouse_id, "", parse_storage_profile(orjson.loads(profile_json)),
                             parse_delete_profile(None),
                             storage_secret=SecretRef.from_event(orjson.loads(secret_json)) if secret_json else None)


def settings_of(row: WarehouseRow) -> WarehouseSettings:
    """A warehouse's settings from its read-model row."""
    return WarehouseSettings(row.id, row.name, parse_storage_profile(row.storage_profile),
                             parse_delete_profile(row.delete_profile), row.drop_purge_default,
                             SecretRef.from_event(row.storage_secret), row.name_matching,
                             FormatVersionPolicy(tuple(row.allowed_format_versions), row.default_format_version))


def warehouse_aggregate(ledger: Ledger, warehouse_id: UUID | str) -> Warehouse:
    """The warehouse itself, for commands that change it."""
    found = ledger.log.get(Warehouse, _warehouse_id(warehouse_id))
    if found is None or found.deleted:
        raise NoSuchWarehouse(f"Warehouse does not exist: {warehouse_id}")
    return found


def namespace(ledger: Ledger, wh: WarehouseSettings, path: tuple[str, ...]) -> Namespace:
    """The live namespace at ``path``, found level by level through the name claims.

    The claims and the namespace are separate reads: a move appended between them (of this namespace or of one
    above it) leaves claims read before it and a namespace read after it, now elsewhere. Acting on it then would
    act on a namespace the request did not name (a drop of ``s`` dropping the namespace just moved to ``d``), so such
    a torn read is a lost race: the command runs again on what won (lakeledger/services/namespace_moves.py)."""
    container = wh.id
    for level in path:
        holder = ledger.holder(NAMESPACE, container, level, wh.name_matching)
        if holder is None:
            raise NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
        container = holder
    found = ledger.log.get(Namespace, container)
    if found is None or found.dropped:
        raise NoSuchNamespace(f"Namespace does not exist: {dotted(path)}")
    if path_key(found.path, wh.name_matching) != path_key(path, wh.name_matching):
        raise ConcurrentChange(f"{dotted(path)} moved to {dotted(found.path)} while it was being resolved")
    return found


def table_id(ledger: Ledger, wh: WarehouseSettings, ns: Namespace, name: str) -> UUID | None:
    return ledger.holder(TABULAR, ns.id, name, wh.name_matching)


def holder_kind(ledger: Ledger, wh: WarehouseSettings, ns: Namespace, name: str) -> str | None:
    """"Table", "View" or "Generic table" when one holds ``name`` in ``ns`` (all tabulars share one name space)."""
    holder = table_id(ledger, wh, ns, name)
    if holder is None:
        return None
    found = ledger.log.get(Tabular, holder)
    return found.word if found is not None else "Table"


def tabular(ledger: Ledger, wh: WarehouseSettings, cls: type[T], ns: Namespace, name: str) -> T | None:
    """The live table or view of class ``cls`` that holds ``name`` in ``ns``, or None.

    The name claim and the tabular are two reads: a rename or a drop appended between them leaves a claim read
    before it and a tabular read after it, which has moved on to another name (a rename applied to it then would
    act on a table the request did not name; a release of the old claim would find nothing to release and append
    nothing that could conflict). Such a torn read is a lost race: the command runs again on what won."""
    holder = table_id(ledger, wh, ns, name)
    found = ledger.log.get(cls, holder) if holder is not None else None
    if found is None or found.dropped:
        return None
    if found.namespace_id != ns.id or name_key(found.name, wh.name_matching) != name_key(name, wh.name_matching):
        raise ConcurrentChange(f"{dotted([*ns.path, name])} was renamed while it was being resolved")
    return found

