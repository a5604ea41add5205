"""The pure parts of maintenance policies (lakeledger/domain/maintenance_policy.py): settings recorded in one
canonical form, strict refusals, the aggregate recording only changes, and the merge that makes an effective policy
naming each setting's source."""

from uuid import uuid4

import pytest

from lakeledger.domain.maintenance_policy import (
    DEFAULT,
    DEFAULTS,
    ORPHAN_FILE_REMOVAL,
    POLICY_TYPES,
    SNAPSHOT_EXPIRY,
    InvalidMaintenancePolicy,
    Level,
    MaintenancePolicy,
    Source,
    UnknownPolicyType,
    check_parameters,
    effective,
    setting_names,
)
from lakeledger.domain.provenance import Provenance

BY = Provenance("someone", "req-1")


def test_every_type_has_a_default_for_each_of_its_settings_and_nothing_else():
    for policy_type in POLICY_TYPES:
        assert list(DEFAULTS[policy_type]) and set(DEFAULTS[policy_type]) == set(setting_names(policy_type))
        # the defaults are themselves valid settings
        assert check_parameters(policy_type, DEFAULTS[policy_type]) == DEFAULTS[policy_type]


def test_settings_are_recorded_in_canonical_form():
    assert check_parameters(SNAPSHOT_EXPIRY, {"max-snapshot-age": "PT36H", "enabled": None,
                                              "min-snapshots-to-keep": 2}) == {
        "max-snapshot-age": "P1DT12H", "min-snapshots-to-keep": 2}
    assert check_parameters(ORPHAN_FILE_REMOVAL, {"min-orphan-age": "P1D"}) == {"min-orphan-age": "P1D"}


@pytest.mark.parametrize("bad", [{"enabled": "true"}, {"enabled": 0}, {"min-snapshots-to-keep": 1.0},
                                 {"min-snapshots-to-keep": True}, {"max-snapshot-age": 3600},
                                 {"max-snapshot-age": "P99999D"}, {"max-snapshot-age": "7 days"},
                                 {"max-snapshot-age": "48:00:00"}, {"min_snapshots_to_keep": 2}, {}, {"enabled": None},
                                 [], "x"])
def test_strict_refusals(bad):
    with pytest.raises(InvalidMaintenancePolicy):
        check_parameters(SNAPSHOT_EXPIRY, bad)


def test_the_orphan_age_floor_is_a_day():
    with pytest.raises(InvalidMaintenancePolicy, match="min-orphan-age"):
        check_parameters(ORPHAN_FILE_REMOVAL, {"min-orphan-age": "PT23H59M59S"})
    with pytest.raises(UnknownPolicyType):
        check_parameters("system.defrag", {"enabled": True})


def test_the_aggregate_records_changes_only():
    table = uuid4()
    policies = MaintenancePolicy.set(None, uuid4(), "table", table, SNAPSHOT_EXPIRY, {"enabled": True}, BY)
    assert policies is not None and policies.policies == {SNAPSHOT_EXPIRY: {"enabled": True}}
    assert MaintenancePolicy.set(policies, policies.warehouse_id, "table", table, SNAPSHOT_EXPIRY,
                                 {"enabled": True}, BY) is None
    assert MaintenancePolicy.remove(policies, ORPHAN_FILE_REMOVAL, BY) is None
    assert MaintenancePolicy.remove(policies, SNAPSHOT_EXPIRY, BY) is policies and policies.policies == {}
    events = policies.collect_events()
    assert [type(e).__name__ for e in events] == ["Set", "Removed"]
    assert all((e.actor, e.request_id, e.target_id) == ("someone", "req-1", table) for e in events)
    # the log's events rebuild the same state
    again = None
    for e in events:
        again = e.mutate(again)
    assert again is not None and again.policies == {} and again.version == 2


def test_the_nearest_level_supplies_each_setting_else_the_default():
    table, ns, wh = (Source("table", uuid4(), ("a", "t")), Source("namespace", uuid4(), ("a",)),
                     Source("warehouse", uuid4(), ("wh",)))
    levels = [Level(table, {SNAPSHOT_EXPIRY: {"min-snapshots-to-keep": 9}}),
              Level(ns, {SNAPSHOT_EXPIRY: {"min-snapshots-to-keep": 3, "max-snapshot-age": "P2D"}}),
              Level(wh, {SNAPSHOT_EXPIRY: {"enabled": True, "max-snapshot-age": "P9D"}})]
    merged = effective(levels)[SNAPSHOT_EXPIRY]
    assert {k: (s.value, s.source.kind) for k, s in merged.items()} == {
        "enabled": (True, "warehouse"), "schedule-interval": ("PT6H", DEFAULT),
        "max-snapshot-age": ("P2D", "namespace"), "min-snapshots-to-keep": (9, "table"),
        "trigger-snapshots": (100, DEFAULT)}
    assert merged["max-snapshot-age"].source.json() == {"type": "namespace", "id": str(ns.id), "name": ["a"]}
    assert effective([])[ORPHAN_FILE_REMOVAL]["min-orphan-age"].source.json() == {"type": "default"}
