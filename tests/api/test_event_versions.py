"""Event shapes change; stored events do not. An event carries its class version, and an event stored in
an older shape is upcast when read, by the aggregates and by the projections alike."""

import json
import os
import subprocess
import sys
import uuid

from support import VIEW_VERSION

from lakeledger.domain.view import View
from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.settings import PostgresSettings

REPLACED = "lakeledger.domain.view:View.Replaced"
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}


def _rebuild(pg_url, data_dir) -> None:
    env = {**os.environ, "LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir)}
    out = subprocess.run([sys.executable, "-m", "lakeledger.cli", "rebuild"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_a_v1_event_is_upcast_when_read(client, warehouse, db, pg_url, data_dir):
    p = warehouse["prefix"]
    client.post(f"{p}/namespaces", json={"namespace": ["ns"]})
    created = client.post(f"{p}/namespaces/ns/views", json={"name": "v", "schema": SCHEMA,
                                                             "view-version": VIEW_VERSION, "properties": {}})
    assert created.status_code == 200, created.text
    replaced = client.post(f"{p}/namespaces/ns/views/v", json={"requirements": [], "updates": [
        {"action": "set-properties", "updates": {"owner": "ana"}}]})
    assert replaced.status_code == 200, replaced.text
    view_id = uuid.UUID(replaced.json()["metadata"]["view-uuid"])
    location = replaced.json()["metadata"]["location"]

    version, state = db.execute(
        "SELECT originator_version, state FROM lakeledger_events WHERE originator_id = %s AND topic = %s",
        (view_id, REPLACED)).fetchone()
    stored = json.loads(bytes(state))
    assert stored["class_version"] == 2  # the current shape says which version it is

    # The same change as the v1 shape stored it: no version (v1) and no location.
    old = {k: v for k, v in stored.items() if k not in ("class_version", "location")}
    old["originator_version"] = version + 1
    old["metadata_location"] = stored["previous_metadata_location"]
    old["previous_metadata_location"] = stored["metadata_location"]
    db.execute("INSERT INTO lakeledger_events (originator_id, originator_version, topic, state)"
               " VALUES (%s, %s, %s, %s)", (view_id, version + 1, REPLACED, json.dumps(old).encode()))

    log = EventLog(PostgresSettings.from_url(pg_url), cache_size=0, pool_size=1)
    try:
        [event] = [e for e in log.events_of(view_id) if e.originator_version == version + 1]
        assert isinstance(event, View.Replaced) and event.location is None
        view = log.get(View, view_id)
        assert view.version == version + 1
        assert view.metadata_location == stored["previous_metadata_location"]
        assert view.location == location  # unchanged, as a v1 replace never moved a view
    finally:
        log.close()

    _rebuild(pg_url, data_dir)  # the projection reads the v1 event through the same upcaster
    row = db.execute("SELECT metadata_location, location FROM ll_tabulars WHERE id = %s", (view_id,)).fetchone()
    assert row == (stored["previous_metadata_location"], location)
    loaded = client.get(f"{p}/namespaces/ns/views/v")
    assert loaded.status_code == 200
    assert loaded.json()["metadata-location"] == stored["previous_metadata_location"]


DROPPED = "lakeledger.domain.tabular:Tabular.Dropped"


def test_a_v1_drop_is_read_as_final(client, warehouse, db, pg_url, data_dir):
    """Drops were final before soft deletion: a stored v1 drop is upcast with no expiry, so the table is not in
    the recycle bin and cannot be undropped, whatever the warehouse's profile now is."""
    p = warehouse["prefix"]
    client.post(f"/management/v1/warehouse/{warehouse['id']}/delete-profile",
                json={"delete-profile": {"type": "soft", "expiration-seconds": 3600}})
    client.post(f"{p}/namespaces", json={"namespace": ["ns"]})
    ids = {}
    for name in ("template", "old"):
        r = client.post(f"{p}/namespaces/ns/tables", json={"name": name, "schema": SCHEMA})
        ids[name] = uuid.UUID(r.json()["metadata"]["table-uuid"])
    assert client.delete(f"{p}/namespaces/ns/tables/template", params={"purgeRequested": "false"}).status_code == 204
    state = db.execute("SELECT state FROM lakeledger_events WHERE originator_id = %s AND topic = %s",
                       (ids["template"], DROPPED)).fetchone()[0]
    stored = json.loads(bytes(state))
    assert stored["class_version"] == 2 and stored["expires_at"] is not None

    version = db.execute("SELECT max(originator_version) FROM lakeledger_events WHERE originator_id = %s",
                         (ids["old"],)).fetchone()[0]
    old = {k: v for k, v in stored.items() if k not in ("class_version", "expires_at", "with_namespace")}
    old.update(originator_version=version + 1, name="old")
    db.execute("INSERT INTO lakeledger_events (originator_id, originator_version, topic, state)"
               " VALUES (%s, %s, %s, %s)", (ids["old"], version + 1, DROPPED, json.dumps(old).encode()))
    _rebuild(pg_url, data_dir)

    deleted = client.get(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars").json()["tabulars"]
    assert [t["id"] for t in deleted] == [str(ids["template"])]
    assert client.get(f"{p}/namespaces/ns/tables/old").status_code == 404
    undrop = client.post(f"/management/v1/warehouse/{warehouse['id']}/deleted-tabulars/undrop",
                         json={"targets": [{"type": "table", "id": str(ids["old"])}]})
    assert undrop.status_code == 404 and "final" in undrop.json()["error"]["message"]
