"""pyiceberg end to end: a real client, real files, the real catalog over HTTP."""

import threading

import pyarrow as pa
import pytest
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.types import StringType


@pytest.fixture
def catalog(server, warehouse):
    return RestCatalog("lakeledger", uri=f"{server.url}/catalog", warehouse=warehouse["name"])


ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "amount": pa.array([1.5, 2.5, 3.5], pa.float64())})


def test_create_append_read_back(catalog):
    catalog.create_namespace("sales")
    table = catalog.create_table("sales.orders", schema=ROWS.schema)
    table.append(ROWS)
    table.append(ROWS.slice(0, 1))
    loaded = catalog.load_table("sales.orders")
    result = loaded.scan().to_arrow().sort_by("id")
    assert result.num_rows == 4
    assert result.column("id").to_pylist() == [1, 1, 2, 3]
    assert len(loaded.metadata.snapshots) == 2
    assert catalog.list_tables("sales") == [("sales", "orders")]
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("sales.orders", schema=ROWS.schema)


def test_schema_evolution(catalog):
    catalog.create_namespace("evo")
    table = catalog.create_table("evo.t", schema=ROWS.schema)
    table.append(ROWS)
    with table.update_schema() as update:
        update.add_column("note", StringType())
    table = catalog.load_table("evo.t")
    assert [f.name for f in table.schema().fields] == ["id", "amount", "note"]
    table.append(pa.table({"id": pa.array([4], pa.int64()), "amount": pa.array([4.5], pa.float64()),
                           "note": pa.array(["new"], pa.string())}))
    result = catalog.load_table("evo.t").scan().to_arrow().sort_by("id")
    assert result.column("note").to_pylist() == [None, None, None, "new"]


def test_two_clients_commit_concurrently_one_conflict_no_lost_data(server, warehouse):
    first = RestCatalog("a", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    second = RestCatalog("b", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
    first.create_namespace("conc")
    # pyiceberg retries refused commits on its own; switched off here so the 409 itself is seen
    first.create_table("conc.t", schema=ROWS.schema, properties={"commit.retry.num-retries": "0"})
    t1, t2 = first.load_table("conc.t"), second.load_table("conc.t")  # both at the same base version
    t1.append(ROWS)
    with pytest.raises(CommitFailedException):
        t2.append(ROWS.slice(0, 1))  # stale base: the server refuses with 409
    t2 = second.load_table("conc.t")
    t2.append(ROWS.slice(0, 1))  # after a refresh it goes in
    assert first.load_table("conc.t").scan().to_arrow().num_rows == 4

    # racing threads, each retrying on conflict: every row arrives
    barrier, errors = threading.Barrier(4), []

    def writer(k):
        catalog = RestCatalog(f"w{k}", uri=f"{server.url}/catalog", warehouse=warehouse["name"])
        barrier.wait()
        for _ in range(30):
            try:
                catalog.load_table("conc.t").append(pa.table({"id": pa.array([100 + k], pa.int64()),
                                                               "amount": pa.array([0.0], pa.float64())}))
                return
            except CommitFailedException:
                continue
        errors.append(k)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == []
    ids = first.load_table("conc.t").scan().to_arrow().column("id").to_pylist()
    assert sorted(i for i in ids if i >= 100) == [100, 101, 102, 103]
    assert len(ids) == 8


def test_rename_and_drop(catalog):
    catalog.create_namespace("life")
    catalog.create_table("life.a", schema=ROWS.schema).append(ROWS)
    catalog.rename_table("life.a", "life.b")
    assert catalog.load_table("life.b").scan().to_arrow().num_rows == 3
    with pytest.raises(NoSuchTableError):
        catalog.load_table("life.a")
    catalog.drop_table("life.b")
    assert catalog.list_tables("life") == []
    catalog.drop_namespace("life")
    assert ("life",) not in catalog.list_namespaces()


def test_zero_config_client_uses_the_root_alias_and_the_default_warehouse(second_server):
    # uri is the server's root and no warehouse is named: /v1/config answers with the default warehouse
    catalog = RestCatalog("zero", uri=second_server.url)
    namespace = f"zero_{threading.get_ident()}"
    catalog.create_namespace(namespace)
    table = catalog.create_table(f"{namespace}.t", schema=ROWS.schema)
    table.append(ROWS)
    assert catalog.load_table(f"{namespace}.t").scan().to_arrow().num_rows == 3
    # the same objects are visible under /catalog/v1
    again = RestCatalog("again", uri=f"{second_server.url}/catalog")
    assert again.list_tables(namespace) == [(namespace, "t")]
