"""OpenFGA's tuples as a projection of the log (issue 13, point 6), against a real OpenFGA and a real OpenID
provider: a `lakeledger serve` with the openfga backend on a database and a store of its own. Every tuple a request
causes is in OpenFGA when its call returns; `lakeledger rebuild` fills an emptied store from the log alone with
exactly the same tuples."""

import os
import subprocess
import sys
import uuid

import httpx
import psycopg
import pytest
from support import SCHEMA, Server

from lakeledger.authz.objects import RelationTuple as T
from lakeledger.authz.objects import hierarchy, obj, user
from lakeledger.authz.openfga import OpenFga

SERVER_ID = uuid.UUID(int=0)
DEFAULT_PROJECT = uuid.UUID(int=0)
SPARK, BOB = "oidc~spark", "oidc~bob"


def environment(database: str, openfga, oidc, store: str) -> dict:
    return {"LAKELEDGER__AUTHZ_BACKEND": "openfga", "LAKELEDGER__OPENFGA__ENDPOINT": openfga.endpoint,
            "LAKELEDGER__OPENFGA__STORE_NAME": store, "LAKELEDGER__OPENID_PROVIDER_URI": oidc.issuer,
            "LAKELEDGER__OPENID_AUDIENCE": oidc.audience, "LAKELEDGER__PG_URL": database,
            "LAKELEDGER__WORKER_POLL_SECONDS": "0.2", "LAKELEDGER__PG_POOL_SIZE": "3"}


@pytest.fixture(scope="module")
def setup(pg_url, openfga, oidc, tmp_path_factory):
    name = f"authz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    from urllib.parse import urlsplit

    database = urlsplit(pg_url)._replace(path=f"/{name}").geturl()
    env = environment(database, openfga, oidc, f"store-{name}")
    api = Server(database, tmp_path_factory.mktemp("authz-serve"), **env)
    with psycopg.connect(database) as conn:
        store_id, model_id = conn.execute("SELECT store_id, model_id FROM ll_openfga").fetchone()
    fga = OpenFga(openfga.endpoint, store_id, model_id)
    yield {"api": api, "fga": fga, "database": database, "env": env, "data_dir": tmp_path_factory.mktemp("authz-cli")}
    fga.close()
    api.stop()


@pytest.fixture(scope="module")
def spark(setup, oidc):
    with httpx.Client(base_url=setup["api"].url, timeout=60,
                      headers={"Authorization": f"Bearer {oidc.token('spark')}"}) as c:
        response = c.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
        assert response.status_code == 204, response.text
        # the server admin makes itself admin of the default project, as an operator would
        setup["fga"].write([T(user(SPARK), "project_admin", obj("project", DEFAULT_PROJECT))])
        yield c


def tuples(setup) -> set[T]:
    return set(setup["fga"].tuples())


def test_bootstrap_makes_its_caller_server_admin(setup, spark):
    assert T(user(SPARK), "admin", obj("server", SERVER_ID)) in tuples(setup)
    # the default project, created by the system at start-up, sits under the server
    assert set(hierarchy(obj("project", DEFAULT_PROJECT), obj("server", SERVER_ID))) <= tuples(setup)


def test_the_hierarchy_and_ownership_follow_creates_renames_and_drops(setup, spark, tmp_path):
    response = spark.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}", "storage-profile": {"type": "file",
                                                                            "location": f"file://{tmp_path}/wh"}})
    assert response.status_code == 201, response.text
    warehouse_id = response.json()["warehouse-id"]
    warehouse = obj("warehouse", warehouse_id)
    # read-your-writes: the tuples are there when the call returns, nothing waited for
    assert set(hierarchy(warehouse, obj("project", DEFAULT_PROJECT))) <= tuples(setup)
    assert T(user(SPARK), "ownership", warehouse) in tuples(setup)

    prefix = f"/catalog/v1/{warehouse_id}"
    for ns in (["a"], ["a", "inner"], ["b"]):
        assert spark.post(f"{prefix}/namespaces", json={"namespace": ns}).status_code == 200
    ids = {}
    with psycopg.connect(setup["database"]) as conn:
        for path, id_ in conn.execute("SELECT path, id FROM ll_namespaces WHERE warehouse_id = %s", (warehouse_id,)):
            ids[".".join(path)] = obj("namespace", id_)
    assert set(hierarchy(ids["a"], warehouse)) | set(hierarchy(ids["a.inner"], ids["a"])) <= tuples(setup)
    assert T(user(SPARK), "ownership", ids["a.inner"]) in tuples(setup)

    response = spark.post(f"{prefix}/namespaces/a%1Finner/tables", json={"name": "t", "schema": SCHEMA})
    assert response.status_code == 200, response.text
    table = obj("table", response.json()["metadata"]["table-uuid"])
    assert set(hierarchy(table, ids["a.inner"])) | {T(user(SPARK), "ownership", table)} <= tuples(setup)

    response = spark.post(f"{prefix}/tables/rename", json={"source": {"namespace": ["a", "inner"], "name": "t"},
                                                          "destination": {"namespace": ["b"], "name": "t2"}})
    assert response.status_code == 204, response.text
    now = tuples(setup)
    assert set(hierarchy(table, ids["b"])) <= now
    assert not set(hierarchy(table, ids["a.inner"])) & now

    assert spark.delete(f"{prefix}/namespaces/b/tables/t2").status_code == 204
    assert not [t for t in tuples(setup) if table in (t.object, t.user)]
