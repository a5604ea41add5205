"""Every endpoint enforces authorization (issue 13, points 5, 8 and the security half of 10): a `lakeledger serve` with
a real OpenID provider (oidc-provider) and a real OpenFGA, on a database of its own, with no default project
(``x-project-id`` required). The provider's client `spark` is the operator and owns everything; `bob` starts with
nothing; grants go through the permission endpoints, the tuples come from the log (the tuple projection). Bob is
refused everything of spark's (404: he may not even know it exists), sees different lists, and, once granted
select on one table, loads and reads it (vended credentials that MinIO refuses to write with, a signer
that refuses his writes) but may not change it. A principal of project A sees nothing of project B, whatever
``x-project-id`` it sends. Every refusal leaves the log as it was."""

import re
import time
import uuid
from datetime import UTC
from urllib.parse import parse_qs

import httpx
import psycopg
import pytest
from botocore.exceptions import ClientError
from support import SCHEMA, VIEW_VERSION, Server, create_database, openfga_server

from lakeledger.authz.objects import RelationTuple, obj, user
from lakeledger.authz.setup import authorizer
from lakeledger.settings import Settings

KEY = "authorization-tests-encryption-key"
CACHE_SECONDS = 1.0


@pytest.fixture(scope="module")
def own_database(pg_url) -> str:
    return create_database(pg_url, f"authz_{uuid.uuid4().hex[:12]}")


@pytest.fixture(scope="module")
def api(oidc, openfga, own_database, tmp_path_factory):
    s = openfga_server(own_database, tmp_path_factory.mktemp("authz-serve"), oidc, openfga, "authz",
                       LAKELEDGER__AUTHZ_CACHE_SECONDS=str(CACHE_SECONDS), LAKELEDGER__PG_ENCRYPTION_KEY=KEY)
    yield s
    s.stop()


class Tuples:
    """The server's OpenFGA store, reached past the server: a tuple changed here is what another process's grant
    or revoke looks like to this server (its remembered decisions are not told)."""

    def __init__(self, database: str, openfga, store_name: str):
        settings = Settings(pg_url=database, authz_backend="openfga",
                            openfga={"endpoint": openfga.endpoint, "store_name": store_name})
        self.backend = authorizer(settings, database)

    def write(self, *tuples: RelationTuple) -> None:
        self.backend.write(tuples)

    def delete(self, *tuples: RelationTuple) -> None:
        self.backend.write(deletes=tuples)


@pytest.fixture(scope="module")
def fga(api, openfga, own_database):
    with psycopg.connect(own_database) as conn:
        [store_name] = conn.execute("SELECT store_name FROM ll_openfga").fetchone()
    tuples = Tuples(own_database, openfga, store_name)
    yield tuples
    tuples.backend.close()


def _client(api, oidc, who: str, project: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {oidc.token(who)}"}
    if project:
        headers["x-project-id"] = project
    return httpx.Client(base_url=api.url, timeout=60, headers=headers)


class Grant:
    """Spark grants bob a privilege through the permission endpoint (Lakekeeper's assignments), and revokes it
    on leaving: both are events, effective when the call returns."""

    def __init__(self, api, oidc, path: str, relation: str, project: str):
        self.api, self.oidc, self.project = api, oidc, project
        self.path = f"/management/v1/permissions/{path}/assignments"
        self.assignment = {"type": relation, "user": "oidc~bob"}

    def _post(self, change: str) -> None:
        with _client(self.api, self.oidc, "spark", self.project) as spark:
            r = spark.post(self.path, json={change: [self.assignment]})
        assert r.status_code == 204, r.text

    def __enter__(self):
        self._post("writes")
        return self

    def __exit__(self, *_):
        self._post("deletes")


def table_grant(api, oidc, place: dict, table: str, relation: str = "select") -> Grant:
    return Grant(api, oidc, f"warehouse/{place['warehouse']}/table/{place['tables'][table]}", relation,
                 place["project"])


def log_length(database: str) -> int:
    with psycopg.connect(database) as conn:
        return conn.execute("SELECT count(*) FROM lakeledger_events").fetchone()[0]


@pytest.fixture(scope="module")
def world(api, oidc, own_database, minio, bucket):
    """Spark (the operator) bootstraps and builds projects A and B, each with a file warehouse, namespaces and
    tables; project A also has an S3 warehouse that vends credentials, with one table."""
    with _client(api, oidc, "spark") as spark:
        # bootstrap makes spark the operator; what it creates it owns (the tuple projection, as in production)
        r = spark.post("/management/v1/bootstrap", json={"accept-terms-of-use": True, "is-operator": True})
        assert r.status_code == 204, r.text
        built = {}
        for label in ("A", "B"):
            r = spark.post("/management/v1/project", json={"project-name": f"project-{label}"})
            assert r.status_code == 201, r.text
            project_id = r.json()["project-id"]
            built[label] = {"project": project_id, **_warehouse(spark, project_id, label, {
                "type": "file", "location": f"file://{api.log_path.parent}/wh-{label}"})}
        # bob's first request provisions his user (an event): made here, so that the tests' logs stay put
        with _client(api, oidc, "bob") as bob:
            assert bob.get("/management/v1/whoami").status_code == 200
        s3 = _warehouse(spark, built["A"]["project"], "A-s3", minio.profile(
            bucket, f"authz-{uuid.uuid4().hex[:8]}", **{"sts-enabled": True}), minio.credential())
        built["S3"] = {"project": built["A"]["project"], **s3}
    return built


def _warehouse(spark, project_id: str, label: str, profile: dict, credential: dict | None = None) -> dict:
    body = {"warehouse-name": f"wh-{label}", "project-id": project_id, "storage-profile": profile}
    if credential:
        body["storage-credential"] = credential
    r = spark.post("/management/v1/warehouse", json=body)
    assert r.status_code == 201, r.text
    wid = r.json()["warehouse-id"]
    prefix = f"/catalog/v1/{wid}"
    made = {"warehouse": wid, "name": f"wh-{label}", "prefix": prefix, "namespaces": {}, "tables": {}}
    for ns in ("ns", "other"):
        r = spark.post(f"{prefix}/namespaces", json={"namespace": [ns]})
        assert r.status_code == 200, r.text
        made["namespaces"][ns] = r.json()["namespace-uuid"]
        for t in ("t", "u"):
            r = spark.post(f"{prefix}/namespaces/{ns}/tables", json={"name": t, "schema": SCHEMA})
            assert r.status_code == 200, r.text
            made["tables"][f"{ns}.{t}"] = r.json()["metadata"]["table-uuid"]
    r = spark.post(f"{prefix}/namespaces/ns/views", json={"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION,
                                                           "properties": {}})
    assert r.status_code == 200, r.text
    made["view"] = r.json()["metadata"]["view-uuid"]
    return made


def test_bob_is_refused_everything_of_sparks_as_if_it_did_not_exist(api, oidc, world, own_database):
    a = world["A"]
    table = f"{a['prefix']}/namespaces/ns/tables/t"
    before = log_length(own_database)
    with _client(api, oidc, "spark", a["project"]) as spark, _client(api, oidc, "bob", a["project"]) as bob:
        loaded = spark.get(table)
        assert loaded.status_code == 200
        tag = loaded.headers["etag"]
        # the loadTable fast path (no query), the route (a query), and revalidation with the right ETag
        for r in (bob.get(table), bob.get(table, params={"snapshots": "all"}),
                  bob.get(table, headers={"If-None-Match": tag})):
            assert r.status_code == 404, r.text
            assert r.json()["error"]["type"] == "NoSuchTableException"
            assert r.json()["error"]["message"] == "Table does not exist: ns.t"
        assert bob.head(table).status_code == 404
        assert bob.get(f"{table}/credentials").status_code == 404
        view = bob.get(f"{a['prefix']}/namespaces/ns/views/v")
        assert view.status_code == 404 and view.json()["error"]["type"] == "NoSuchViewException"
        assert bob.get(f"{a['prefix']}/namespaces/ns/views").status_code == 404
        refused = [
            bob.post(table, json={"requirements": [], "updates": [{"action": "set-properties",
                                                                   "updates": {"owner": "bob"}}]}),
            bob.delete(table),
            bob.post(f"{a['prefix']}/tables/rename", json={"source": {"namespace": ["ns"], "name": "t"},
                                                           "destination": {"namespace": ["ns"], "name": "mine"}}),
            bob.post(f"{a['prefix']}/transactions/commit", json={"table-changes": [{
                "identifier": {"namespace": ["ns"], "name": "t"}, "requirements": [],
                "updates": [{"action": "set-properties", "updates": {"owner": "bob"}}]}]}),
            bob.post(f"{a['prefix']}/namespaces/ns/tables", json={"name": "bobs", "schema": SCHEMA}),
            bob.post(f"{a['prefix']}/namespaces", json={"namespace": ["bobs"]}),
            bob.delete(f"{a['prefix']}/namespaces/other"),
            bob.post(f"{a['prefix']}/namespaces/ns/properties", json={"updates": {"x": "y"}}),
            bob.delete(f"{a['prefix']}/namespaces/ns/views/v"),
            bob.post(f"{a['prefix']}/views/rename", json={"source": {"namespace": ["ns"], "name": "v"},
                                                          "destination": {"namespace": ["ns"], "name": "mine"}}),
            bob.post(f"/management/v1/warehouse/{a['warehouse']}/protection", json={"protected": True}),
            bob.post(f"/management/v1/warehouse/{a['warehouse']}/table/{a['tables']['ns.t']}/protection",
                     json={"protected": True}),
            bob.post(f"/management/v1/warehouse/{a['warehouse']}/rename", json={"new-name": "bobs"}),
            bob.post(f"/management/v1/warehouse/{a['warehouse']}/deactivate"),
            bob.delete(f"/management/v1/warehouse/{a['warehouse']}"),
            bob.post("/management/v1/warehouse", json={"warehouse-name": "bobs", "storage-profile": {
                "type": "file", "location": f"file://{api.log_path.parent}/bobs"}}),
            bob.post("/management/v1/project/rename", json={"new-name": "bobs"}),
        ]
        for r in refused:
            assert r.status_code == 404, (r.request.method, r.request.url, r.text)
        assert bob.get(f"/management/v1/warehouse/{a['warehouse']}/history",
                       params={"tabular-id": a["tables"]["ns.t"]}).status_code == 404
        assert bob.get(f"/management/v1/warehouse/{a['warehouse']}/deleted-tabulars").status_code == 404
        # what bob may do there would tell the table is there: an empty list of actions is an answer too
        owned = f"/warehouse/{a['warehouse']}/table/{a['tables']['ns.t']}"
        for path in (f"/management/v1/permissions{owned}/access",
                     f"/management/v1/permissions{owned}/authorizer-actions", f"/management/v1{owned}/actions",
                     f"/management/v1/warehouse/{a['warehouse']}/actions"):
            r = bob.get(path)
            assert r.status_code == 404, (path, r.text)
        assert bob.get("/catalog/v1/config", params={"warehouse": a["name"]}).status_code == 404
        # server-wide acts are refused outright: the server exists for everyone
        assert bob.post("/management/v1/project", json={"project-name": "bobs"}).status_code == 403
        assert bob.get("/management/v1/history").status_code == 403
        assert bob.get("/management/v1/user").status_code == 403
    assert log_length(own_database) == before


def test_lists_show_only_what_the_caller_may_see(api, oidc, world):
    a = world["A"]
    with _client(api, oidc, "spark", a["project"]) as spark, _client(api, oidc, "bob", a["project"]) as bob:
        assert {p["project-name"] for p in spark.get("/management/v1/project-list").json()["projects"]} \
            >= {"project-A", "project-B"}
        assert bob.get("/management/v1/project-list").json()["projects"] == []
        assert [w["name"] for w in spark.get("/management/v1/warehouse").json()["warehouses"]] == ["wh-A", "wh-A-s3"]
        assert bob.get("/management/v1/warehouse").status_code == 404
        assert spark.get(f"{a['prefix']}/namespaces").json()["namespaces"] == [["ns"], ["other"]]
        assert bob.get(f"{a['prefix']}/namespaces").status_code == 404
        assert [t["name"] for t in spark.get(f"{a['prefix']}/namespaces/ns/tables").json()["identifiers"]] == \
            ["t", "u"]
        assert bob.get(f"{a['prefix']}/namespaces/ns/tables").status_code == 404


def test_a_grant_of_select_lets_bob_read_but_not_change(api, oidc, world, own_database):
    a = world["A"]
    table_id = a["tables"]["ns.t"]
    table = f"{a['prefix']}/namespaces/ns/tables/t"
    with _client(api, oidc, "bob", a["project"]) as bob:
        assert bob.get(table).status_code == 404  # and that refusal is now remembered
    # effective when the grant returns, though the server remembered the refusal: its tuple write made it forget
    with table_grant(api, oidc, a, "ns.t"):
        before = log_length(own_database)
        with _client(api, oidc, "bob", a["project"]) as bob:
            first = bob.get(table)
            assert first.status_code == 200, first.text
            assert first.json()["metadata"]["table-uuid"] == table_id
            assert bob.get(table, params={"snapshots": "refs"}).status_code == 200
            assert bob.get(table, headers={"If-None-Match": first.headers["etag"]}).status_code == 304
            assert bob.head(table).status_code == 204
            # the way down to the grant is visible, nothing beside it
            assert bob.get("/catalog/v1/config", params={"warehouse": a["name"]}).status_code == 200
            assert bob.get(f"{a['prefix']}/namespaces").json()["namespaces"] == [["ns"]]
            assert [t["name"] for t in bob.get(f"{a['prefix']}/namespaces/ns/tables").json()["identifiers"]] == ["t"]
            paged = bob.get(f"{a['prefix']}/namespaces/ns/tables", params={"pageToken": "", "pageSize": "1"}).json()
            assert [t["name"] for t in paged["identifiers"]] == ["t"]
            assert paged["next-page-token"] is None
            assert bob.get(f"{a['prefix']}/namespaces/ns/tables/u").status_code == 404
            assert bob.get(f"{a['prefix']}/namespaces/ns/views").json()["identifiers"] == []
            assert bob.get(f"{a['prefix']}/namespaces/ns/views/v").status_code == 404
            assert [w["name"] for w in bob.get("/management/v1/warehouse").json()["warehouses"]] == ["wh-A"]
            # seeing it is not changing it: 403 now, naming what is missing
            commit = bob.post(table, json={"requirements": [], "updates": [
                {"action": "set-properties", "updates": {"owner": "bob"}}]})
            assert commit.status_code == 403, commit.text
            assert commit.json()["error"] == {"code": 403, "type": "ForbiddenException",
                                              "message": f"oidc~bob may not can_commit on table {table_id}"}
            for r in (bob.delete(table),
                      bob.post(f"{a['prefix']}/tables/rename", json={
                          "source": {"namespace": ["ns"], "name": "t"},
                          "destination": {"namespace": ["ns"], "name": "mine"}}),
                      bob.post(f"/management/v1/warehouse/{a['warehouse']}/table/{table_id}/protection",
                               json={"protected": True}),
                      bob.post(f"{a['prefix']}/namespaces/ns/tables", json={"name": "bobs", "schema": SCHEMA}),
                      # a commit that creates a staged table is a create in the namespace
                      bob.post(f"{a['prefix']}/namespaces/ns/tables/staged", json={
                          "requirements": [{"type": "assert-create"}], "updates": []}),
                      bob.post(f"{a['prefix']}/transactions/commit", json={"table-changes": [{
                          "identifier": {"namespace": ["ns"], "name": "staged"},
                          "requirements": [{"type": "assert-create"}], "updates": []}]})):
                assert r.status_code == 403, (r.request.method, r.request.url, r.text)
            history = bob.get(f"/management/v1/warehouse/{a['warehouse']}/history", params={"tabular-id": table_id})
            assert history.status_code == 200
            assert {e["actor"] for e in history.json()["events"]} == {"oidc~spark"}
            assert bob.get(f"/management/v1/warehouse/{a['warehouse']}/history").status_code == 403
        assert log_length(own_database) == before
    # and so is the revoke
    with _client(api, oidc, "bob", a["project"]) as bob:
        assert bob.get(table).status_code == 404


def test_metrics_reports_are_sent_and_read_by_whoever_may_see_the_table(api, oidc, world, own_database):
    """A report on a table bob may not see is the missing table's 404, nothing appended; so is the table's reports list.
    With select he may report, and read the reports, his own among them under his name."""
    a = world["A"]
    table_id = a["tables"]["ns.t"]
    table = f"{a['prefix']}/namespaces/ns/tables/t"
    reports = f"/management/v1/warehouse/{a['warehouse']}/table/{table_id}/metrics-reports"
    report = {"report-type": "commit-report", "table-name": "ns.t", "snapshot-id": 1, "sequence-number": 1,
              "operation": "append", "metrics": {"added-records": {"unit": "count", "value": 3}}}
    with _client(api, oidc, "bob", a["project"]) as bob:
        before = log_length(own_database)
        assert bob.post(f"{table}/metrics", json=report).status_code == 404
        assert bob.get(reports).status_code == 404
        assert log_length(own_database) == before
    with table_grant(api, oidc, a, "ns.t"), _client(api, oidc, "bob", a["project"]) as bob:
        assert bob.post(f"{table}/metrics", json=report).status_code == 204
        listed = bob.get(reports)
        assert listed.status_code == 200, listed.text
        assert [r["actor"] for r in listed.json()["reports"]][:1] == ["oidc~bob"]


def test_a_change_made_behind_the_servers_back_is_honoured_within_the_cache_lifetime(api, oidc, world, fga):
    """A tuple another process writes (its own grant, or OpenFGA changed by hand) reaches this server's remembered
    decisions once they are older than LAKELEDGER__AUTHZ_CACHE_SECONDS: the lag a revoke may have."""
    a = world["A"]
    table = f"{a['prefix']}/namespaces/ns/tables/u"
    grant = RelationTuple(user("oidc~bob"), "select", obj("table", a["tables"]["ns.u"]))
    with _client(api, oidc, "bob", a["project"]) as bob:
        assert bob.get(table).status_code == 404
        fga.write(grant)
        try:
            time.sleep(CACHE_SECONDS + 0.2)
            assert bob.get(table).status_code == 200
        finally:
            fga.delete(grant)
        # every decision remembered before the delete is older than the cache's lifetime now: OpenFGA is asked again
        time.sleep(CACHE_SECONDS + 0.2)
        assert bob.get(table).status_code == 404


def test_time_travel_prefixes_are_authorized_on_todays_grants(api, oidc, world):
    a = world["A"]
    with _client(api, oidc, "spark", a["project"]) as spark:
        past = spark.get("/catalog/v1/config", params={"warehouse": f"{a['name']}@{_now()}"}).json()["overrides"]
    prefix = f"/catalog/v1/{past['prefix']}"
    assert "@seq:" in prefix
    with _client(api, oidc, "bob", a["project"]) as bob:
        assert bob.get("/catalog/v1/config", params={"warehouse": f"{a['name']}@{_now()}"}).status_code == 404
        assert bob.get(f"{prefix}/namespaces/ns/tables/t").status_code == 404
        assert bob.get(f"{prefix}/namespaces").status_code == 404
    with table_grant(api, oidc, a, "ns.t"), _client(api, oidc, "bob", a["project"]) as bob:
        assert bob.get(f"{prefix}/namespaces/ns/tables/t").status_code == 200
        assert bob.get(f"{prefix}/namespaces").json()["namespaces"] == [["ns"]]
        assert [t["name"] for t in bob.get(f"{prefix}/namespaces/ns/tables").json()["identifiers"]] == ["t"]
        assert bob.get(f"{prefix}/namespaces/ns/tables/u").status_code == 404


def _now() -> str:
    from datetime import datetime

    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def test_vended_credentials_and_the_signer_are_read_only_for_a_reader(api, oidc, world, minio, own_database):
    s3 = world["S3"]
    table_id = s3["tables"]["ns.t"]
    table = f"{s3['prefix']}/namespaces/ns/tables/t"
    with _client(api, oidc, "spark", s3["project"]) as spark:
        full = spark.get(table, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}).json()
    location = full["metadata"]["location"]
    bucket, _, key_prefix = location.removeprefix("s3://").partition("/")
    writer = full["config"]
    minio.client(key=writer["s3.access-key-id"], secret=writer["s3.secret-access-key"],
                 token=writer["s3.session-token"]).put_object(Bucket=bucket, Key=f"{key_prefix}/data/spark.txt",
                                                              Body=b"spark")
    with (Grant(api, oidc, f"warehouse/{s3['warehouse']}/table/{table_id}", "select", s3["project"]),
          _client(api, oidc, "bob", s3["project"]) as bob):
        for r in (bob.get(table, headers={"X-Iceberg-Access-Delegation": "vended-credentials"}),
                  bob.get(table, params={"snapshots": "all"},
                          headers={"X-Iceberg-Access-Delegation": "vended-credentials"})):
            assert r.status_code == 200, r.text
            config = r.json()["config"]
            assert config["s3.access-key-id"] != writer["s3.access-key-id"]
        # loadCredentials: new credentials at each call (the engine's renewal), read-only for bob as well
        renewed = bob.get(f"{table}/credentials").json()["storage-credentials"][0]["config"]
        assert renewed["s3.access-key-id"] != config["s3.access-key-id"]
        for vended in (config, renewed):
            mine = minio.client(key=vended["s3.access-key-id"], secret=vended["s3.secret-access-key"],
                                token=vended["s3.session-token"])
            assert mine.get_object(Bucket=bucket, Key=f"{key_prefix}/data/spark.txt")["Body"].read() == b"spark"
            with pytest.raises(ClientError) as refused:
                mine.put_object(Bucket=bucket, Key=f"{key_prefix}/data/bob.txt", Body=b"bob")
            assert refused.value.response["Error"]["Code"] == "AccessDenied"

        # remote signing: the same signer URL for everyone, each request judged on its caller's rights
        signing = bob.get(table, headers={"X-Iceberg-Access-Delegation": "remote-signing"}).json()["config"]
        signer = f"{signing['s3.signer.uri']}/{signing['s3.signer.endpoint']}"
        url = f"{minio.endpoint}/{bucket}/{key_prefix}/data/spark.txt"
        request = {"region": "us-east-1", "uri": url, "headers": {"host": [minio.endpoint[7:]]}}
        before = log_length(own_database)
        read = bob.post(signer, json={**request, "method": "GET"})
        assert read.status_code == 200, read.text
        for method in ("PUT", "DELETE", "PATCH"):  # a reader neither writes nor deletes the table's files
            write = bob.post(signer, json={**request, "method": method})
            assert write.status_code == 403, method
            assert "can_write_data" in write.json()["error"]["message"]
        batch = bob.post(signer, json={**request, "method": "POST", "uri": f"{minio.endpoint}/{bucket}?delete",
                                       "body": f"<Delete><Object><Key>{key_prefix}/data/spark.txt</Key></Object>"
                                               "</Delete>"})
        assert batch.status_code == 403, batch.text
        with _client(api, oidc, "spark", s3["project"]) as spark:
            assert spark.post(signer, json={**request, "method": "PUT"}).status_code == 200
        assert log_length(own_database) == before
    with _client(api, oidc, "bob", s3["project"]) as bob:
        assert bob.post(signer, json={**request, "method": "GET"}).status_code == 403


def test_pyiceberg_as_a_reader_scans_but_cannot_append(api, oidc, world, own_database, monkeypatch):
    """Both principals through pyiceberg with OAuth2 client credentials: spark writes; bob, granted select, scans
    with vended (read-only) credentials and through the remote signer, and his appends fail either way."""
    import pyarrow as pa
    import s3fs
    from pyiceberg.catalog.rest import RestCatalog

    monkeypatch.setattr(s3fs.S3FileSystem, "cachable", False)  # see tests/e2e/test_pyiceberg_s3.py
    s3 = world["S3"]

    def catalog(who: str, **extra) -> RestCatalog:
        return RestCatalog(who, uri=f"{api.url}/catalog", warehouse=s3["name"], credential=f"{who}:{who}-secret",
                           scope="catalog", **{"oauth2-server-uri": oidc.token_endpoint,
                                               "header.x-project-id": s3["project"], **extra})

    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "data": pa.array(["a", "b", "c"])})
    written = catalog("spark").create_table("ns.py", schema=rows.schema)
    written.append(rows)
    table_id = str(written.metadata.table_uuid)
    with Grant(api, oidc, f"warehouse/{s3['warehouse']}/table/{table_id}", "select", s3["project"]):
        signing = {"header.X-Iceberg-Access-Delegation": "remote-signing",
                   "py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO"}
        for bob in (catalog("bob"), catalog("bob", **signing)):
            table = bob.load_table("ns.py")
            assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [1, 2, 3]
            before = log_length(own_database)
            with pytest.raises(Exception) as refused:
                table.append(rows)
            # the data file cannot even be written (AccessDenied from MinIO, 403 from the signer)
            assert re.search(r"access.?denied|403|forbidden", str(refused.value), re.I), refused.value
            assert log_length(own_database) == before
        assert len(catalog("spark").load_table("ns.py").metadata.snapshots) == 1


def test_a_principal_of_project_a_sees_nothing_of_project_b(api, oidc, world, own_database):
    a, b = world["A"], world["B"]
    with Grant(api, oidc, f"project/{a['project']}", "select", a["project"]):
        before = log_length(own_database)
        with _client(api, oidc, "bob", a["project"]) as bob:
            assert [p["project-name"] for p in bob.get("/management/v1/project-list").json()["projects"]] == \
                ["project-A"]
            assert bob.get(f"{a['prefix']}/namespaces/ns/tables/u").status_code == 200
            assert bob.get(f"{b['prefix']}/namespaces").status_code == 404
            assert bob.get(f"{b['prefix']}/namespaces/ns/tables").status_code == 404
            assert bob.get(f"{b['prefix']}/namespaces/ns/tables/t").status_code == 404
            assert bob.get(f"{b['prefix']}/namespaces/ns").status_code == 404
            assert bob.get(f"/management/v1/warehouse/{b['warehouse']}").status_code == 404
            assert bob.get("/catalog/v1/config", params={"warehouse": b["warehouse"]}).status_code == 404
        # sending project B's id as x-project-id gives nothing either
        with _client(api, oidc, "bob", b["project"]) as spoofing:
            assert spoofing.get("/management/v1/project").status_code == 404
            assert spoofing.get("/management/v1/warehouse").status_code == 404
            assert spoofing.get("/catalog/v1/config", params={"warehouse": b["name"]}).status_code == 404
            assert spoofing.get("/management/v1/role").status_code == 404
            assert spoofing.post("/management/v1/role", json={"name": "spoof"}).status_code == 404
            assert spoofing.post("/management/v1/warehouse", json={"warehouse-name": "spoof", "storage-profile": {
                "type": "file", "location": f"file://{api.log_path.parent}/spoof"}}).status_code == 404
            assert spoofing.get(f"{b['prefix']}/namespaces/ns/tables/t").status_code == 404
        assert log_length(own_database) == before


def test_without_a_default_project_management_calls_need_x_project_id(api, oidc, world):
    with _client(api, oidc, "spark") as spark:
        for r in (spark.get("/management/v1/project"), spark.get("/management/v1/warehouse"),
                  spark.get("/management/v1/role")):
            assert r.status_code == 400
            assert "x-project-id" in r.json()["error"]["message"]


def test_serve_refuses_allowall_with_an_identity_provider(oidc, own_database, tmp_path):
    with pytest.raises(RuntimeError) as failure:
        Server(own_database, tmp_path, LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer, LAKELEDGER__WORKERS="off")
    assert "LAKELEDGER__AUTHZ_ALLOWALL_WITH_OPENID=true" in str(failure.value)
    assert "Traceback" not in str(failure.value)


def test_an_unreachable_openfga_is_a_503_never_a_refusal(oidc, pg_url, tmp_path):
    """No answer is not a no: with OpenFGA gone, requests that need a decision are 503 (clients retry those), the
    loadTable fast path included, and nothing is appended."""
    from support import OpenFgaServer

    database = create_database(pg_url, f"authz_down_{uuid.uuid4().hex[:12]}")
    openfga = OpenFgaServer(tmp_path / "openfga")
    api = None
    try:
        api = Server(database, tmp_path, LAKELEDGER__OPENID_PROVIDER_URI=oidc.issuer,
                     LAKELEDGER__OPENID_AUDIENCE=oidc.audience, LAKELEDGER__AUTHZ_BACKEND="openfga",
                     LAKELEDGER__OPENFGA__ENDPOINT=openfga.endpoint, LAKELEDGER__AUTHZ_CACHE_SECONDS="0",
                     LAKELEDGER__WORKERS="off", LAKELEDGER__PG_POOL_SIZE="3")
        with _client(api, oidc, "spark") as spark:
            assert spark.post("/management/v1/bootstrap", json={"accept-terms-of-use": True,
                                                                "is-operator": True}).status_code == 204
            r = spark.post("/management/v1/warehouse", json={"warehouse-name": "w", "storage-profile": {
                "type": "file", "location": f"file://{tmp_path}/w"}})
            assert r.status_code == 201, r.text
            prefix = f"/catalog/v1/{r.json()['warehouse-id']}"
            assert spark.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
            assert spark.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).status_code \
                == 200
            assert spark.get(f"{prefix}/namespaces/ns/tables/t").status_code == 200
            openfga.stop()
            before = log_length(database)
            for r in (spark.get(f"{prefix}/namespaces/ns/tables/t"), spark.get(f"{prefix}/namespaces"),
                      spark.post(f"{prefix}/namespaces", json={"namespace": ["more"]}),
                      spark.delete(f"{prefix}/namespaces/ns/tables/t")):
                assert r.status_code == 503, (r.request.method, r.request.url, r.text)
                assert r.json()["error"]["type"] == "ServiceUnavailableException"
            assert log_length(database) == before
    finally:
        if api is not None:
            api.stop()
        openfga.stop()


def test_a_namespace_move_takes_the_right_to_grant_at_both_ends(api, oidc, world, own_database):
    """Lakekeeper 0.14's rule for ``.../namespace/{id}/move``: ``manage_grants`` on the namespace moved, ``create``
    and ``manage_grants`` on its new parent. Refusals append nothing; once moved, the tree's rights come from its new
    parent (the tuple projection re-parented it)."""
    a = world["A"]
    with _client(api, oidc, "spark", a["project"]) as spark:
        ids = {}
        for ns in ("mv_src", "mv_dst"):
            r = spark.post(f"{a['prefix']}/namespaces", json={"namespace": [ns]})
            assert r.status_code == 200, r.text
            ids[ns] = r.json()["namespace-uuid"]
        assert spark.post(f"{a['prefix']}/namespaces/mv_src/tables", json={"name": "t", "schema": SCHEMA}) \
            .status_code == 200
    move = f"/management/v1/warehouse/{a['warehouse']}/namespace/{ids['mv_src']}/move"
    body = {"destination": ["mv_dst", "moved"]}

    def grant(namespace: str, relation: str) -> Grant:
        return Grant(api, oidc, f"namespace/{ids[namespace]}", relation, a["project"])

    before = log_length(own_database)
    with _client(api, oidc, "bob", a["project"]) as bob:
        r = bob.post(move, json=body)
        assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchNamespaceException", r.text
        with grant("mv_src", "modify"):  # he sees it, and may change it, but not grant on it
            r = bob.post(move, json=body)
            assert r.status_code == 403 and f"may not can_move on namespace {ids['mv_src']}" in r.text, r.text
            with grant("mv_src", "manage_grants"):
                r = bob.post(move, json=body)  # the new parent is hidden from him: as if it did not exist
                assert r.status_code == 404 and r.json()["error"]["message"] == "Namespace does not exist: mv_dst"
                with grant("mv_dst", "create"):
                    r = bob.post(move, json=body)
                    assert r.status_code == 403 and "can_accept_moved_namespace" in r.text, r.text
                    assert log_length(own_database) == before + 3  # the three grants only
                    with grant("mv_dst", "manage_grants"):
                        r = bob.post(move, json=body)
                        assert r.status_code == 200, r.text
                        assert r.json()["namespace"] == ["mv_dst", "moved"]
        # the moved tree inherits from its new parent: select there reaches the table under its new name
        assert bob.get(f"{a['prefix']}/namespaces/mv_dst%1Fmoved/tables/t").status_code == 404
        with grant("mv_dst", "select"):
            loaded = bob.get(f"{a['prefix']}/namespaces/mv_dst%1Fmoved/tables/t")
            assert loaded.status_code == 200, loaded.text


def test_generic_tables_are_authorized_as_tables(api, oidc, world, minio, own_database):
    """A generic table (Lakekeeper's Generic Table API) spark creates is invisible to bob, in loads, lists and drops;
    a grant of select on it (Lakekeeper's generic-table assignments) lets him load it with read-only vended
    credentials, which MinIO refuses to write with; he still may not drop or rename it."""
    s3 = world["S3"]
    base = f"/lakekeeper/v1/{s3['warehouse']}/namespaces/ns/generic-tables"
    with _client(api, oidc, "spark", s3["project"]) as spark, _client(api, oidc, "bob", s3["project"]) as bob:
        r = spark.post(base, json={"name": "vectors", "format": "lance"})
        assert r.status_code == 200, r.text
        location = r.json()["table"]["base-location"]
        [listed] = [i for i in spark.get(base).json()["identifiers"] if i["name"] == "vectors"]
        before = log_length(own_database)
        r = bob.get(f"{base}/vectors")
        assert r.status_code == 404 and r.json()["error"]["type"] == "NoSuchGenericTableException"
        assert bob.get(base).status_code == 404  # he may not even list the namespace
        assert bob.delete(f"{base}/vectors").status_code == 404
        assert bob.post(base, json={"name": "bobs", "format": "lance"}).status_code in (403, 404)
        assert log_length(own_database) == before
        with Grant(api, oidc, f"warehouse/{s3['warehouse']}/generic-table/{listed['id']}", "select", s3["project"]):
            r = bob.get(f"{base}/vectors", headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
            assert r.status_code == 200, r.text
            [credential] = r.json()["storage-credentials"]
            config = credential["config"]
            s3_client = minio.client(key=config["s3.access-key-id"], secret=config["s3.secret-access-key"],
                                     token=config["s3.session-token"])
            bucket, key = location.removeprefix("s3://").split("/", 1)
            with pytest.raises(ClientError):
                s3_client.put_object(Bucket=bucket, Key=f"{key}/bobs.lance", Body=b"no")
            s3_client.list_objects_v2(Bucket=bucket, Prefix=f"{key}/")  # reading is allowed
            # the signer asks the generic table's own grants: his reads are signed, his writes refused
            r = bob.get(f"{base}/vectors", headers={"X-Iceberg-Access-Delegation": "remote-signing"})
            assert r.status_code == 200, r.text
            sign = f"/catalog/{r.json()['config']['s3.signer.endpoint']}"
            uri = f"{minio.endpoint}/{bucket}/{key}/data.lance"
            for method, status in (("GET", 200), ("PUT", 403)):
                r = bob.post(sign, json={"region": "us-east-1", "method": method, "headers": {}, "uri": uri})
                assert r.status_code == status, (method, r.text)
            assert bob.delete(f"{base}/vectors").status_code == 403
            r = bob.post(f"/lakekeeper/v1/{s3['warehouse']}/generic-tables/rename", json={
                "source": {"namespace": ["ns"], "name": "vectors"}, "destination": {"namespace": ["ns"], "name": "b"}})
            assert r.status_code == 403, r.text
        assert spark.delete(f"{base}/vectors").status_code == 204


def test_a_warehouse_managed_by_instance_admin_changes_only_by_the_servers_admins(api, oidc, world, own_database):
    """Lakekeeper 0.14's managed-by: bob may modify the warehouse by his grant, yet its settings are locked to him
    once spark (the operator) marks it managed; what lies inside it is not."""
    a = world["A"]
    with _client(api, oidc, "spark", a["project"]) as spark:
        r = spark.post("/management/v1/warehouse", json={
            "warehouse-name": "managed", "project-id": a["project"],
            "storage-profile": {"type": "file", "location": f"file://{api.log_path.parent}/wh-managed"}})
        assert r.status_code == 201, r.text
        managed = r.json()["warehouse-id"]
        with Grant(api, oidc, f"warehouse/{managed}", "ownership", a["project"]), \
                _client(api, oidc, "bob", a["project"]) as bob:
            # bob may not mark it (nor create one marked): only the server's admins and operators may
            r = bob.post(f"/management/v1/warehouse/{managed}/managed-by", json={"managed-by": "instance-admin"})
            assert r.status_code == 403, r.text
            r = bob.post(f"/management/v1/warehouse/{managed}/rename",
                         json={"new-name": "bobs"})
            assert r.status_code == 200, r.text
            r = spark.post(f"/management/v1/warehouse/{managed}/managed-by", json={"managed-by": "instance-admin"})
            assert r.status_code == 200 and r.json()["managed-by"] == "instance-admin", r.text
            before = log_length(own_database)
            for path, body in (("rename", {"new-name": "again"}), ("deactivate", None),
                               ("delete-profile", {"delete-profile": {"type": "hard"}}),
                               ("format-version-policy", {"allowed-format-versions": [2]}),
                               ("protection", {"protected": True})):
                r = bob.post(f"/management/v1/warehouse/{managed}/{path}", json=body)
                assert r.status_code == 403 and r.json()["error"]["type"] == "WarehouseManaged", (path, r.text)
            r = bob.delete(f"/management/v1/warehouse/{managed}")
            assert r.status_code == 403 and r.json()["error"]["type"] == "WarehouseManaged", r.text
            assert log_length(own_database) == before
            # the dry run says the same, as a failed check
            report = bob.post(f"/management/v1/warehouse/{managed}/storage/validate-profile", json={
                "storage-profile": {"type": "file", "location": f"file://{api.log_path.parent}/wh-managed"}}).json()
            assert {c["name"]: c["status"] for c in report["checks"]}["spec-mutable"] == "failed", report
            # inside it, bob's grant works as before
            assert bob.post(f"/catalog/v1/{managed}/namespaces", json={"namespace": ["inside"]}).status_code == 200
            # the operator changes what bob may not, and lifts the mark
            assert spark.post(f"/management/v1/warehouse/{managed}/rename", json={"new-name": "ops"}).status_code == 200
            r = spark.post(f"/management/v1/warehouse/{managed}/managed-by", json={"managed-by": "self-managed"})
            assert r.status_code == 200, r.text
            r = bob.post(f"/management/v1/warehouse/{managed}/rename", json={"new-name": "bobs-again"})
            assert r.status_code == 200, r.text
            # bob's namespace goes, or its ownership would keep the project visible to him in the tests after this
            assert bob.delete(f"/catalog/v1/{managed}/namespaces/inside").status_code == 204


def test_a_tag_is_set_with_apply_on_its_definition_and_modify_on_the_object(api, oidc, world, own_database):
    """Governance tags under OpenFGA: spark's tag definition is invisible to bob; seeing a table lets him read its
    tags, not set them; `apply` on the definition (its assignments) and `modify` on the table let him tag that
    table and take the tag off, never delete the definition. Every refusal leaves the log as it was."""
    a = world["A"]
    w = f"/management/v1/warehouse/{a['warehouse']}"
    t, u = a["tables"]["ns.t"], a["tables"]["ns.u"]
    with _client(api, oidc, "spark", a["project"]) as spark, _client(api, oidc, "bob", a["project"]) as bob:
        r = spark.post("/management/v1/tag-definition", json={"name": "pii", "scope": ["table"],
                                                               "value-kind": "marker"})
        assert r.status_code == 201, r.text
        definition = f"/management/v1/tag-definition/{r.json()['id']}"
        before = log_length(own_database)
        r = bob.get(definition)
        assert r.status_code == 404 and r.json()["error"]["type"] == "TagDefinitionNotFound"
        assert bob.post("/management/v1/tag-definition", json={"name": "bobs", "scope": ["table"],
                                                               "value-kind": "marker"}).status_code in (403, 404)
        assert bob.put(f"{w}/table/{t}/tags/pii", json={}).status_code == 404
        assert log_length(own_database) == before
        with table_grant(api, oidc, a, "ns.t"):
            granted = log_length(own_database)
            assert bob.get(f"{w}/table/{t}/tags").json() == {"tags": []}
            assert bob.put(f"{w}/table/{t}/tags/pii", json={}).status_code == 403
            assert log_length(own_database) == granted
        apply = Grant(api, oidc, f"tag/{definition.rsplit('/', 1)[1]}", "apply", a["project"])
        with table_grant(api, oidc, a, "ns.t", "modify"), apply:
            r = bob.put(f"{w}/table/{t}/tags/PII", json={})
            assert r.status_code == 200, r.text
            assert bob.get(definition).status_code == 200
            assert bob.get(f"{w}/table/{t}/tags").json()["tags"][0]["name"] == "pii"
            assert bob.put(f"{w}/table/{u}/tags/pii", json={}).status_code == 404
            assert bob.delete(definition).status_code == 403
            actions = bob.get(f"{definition}/actions").json()["allowed-actions"]
            assert {x["action"] for x in actions} == {"read", "apply", "remove"}
            assert bob.delete(f"{w}/table/{t}/tags/pii").status_code == 204
        assert spark.get(f"{definition}/actions", params={"principalUser": "oidc~bob"}).json() == {
            "allowed-actions": []}
        assert spark.delete(definition).status_code == 204


def test_adls_and_gcs_credentials_a_reader_loads_and_renews_are_read_only(api, oidc, world, azurite, fake_gcs):
    """As for S3 above, on ADLS (a directory SAS for read and list only) and GCS (a token downscoped to the storage
    viewer role): neither emulator can refuse a write with them (Azurite rejects every directory SAS, fake-gcs-server
    takes any token), so what the catalog signs and asks STS for is checked."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from gcs_tokens import TokenEndpoints, service_account_key

    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    tokens = TokenEndpoints(private_key.public_key(), "lakeledger@lakeledger-tests.iam.gserviceaccount.com")
    bucket = fake_gcs.make_bucket("lakeledger-authorization-tests")
    with _client(api, oidc, "spark") as spark:  # a project of its own: the other tests' lists stay as they are
        r = spark.post("/management/v1/project", json={"project-name": "project-storage-readers"})
        assert r.status_code == 201, r.text
        project = r.json()["project-id"]
        adls = _warehouse(spark, project, "A-adls", azurite.profile(
            azurite.make_filesystem(f"authz-{uuid.uuid4().hex[:8]}"), "authz"), azurite.credential())
        gcs = _warehouse(spark, project, "A-gcs", {
            "type": "gcs", "bucket": bucket, "key-prefix": f"authz-{uuid.uuid4().hex[:8]}",
            "endpoint": fake_gcs.endpoint, "sts-endpoint": f"{tokens.url}/v1/token"},
            {"type": "gcs", "credential-type": "service-account-key", "key": service_account_key(private_key, tokens)})
    sas_key = f"adls.sas-token.{azurite.account}.dfs.core.windows.net"
    try:
        for place in (adls, gcs):
            table = f"{place['prefix']}/namespaces/ns/tables/t"
            with table_grant(api, oidc, {**place, "project": project}, "ns.t"), \
                    _client(api, oidc, "bob", project) as bob:
                loaded = bob.get(table, headers={"X-Iceberg-Access-Delegation": "vended-credentials"})
                assert loaded.status_code == 200, loaded.text
                location = loaded.json()["metadata"]["location"]
                time.sleep(1.1)  # a SAS's times are in seconds: a renewal in the same second would sign the same
                renewed = bob.get(f"{table}/credentials")
                assert renewed.status_code == 200, renewed.text
                [credential] = renewed.json()["storage-credentials"]
                assert credential["prefix"] == location
                held, fresh = loaded.json()["config"], credential["config"]
                if place is adls:
                    assert fresh[sas_key] != held[sas_key]
                    for config in (held, fresh):
                        assert parse_qs(config[sas_key])["sp"] == ["rl"] and parse_qs(config[sas_key])["sr"] == ["d"]
                else:
                    assert fresh["gcs.oauth2.token"] != held["gcs.oauth2.token"]
                    for config in (held, fresh):
                        exchange = next(e for e in tokens.exchanges if e["token"] == config["gcs.oauth2.token"])
                        (rule,) = exchange["options"]["accessBoundary"]["accessBoundaryRules"]
                        assert rule["availablePermissions"] == ["inRole:roles/storage.objectViewer"]
                        assert location.removeprefix(f"gs://{bucket}/") in rule["availabilityCondition"]["expression"]
    finally:
        tokens.stop()
