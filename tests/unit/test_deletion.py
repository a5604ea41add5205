"""The life of a dropped object, as pure domain rules: soft or final, restorable until it expires, expired at
most once, purged at most once, and protected from drops without force."""

from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

from lakeledger.domain.deletion import MAX_EXPIRATION_SECONDS, expiry
from lakeledger.domain.errors import AlreadyExists, BadRequest, NotFound, Protected
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.storage_profile import FileStorageProfile, HardDelete, SoftDelete
from lakeledger.domain.table import CREATED_BY_REQUEST, Table
from lakeledger.domain.warehouse import Warehouse

BY = Provenance("ana", "req-1")
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(hours=2)


def _table() -> Table:
    return Table.create(uuid4(), uuid4(), uuid4(), ("sales",), "orders", "file:///w/a", "file:///w/a/m0.json",
                        CREATED_BY_REQUEST, {}, BY)


def test_the_profile_decides_when_a_drop_expires():
    assert expiry(HardDelete(), NOW) is None
    assert expiry(SoftDelete(**{"expiration-seconds": 60}), NOW) == NOW + timedelta(seconds=60)
    assert expiry(SoftDelete(**{"expiration-seconds": 60}), NOW, immediately=True) is None


def test_a_soft_drop_is_restorable_until_it_expires():
    table = _table()
    table.drop(True, NOW + timedelta(hours=1), False, BY)
    assert table.dropped and table.deletion.soft_dropped
    assert not table.expire(NOW, BY), "not due yet"
    table.undrop(uuid4(), ("sales",), NOW, BY)
    assert not table.dropped and not table.purge_requested
    assert not table.expire(LATER, BY), "an undropped table has no timer"

    table.drop(True, NOW + timedelta(hours=1), False, BY)
    with pytest.raises(NotFound, match="expired"):
        table.undrop(uuid4(), ("sales",), LATER, BY)
    assert table.expire(LATER, BY)
    assert not table.expire(LATER, BY), "a timer fires once"
    with pytest.raises(NotFound):
        table.undrop(uuid4(), ("sales",), NOW, BY)
    events = [type(e).__name__ for e in table.collect_events()]
    assert events.count("Expired") == 1


def test_a_purge_is_recorded_once_and_only_when_asked_for_and_final():
    table = _table()
    table.drop(True, NOW + timedelta(hours=1), False, BY)
    assert not table.record_purge(3, BY), "a soft-deleted table keeps its files"
    table.expire(LATER, BY)
    assert table.record_purge(3, BY)
    assert not table.record_purge(3, BY)
    kept = _table()
    kept.drop(False, None, False, BY)
    assert not kept.awaits_purge and not kept.record_purge(1, BY)


def test_a_hard_drop_is_final_and_cannot_be_registered_back_while_soft():
    table = _table()
    table.drop(False, None, False, BY)
    with pytest.raises(NotFound):
        table.undrop(uuid4(), ("sales",), NOW, BY)
    soft = _table()
    soft.drop(False, NOW + timedelta(hours=1), False, BY)
    with pytest.raises(AlreadyExists, match="undrop it"):
        soft.register_again(uuid4(), uuid4(), ("sales",), "orders", "file:///w/a", "file:///w/a/m0.json", {}, BY)


def test_protection_refuses_drops_without_force():
    table = _table()
    table.set_protection(True, BY)
    with pytest.raises(Protected) as refused:
        table.drop(True, None, False, BY)
    assert refused.value.error_type == "TableProtected"
    table.drop(True, None, True, BY)
    assert table.dropped

    ns = Namespace.create(uuid4(), uuid4(), None, ("sales",), {}, BY)
    ns.set_protection(True, BY)
    with pytest.raises(Protected):
        ns.drop(None, False, BY)
    ns.drop(NOW + timedelta(hours=1), True, BY, contents={"namespaces": [], "tabulars": [uuid4()]})
    assert ns.deletion.soft_dropped and all(isinstance(i, str) for i in ns.contents["tabulars"])

    wh = Warehouse.create(uuid4(), uuid4(), "w", FileStorageProfile(location="file:///w"), HardDelete(), BY)
    wh.set_protection(True, BY)
    with pytest.raises(Protected):
        wh.delete(False, BY)
    wh.delete(True, BY)


def test_setting_the_same_profile_or_protection_again_records_nothing():
    wh = Warehouse.create(uuid4(), uuid4(), "w", FileStorageProfile(location="file:///w"), HardDelete(), BY)
    wh.collect_events()
    wh.set_delete_profile(HardDelete(), BY)
    wh.set_protection(False, BY)
    assert wh.collect_events() == []
    wh.set_delete_profile(SoftDelete(**{"expiration-seconds": 5}), BY)
    assert wh.deletes() == SoftDelete(**{"expiration-seconds": 5})


def test_an_expiration_past_100_years_is_refused_and_one_already_in_a_log_is_held_to_100_years():
    forever = SoftDelete(**{"expiration-seconds": 2 ** 63})
    with pytest.raises(BadRequest):
        Warehouse.create(uuid4(), uuid4(), "w", FileStorageProfile(location="file:///w"), forever, BY)
    wh = Warehouse.create(uuid4(), uuid4(), "w", FileStorageProfile(location="file:///w"), HardDelete(), BY)
    with pytest.raises(BadRequest):
        wh.set_delete_profile(SoftDelete(**{"expiration-seconds": MAX_EXPIRATION_SECONDS + 1}), BY)
    wh.set_delete_profile(SoftDelete(**{"expiration-seconds": MAX_EXPIRATION_SECONDS}), BY)
    assert expiry(forever, NOW) == NOW + timedelta(seconds=MAX_EXPIRATION_SECONDS)
