"""Scan planning's identifiers (lakeledger/domain/scan_plans.py): a plan id or plan task decodes to exactly the
plan it was made from, only for its own table, and anything else is an unknown plan."""

import base64
import uuid
from decimal import Decimal

import orjson
import pytest

from lakeledger.domain import scan_plans
from lakeledger.domain.scan_plans import PlanRequest, UnknownPlan, json_value

TABLE = uuid.uuid4()
PLAN = PlanRequest(table_id=TABLE, snapshot_id=2**62, start_snapshot_id=7,
                   filter={"type": "eq", "term": "région", "value": "é"}, select=("a", "b"), case_sensitive=False,
                   use_snapshot_schema=True, stats_fields=("a",))


def test_plan_ids_and_tasks_round_trip():
    for plan in (PLAN, PlanRequest(table_id=TABLE, snapshot_id=None)):
        assert scan_plans.decode_plan(scan_plans.encode_plan(plan), TABLE) == plan
        assert scan_plans.decode_task(scan_plans.encode_task(plan, 100, 200), TABLE) == (plan, 100, 200)


def test_a_plan_of_another_table_or_not_ours_is_unknown():
    plan_id, task = scan_plans.encode_plan(PLAN), scan_plans.encode_task(PLAN, 0, 1)
    with pytest.raises(UnknownPlan):
        scan_plans.decode_plan(plan_id, uuid.uuid4())
    with pytest.raises(UnknownPlan):
        scan_plans.decode_task(task, uuid.uuid4())
    # a plan id is not a plan task, nor the other way round
    with pytest.raises(UnknownPlan):
        scan_plans.decode_task(plan_id, TABLE)
    with pytest.raises(UnknownPlan):
        scan_plans.decode_plan(task, TABLE)

    def forged(prefix: str, fields: dict) -> str:
        return prefix + base64.urlsafe_b64encode(orjson.dumps(fields)).decode().rstrip("=")

    good = PLAN.to_json()
    for bad in ("", "p1.", "p1.%%%", "p1." + "A" * 7, "x" * 40,
                forged("p1.", {**good, "v": 2}), forged("p1.", {**good, "s": "1"}), forged("p1.", {**good, "s": True}),
                forged("p1.", {**good, "sel": "a"}), forged("p1.", [1, 2])):
        with pytest.raises(UnknownPlan):
            scan_plans.decode_plan(bad, TABLE)
    for span in ([1, 1], [2, 1], [-1, 3], [0], [0, "1"], [0, True], None):
        with pytest.raises(UnknownPlan):
            scan_plans.decode_task(forged("t1.", {**good, "m": span}), TABLE)


def test_chunks_cover_the_range_once():
    assert scan_plans.chunks(0, 3) == []
    assert scan_plans.chunks(7, 3) == [(0, 3), (3, 6), (6, 7)]
    assert scan_plans.chunks(6, 3) == [(0, 3), (3, 6)]


def test_values_are_written_as_icebergs_single_value_json():
    assert json_value("date", 19723) == "2024-01-01"
    assert json_value("time", 3_600_000_001) == "01:00:00.000001"
    assert json_value("timestamp", 1_704_067_200_000_000) == "2024-01-01T00:00:00.000000"
    assert json_value("timestamptz", 1_704_067_200_123_456) == "2024-01-01T00:00:00.123456+00:00"
    assert json_value("timestamp_ns", 1_704_067_200_000_000_001) == "2024-01-01T00:00:00.000000001"
    assert json_value("binary", b"\x01\xab") == "01AB"
    assert json_value("decimal(9, 2)", Decimal("1.50")) == "1.50"
    assert json_value("uuid", uuid.UUID(int=1)) == "00000000-0000-0000-0000-000000000001"
    assert json_value("long", 5) == 5 and json_value("string", "x") == "x" and json_value("boolean", True) is True
    assert json_value("int", None) is None
