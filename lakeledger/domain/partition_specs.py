"""Partition fields sent without their ids.

The REST spec makes a partition field's ``field-id`` optional, and clients omit it (iceberg-rust does, on create
and on add-spec). Java's reference server binds such a spec with ``PartitionSpec.Builder``, which numbers each
field without an id one above the highest id before it, starting at 1000; so do we. The numbering depends on the
spec alone, never on the table, so a spec kept in the log as it was sent numbers the same on every replay."""

from typing import Any

# Java's PartitionSpec builder numbers partition fields from 1000 (PARTITION_DATA_ID_START)
FIRST_PARTITION_FIELD_ID = 1000


def numbered_partition_fields(spec: Any) -> Any:
    """``spec`` (a partition spec as JSON) with every field that lacks `field-id` numbered; anything else as it is,
    for the model to refuse."""
    if not isinstance(spec, dict) or not isinstance(spec.get("fields"), list):
        return spec
    fields, last = [], FIRST_PARTITION_FIELD_ID - 1
    for field in spec["fields"]:
        if isinstance(field, dict) and field.get("field-id", field.get("field_id")) is None:
            last += 1
            field = {**{k: v for k, v in field.items() if k not in ("field-id", "field_id")}, "field-id": last}
        elif isinstance(field, dict) and isinstance(field.get("field-id"), int):
            last = max(last, field["field-id"])
        fields.append(field)
    return {**spec, "fields": fields}
