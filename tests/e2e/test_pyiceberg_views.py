"""pyiceberg 0.12's view calls against the real catalog over HTTP: create, list, exists, load,
register, drop, and the name space views share with tables."""

import json
import uuid

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    NoSuchTableError,
    NoSuchViewError,
    TableAlreadyExistsError,
    ViewAlreadyExistsError,
)
from pyiceberg.view.metadata import (
    SQLViewRepresentation,
    ViewRepresentation,
    ViewVersion,
)

ROWS = pa.schema([("id", pa.int64()), ("amount", pa.float64())])


@pytest.fixture
def catalog(server, warehouse):
    return RestCatalog("lakeledger", uri=f"{server.url}/catalog", warehouse=warehouse["name"])


def _version(sql: str, namespace: str = "sales") -> ViewVersion:
    return ViewVersion(version_id=1, schema_id=0, timestamp_ms=1_700_000_000_000,
                       summary={"engine-name": "pyiceberg-test"}, default_namespace=(namespace,),
                       representations=[ViewRepresentation(SQLViewRepresentation(type="sql", sql=sql,
                                                                                 dialect="spark"))])


def test_create_list_load_exists_drop(catalog):
    catalog.create_namespace("sales")
    view = catalog.create_view("sales.big_orders", schema=ROWS, view_version=_version("SELECT * FROM orders"),
                               properties={"comment": "large orders"})
    assert view.name() == ("sales", "big_orders")
    assert view.properties == {"comment": "large orders"}
    assert view.sql_for("spark").sql == "SELECT * FROM orders"
    assert [f.name for f in view.schema().fields] == ["id", "amount"]

    assert catalog.list_views("sales") == [("sales", "big_orders")]
    assert catalog.view_exists("sales.big_orders")
    assert not catalog.view_exists("sales.nope")
    loaded = catalog.load_view("sales.big_orders")
    assert loaded.metadata == view.metadata
    assert loaded.uuid() == view.uuid() and loaded.current_version().version_id == 1
    assert [h.version_id for h in loaded.history()] == [1]

    with pytest.raises(ViewAlreadyExistsError):
        catalog.create_view("sales.big_orders", schema=ROWS, view_version=_version("SELECT 1"))

    catalog.drop_view("sales.big_orders")
    assert not catalog.view_exists("sales.big_orders")
    assert catalog.list_views("sales") == []
    with pytest.raises(NoSuchViewError):
        catalog.load_view("sales.big_orders")
    with pytest.raises(NoSuchViewError):
        catalog.drop_view("sales.big_orders")


def test_views_and_tables_do_not_mix(catalog):
    catalog.create_namespace("mix")
    catalog.create_table("mix.orders", schema=ROWS)
    catalog.create_view("mix.recent", schema=ROWS, view_version=_version("SELECT * FROM orders", "mix"))
    assert catalog.list_tables("mix") == [("mix", "orders")]
    assert catalog.list_views("mix") == [("mix", "recent")]
    assert not catalog.view_exists("mix.orders") and not catalog.table_exists("mix.recent")
    with pytest.raises(ViewAlreadyExistsError):  # a table holds the name
        catalog.create_view("mix.orders", schema=ROWS, view_version=_version("SELECT 1", "mix"))
    with pytest.raises(TableAlreadyExistsError):  # a view holds the name
        catalog.create_table("mix.recent", schema=ROWS)
    with pytest.raises(NoSuchTableError):
        catalog.load_table("mix.recent")
    with pytest.raises(NoSuchViewError):
        catalog.load_view("mix.orders")


def test_register_view(catalog, warehouse):
    catalog.create_namespace("reg")
    original = catalog.create_view("reg.v", schema=ROWS, view_version=_version("SELECT 1", "reg"))
    metadata = json.loads(original.metadata.model_dump_json()) | {
        "view-uuid": str(uuid.uuid4()), "location": f"{warehouse['location']}/copied"}
    target = warehouse["path"] / "copied" / "metadata" / f"00000-{uuid.uuid4()}.metadata.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(metadata))
    registered = catalog.register_view("reg.copy", f"file://{target}")
    assert str(registered.uuid()) == metadata["view-uuid"]
    assert registered.sql_for("spark").sql == "SELECT 1"
    assert sorted(catalog.list_views("reg")) == [("reg", "copy"), ("reg", "v")]
    with pytest.raises(ViewAlreadyExistsError):
        catalog.register_view("reg.v", f"file://{target}")
