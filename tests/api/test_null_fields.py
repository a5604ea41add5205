"""`null` is absent wherever Iceberg's REST spec makes a request field optional (iceberg-go sends `"properties": null`
and `"removals": null`), and partition fields may come without `field-id` (iceberg-rust sends them so): they are
numbered as Java's PartitionSpec builder numbers them. A required field sent as `null` stays bad input."""

from support import SCHEMA, VIEW_VERSION


def _ok(r, status: int = 200):
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text)
    return r.json() if r.content else None


def test_null_optional_fields_are_absent(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["n"], "properties": None}))
    _ok(client.post(f"{p}/namespaces/n/properties", json={"removals": None, "updates": {"k": "v"}}))
    _ok(client.post(f"{p}/namespaces/n/properties", json={"removals": ["k"], "updates": None}))
    assert "k" not in _ok(client.get(f"{p}/namespaces/n"))["properties"]

    created = _ok(client.post(f"{p}/namespaces/n/tables", json={
        "name": "t", "schema": {**SCHEMA, "schema-id": None, "identifier-field-ids": None},
        "location": None, "write-order": None, "stage-create": None, "properties": None,
        "partition-spec": {"spec-id": None, "fields": [{"source-id": 1, "transform": "bucket[4]", "name": "b"}]}}))
    assert created["metadata"]["partition-specs"][0]["fields"][0]["field-id"] == 1000
    _ok(client.post(f"{p}/namespaces/n/tables/t", json={"identifier": None, "requirements": [], "updates": [
        {"action": "set-properties", "updates": {"p": "1"}}]}))
    _ok(client.post(f"{p}/namespaces/n/views", json={
        "name": "v", "schema": {**SCHEMA, "schema-id": None},
        "view-version": {**VIEW_VERSION, "default-namespace": ["n"]},
        "properties": {}, "location": None}))
    _ok(client.post(f"{p}/namespaces/n/views/v", json={"identifier": None, "requirements": None, "updates": [
        {"action": "set-properties", "updates": {"q": "1"}}]}))


def test_partition_fields_without_ids_are_numbered_from_1000(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["n"]}))
    fields = [{"source-id": 1, "transform": "bucket[2]", "name": "a"},
              {"source-id": 1, "transform": "bucket[3]", "name": "b"},
              {"source-id": 2, "transform": "identity", "name": "c"}]
    created = _ok(client.post(f"{p}/namespaces/n/tables", json={
        "name": "t", "schema": SCHEMA, "partition-spec": {"fields": fields}}))
    spec = created["metadata"]["partition-specs"][0]
    assert [(f["name"], f["field-id"]) for f in spec["fields"]] == [("a", 1000), ("b", 1001), ("c", 1002)]
    assert created["metadata"]["last-partition-id"] == 1002


def test_an_added_spec_without_field_ids_is_numbered_as_java_binds_it(client, warehouse, db):
    """add-spec (iceberg-rust's partition evolution) with fields without `field-id`: numbered from 1000 as Java's
    server binds it; the log keeps the update as it was sent, and the read model reads it back the same."""
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["n"]}))
    created = _ok(client.post(f"{p}/namespaces/n/tables", json={"name": "evolved", "schema": SCHEMA}))
    spec = {"fields": [{"source-id": 1, "transform": "bucket[4]", "name": "a_bucket"},
                       {"source-id": 2, "transform": "identity", "name": "b"}]}
    committed = _ok(client.post(f"{p}/namespaces/n/tables/evolved", json={
        "requirements": [{"type": "assert-table-uuid", "uuid": created["metadata"]["table-uuid"]}],
        "updates": [{"action": "add-spec", "spec": spec}, {"action": "set-default-spec", "spec-id": -1}]}))
    default = committed["metadata"]["default-spec-id"]
    [added] = [s for s in committed["metadata"]["partition-specs"] if s["spec-id"] == default]
    assert [(f["name"], f["field-id"]) for f in added["fields"]] == [("a_bucket", 1000), ("b", 1001)]
    assert committed["metadata"]["last-partition-id"] == 1001
    loaded = _ok(client.get(f"{p}/namespaces/n/tables/evolved"))
    assert loaded["metadata"]["partition-specs"] == committed["metadata"]["partition-specs"]
    [logged] = db.execute("SELECT convert_from(state, 'UTF8') FROM lakeledger_events WHERE topic LIKE '%%Committed'"
                          " AND originator_id = %s", (created["metadata"]["table-uuid"],)).fetchall()
    assert '"field-id"' not in logged[0].split('"add-spec"', 1)[1].split("set-default-spec")[0]


def test_a_required_field_sent_as_null_is_refused_and_appends_nothing(client, warehouse, log_length):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["n"]}))
    before = log_length()
    for path, body in [(f"{p}/namespaces", {"namespace": None}),
                       (f"{p}/namespaces/n/tables", {"name": None, "schema": SCHEMA}),
                       (f"{p}/namespaces/n/tables", {"name": "t", "schema": None}),
                       (f"{p}/tables/rename", {"source": None, "destination": {"namespace": ["n"], "name": "x"}})]:
        r = client.post(path, json=body)
        assert r.status_code == 400, (path, body, r.text)
        assert r.json()["error"]["type"] == "BadRequestException", r.text
    assert log_length() == before
