"""Names matched by the warehouse's rule (docs/names.md): in a new warehouse (case-insensitive, Lakekeeper's rule)
namespaces, tables and views are found in any case, two names that differ only in case cannot both exist, and the
first spelling is kept; a warehouse created with ``name-matching: exact`` (what every warehouse created before the
setting is) matches names exactly, as before."""

import json
import threading
import uuid

import httpx
import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError, TableAlreadyExistsError
from support import SCHEMA, VIEW_VERSION


def _ok(r, status: int = 200):
    assert r.status_code == status, (r.request.method, r.request.url, r.status_code, r.text)
    return r


def _view(name: str) -> dict:
    return {"name": name, "schema": SCHEMA, "view-version": VIEW_VERSION, "properties": {}}


def _set(key: str, value: str) -> dict:
    return {"requirements": [], "updates": [{"action": "set-properties", "updates": {key: value}}]}


@pytest.fixture
def exact_warehouse(client, tmp_path):
    name = f"wh-{uuid.uuid4().hex[:12]}"
    r = _ok(client.post("/management/v1/warehouse", json={
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{tmp_path}/exact"},
        "name-matching": "exact"}), 201)
    assert r.json()["name-matching"] == "exact"
    return {"id": r.json()["warehouse-id"], "prefix": f"/catalog/v1/{r.json()['warehouse-id']}"}


def test_a_new_warehouse_matches_names_case_insensitively(client, warehouse):
    r = _ok(client.get(f"/management/v1/warehouse/{warehouse['id']}"))
    assert r.json()["name-matching"] == "case-insensitive"


def test_namespaces_are_found_in_any_case_and_keep_their_first_spelling(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"], "properties": {"k": "v"}}))
    for spelling in ("sales", "SALES", "sAlEs"):
        body = _ok(client.get(f"{p}/namespaces/{spelling}")).json()
        assert body["namespace"] == ["Sales"] and body["properties"]["k"] == "v"
        _ok(client.head(f"{p}/namespaces/{spelling}"), 204)
    r = _ok(client.post(f"{p}/namespaces", json={"namespace": ["SALES"]}), 409)
    assert r.json()["error"]["type"] == "AlreadyExistsException"
    # a child made through another spelling of its parent sits under the parent as spelt
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["sales", "Eu"]}))
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["SALES", "eu"]}), 409)
    assert _ok(client.get(f"{p}/namespaces/sales%1FEU")).json()["namespace"] == ["Sales", "Eu"]
    assert _ok(client.get(f"{p}/namespaces", params={"parent": "SALES"})).json()["namespaces"] == [["Sales", "Eu"]]
    assert _ok(client.get(f"{p}/namespaces")).json()["namespaces"] == [["Sales"]]
    _ok(client.post(f"{p}/namespaces/sALES%1Feu/properties", json={"updates": {"x": "1"}}))
    assert _ok(client.get(f"{p}/namespaces/Sales%1FEu")).json()["properties"]["x"] == "1"
    _ok(client.delete(f"{p}/namespaces/SALES%1FEU"), 204)
    _ok(client.get(f"{p}/namespaces/Sales%1FEu"), 404)
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales", "EU"]}))  # the name is free again
    assert _ok(client.get(f"{p}/namespaces/sales%1Feu")).json()["namespace"] == ["Sales", "EU"]


def test_tables_and_views_are_found_in_any_case(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"]}))
    created = _ok(client.post(f"{p}/namespaces/sales/tables", json={"name": "Orders", "schema": SCHEMA})).json()
    listed = _ok(client.get(f"{p}/namespaces/SALES/tables")).json()["identifiers"]
    assert listed == [{"namespace": ["Sales"], "name": "Orders"}]
    for ns, name in (("Sales", "Orders"), ("sales", "orders"), ("SALES", "ORDERS")):
        table = f"{p}/namespaces/{ns}/tables/{name}"
        loaded = _ok(client.get(table)).json()  # the fast path
        assert loaded["metadata-location"] == created["metadata-location"]
        assert _ok(client.get(table, params={"snapshots": "refs"})).json()["metadata"]["table-uuid"] == \
            created["metadata"]["table-uuid"]  # the routed load
        _ok(client.head(table), 204)
    # no second table, view, or registration under another case of the name
    for body in ({"name": "ORDERS", "schema": SCHEMA}, {"name": "orders", "schema": SCHEMA, "stage-create": True}):
        assert _ok(client.post(f"{p}/namespaces/Sales/tables", json=body), 409).json()["error"]["type"] == \
            "AlreadyExistsException"
    _ok(client.post(f"{p}/namespaces/Sales/views", json=_view("oRDERS")), 409)

    _ok(client.post(f"{p}/namespaces/SALES/views", json=_view("Daily")))
    for name in ("daily", "DAILY"):
        _ok(client.get(f"{p}/namespaces/sales/views/{name}"))
        _ok(client.head(f"{p}/namespaces/sales/views/{name}"), 204)
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "DAILY", "schema": SCHEMA}), 409)
    assert _ok(client.get(f"{p}/namespaces/sales/views")).json()["identifiers"] == [
        {"namespace": ["Sales"], "name": "Daily"}]
    _ok(client.delete(f"{p}/namespaces/SALES/views/DAILY"), 204)
    _ok(client.get(f"{p}/namespaces/Sales/views/Daily"), 404)

    # generic tables share the name space and its matching
    generic = f"/lakekeeper/v1/{warehouse['id']}/namespaces"
    _ok(client.post(f"{generic}/sales/generic-tables", json={"name": "Vectors", "format": "lance"}), 200)
    for name in ("vectors", "VECTORS"):
        assert _ok(client.get(f"{generic}/SALES/generic-tables/{name}")).json()["table"]["name"] == "Vectors"
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "VECTORS", "schema": SCHEMA}), 409)
    _ok(client.post(f"{generic}/Sales/generic-tables", json={"name": "orders", "format": "lance"}), 409)
    _ok(client.delete(f"{generic}/sales/generic-tables/vECTORS"), 204)
    _ok(client.get(f"{generic}/Sales/generic-tables/Vectors"), 404)


def test_commits_and_transactions_reach_a_table_through_any_case(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"]}))
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "Orders", "schema": SCHEMA}))
    _ok(client.post(f"{p}/namespaces/sales/tables/ORDERS", json=_set("a", "1")))
    _ok(client.post(f"{p}/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ["SALES"], "name": "orders"}, **_set("b", "2")}]}), 204)
    props = _ok(client.get(f"{p}/namespaces/Sales/tables/Orders")).json()["metadata"]["properties"]
    assert props["a"] == "1" and props["b"] == "2"
    # one table named twice in one transaction, in two cases, is one table named twice
    r = _ok(client.post(f"{p}/transactions/commit", json={"table-changes": [
        {"identifier": {"namespace": ["Sales"], "name": "Orders"}, **_set("c", "3")},
        {"identifier": {"namespace": ["sales"], "name": "orders"}, **_set("d", "4")}]}), 400)
    assert "twice" in r.json()["error"]["message"]


def test_a_rename_that_changes_only_the_case_keeps_the_name(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"]}))
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "orders", "schema": SCHEMA}))
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "Other", "schema": SCHEMA}))
    rename = {"source": {"namespace": ["sales"], "name": "ORDERS"}, "destination": {"namespace": ["SALES"],
                                                                                     "name": "Orders"}}
    _ok(client.post(f"{p}/tables/rename", json=rename), 204)
    names = [i["name"] for i in _ok(client.get(f"{p}/namespaces/Sales/tables")).json()["identifiers"]]
    assert sorted(names) == ["Orders", "Other"]
    _ok(client.get(f"{p}/namespaces/sales/tables/orders"))
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "ORDERS", "schema": SCHEMA}), 409)
    # onto another table's name in another case: taken
    taken = {"source": {"namespace": ["Sales"], "name": "Orders"}, "destination": {"namespace": ["Sales"],
                                                                                  "name": "OTHER"}}
    _ok(client.post(f"{p}/tables/rename", json=taken), 409)
    # onto its own name as spelt: taken, as before
    same = {"source": {"namespace": ["Sales"], "name": "Orders"}, "destination": {"namespace": ["Sales"],
                                                                                 "name": "Orders"}}
    _ok(client.post(f"{p}/tables/rename", json=same), 409)
    # a rename elsewhere frees the old name in every case
    _ok(client.post(f"{p}/tables/rename", json={"source": {"namespace": ["SALES"], "name": "ORDERS"},
                                                 "destination": {"namespace": ["Sales"], "name": "Done"}}), 204)
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "ORDERS", "schema": SCHEMA}))


def test_a_namespace_move_that_changes_only_the_case(client, warehouse):
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["sales"]}))
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["sales", "eu"]}))
    _ok(client.post(f"{p}/namespaces/sales/tables", json={"name": "t", "schema": SCHEMA}))
    uuid_ = _ok(client.get(f"{p}/namespaces/sales")).json()["namespace-uuid"]
    moved = _ok(client.post(f"/management/v1/warehouse/{warehouse['id']}/namespace/{uuid_}/move",
                            json={"destination": ["Sales"]}))
    assert moved.json()["namespace"] == ["Sales"]
    assert _ok(client.get(f"{p}/namespaces")).json()["namespaces"] == [["Sales"]]
    assert _ok(client.get(f"{p}/namespaces", params={"parent": "sales"})).json()["namespaces"] == [["Sales", "eu"]]
    assert _ok(client.get(f"{p}/namespaces/SALES/tables")).json()["identifiers"] == [
        {"namespace": ["Sales"], "name": "t"}]
    _ok(client.get(f"{p}/namespaces/SALES/tables/T"))
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["sales"]}), 409)


def test_two_creates_in_different_cases_at_once_one_wins(server, warehouse):
    p = warehouse["prefix"]
    with httpx.Client(base_url=server.url, timeout=60) as c:
        _ok(c.post(f"{p}/namespaces", json={"namespace": ["race"]}))
    for round_ in range(5):
        results: list[int] = []
        start = threading.Barrier(2)

        def create(name: str) -> None:
            with httpx.Client(base_url=server.url, timeout=60) as c:
                start.wait()
                results.append(c.post(f"{p}/namespaces/race/tables", json={"name": name, "schema": SCHEMA}).status_code)

        threads = [threading.Thread(target=create, args=(n,)) for n in (f"Round{round_}", f"ROUND{round_}")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == [200, 409]
        with httpx.Client(base_url=server.url, timeout=60) as c:
            listed = _ok(c.get(f"{p}/namespaces/race/tables")).json()["identifiers"]
        assert len([i for i in listed if i["name"].lower() == f"round{round_}"]) == 1


def test_an_exact_warehouse_keeps_matching_names_exactly(client, exact_warehouse):
    p = exact_warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"]}))
    _ok(client.get(f"{p}/namespaces/sales"), 404)
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["sales"]}))
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "t", "schema": SCHEMA}))
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "T", "schema": SCHEMA}))
    _ok(client.get(f"{p}/namespaces/sales/tables/t"), 404)
    _ok(client.get(f"{p}/namespaces/Sales/tables/t"))
    _ok(client.get(f"{p}/namespaces/Sales/tables/T"))
    _ok(client.post(f"{p}/namespaces/Sales/tables/t", json=_set("a", "1")))
    assert "a" not in _ok(client.get(f"{p}/namespaces/Sales/tables/T")).json()["metadata"]["properties"]


def test_the_setting_is_refused_unless_known(client, tmp_path):
    r = _ok(client.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:12]}", "name-matching": "sometimes",
        "storage-profile": {"type": "file", "location": f"file://{tmp_path}/x"}}), 400)
    assert "name-matching" in r.text


def test_pyiceberg_loads_writes_and_lists_a_table_by_another_case(server, warehouse):
    catalog = RestCatalog("names", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    catalog.create_namespace(("Reporting",))
    schema = pa.schema([pa.field("id", pa.int64())])
    catalog.create_table(("Reporting", "Monthly Revenue"), schema=schema)
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table(("reporting", "MONTHLY REVENUE"), schema=schema)
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace(("REPORTING",))
    table = catalog.load_table(("reporting", "monthly revenue"))
    table.append(pa.table({"id": [1, 2]}))
    again = catalog.load_table(("REPORTING", "MONTHLY REVENUE"))
    assert again.scan().to_arrow().column("id").to_pylist() == [1, 2]
    assert catalog.list_tables(("REPORTING",)) == [("Reporting", "Monthly Revenue")]
    assert "location" in catalog.load_namespace_properties(("reporting",))


def test_a_rebuild_gives_the_same_keys(client, warehouse, exact_warehouse, db, pg_url, data_dir):
    """The keys are derived from the log alone: a rebuild writes every read model as the projections did, keys
    included, for both rules (the full comparison of every read model is tests/api/test_rebuild.py's)."""
    from test_rebuild import _caught_up, _rebuild, _snapshot

    for p in (warehouse["prefix"], exact_warehouse["prefix"]):
        _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"]}))
        _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales", "Eu"]}))
        _ok(client.post(f"{p}/namespaces/Sales%1FEu/tables", json={"name": "Straße", "schema": SCHEMA}))
        _ok(client.post(f"{p}/namespaces/Sales/views", json=_view("Daily")))
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/tables/rename", json={"source": {"namespace": ["sales", "eu"], "name": "STRASSE"},
                                                 "destination": {"namespace": ["SALES"], "name": "STRASSE"}}), 204)
    _caught_up(db)
    keys = ("SELECT t.name, t.name_key, t.namespace, t.namespace_key, w.name_matching FROM ll_tabulars t"
            " JOIN ll_warehouses w ON w.id = t.warehouse_id WHERE t.warehouse_id = ANY(%s) ORDER BY 5, 1")
    ids = [uuid.UUID(warehouse["id"]), uuid.UUID(exact_warehouse["id"])]
    before = db.execute(keys, (ids,)).fetchall()
    assert ("STRASSE", "strasse", ["Sales"], ["sales"], "case-insensitive") in before
    assert ("Straße", "Straße", ["Sales", "Eu"], ["Sales", "Eu"], "exact") in before
    live = _snapshot(db)
    _rebuild(pg_url, data_dir)
    assert db.execute(keys, (ids,)).fetchall() == before
    rebuilt = _snapshot(db)
    assert {t: (len(live[t]), len(rebuilt[t])) for t in live if rebuilt[t] != live[t]} == {}


def test_an_undrop_meets_a_name_taken_since_in_another_case(client, warehouse):
    p, management = warehouse["prefix"], f"/management/v1/warehouse/{warehouse['id']}"
    _ok(client.post(f"{management}/delete-profile", json={"delete-profile": {"type": "soft",
                                                                             "expiration-seconds": 3600}}))
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"]}))
    dropped = _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "Orders", "schema": SCHEMA}))
    table_id = dropped.json()["metadata"]["table-uuid"]
    _ok(client.delete(f"{p}/namespaces/sales/tables/ORDERS"), 204)
    _ok(client.post(f"{p}/namespaces/SALES/tables", json={"name": "orders", "schema": SCHEMA}))
    undrop = {"targets": [{"type": "table", "id": table_id}]}
    r = _ok(client.post(f"{management}/deleted-tabulars/undrop", json=undrop), 409)
    assert "taken" in r.json()["error"]["message"]
    _ok(client.delete(f"{p}/namespaces/Sales/tables/orders"), 204)
    _ok(client.post(f"{management}/deleted-tabulars/undrop", json=undrop), 204)
    assert _ok(client.get(f"{p}/namespaces/sales/tables/orders")).json()["metadata"]["table-uuid"] == table_id


def test_a_warehouse_stored_before_the_setting_matches_names_exactly(client, warehouse, db, pg_url, data_dir):
    """Its Created event in the log as version 3 stored it (no setting): replayed, it is upcast to exact, and the
    rebuilt read model matches its names exactly, as before the setting existed."""
    from test_rebuild import _rebuild

    wh_id, topic = uuid.UUID(warehouse["id"]), "lakeledger.domain.warehouse:Warehouse.Created"
    [(state,)] = db.execute("SELECT state FROM lakeledger_events WHERE originator_id = %s AND topic = %s",
                            (wh_id, topic)).fetchall()
    stored = json.loads(bytes(state))
    assert (stored["class_version"], stored["name_matching"]) == (4, "case-insensitive")
    v3 = {**{k: v for k, v in stored.items() if k != "name_matching"}, "class_version": 3}
    db.execute("UPDATE lakeledger_events SET state = %s WHERE originator_id = %s AND topic = %s",
               (json.dumps(v3).encode(), wh_id, topic))
    _rebuild(pg_url, data_dir)
    assert _ok(client.get(f"/management/v1/warehouse/{wh_id}")).json()["name-matching"] == "exact"
    p = warehouse["prefix"]
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["Sales"]}))
    _ok(client.post(f"{p}/namespaces", json={"namespace": ["sales"]}))
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "Orders", "schema": SCHEMA}))
    _ok(client.get(f"{p}/namespaces/Sales/tables/orders"), 404)
    _ok(client.post(f"{p}/namespaces/Sales/tables", json={"name": "orders", "schema": SCHEMA}))
