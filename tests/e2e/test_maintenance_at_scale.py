"""Issue 31 point 5: a table decayed the way a streaming writer decays one (500 small appends, position deletes from
Spark's DELETE and MERGE INTO, orphan files, a history days old) is looked after by the four policies, its runs
executed on a Spark standalone cluster; afterwards its files are at the target, its snapshots and metadata files
within policy, the orphans gone and the storage smaller, and pyiceberg, Spark, DuckDB and Trino all read the same rows.
The appends are written with pyiceberg's own writers and committed through the catalog (`stream`): seconds, where
`table.append` took four minutes; the position deletes are Spark's own.

The table lives in a warehouse of a maintenance server of its own (its workers run maintenance on the cluster;
the session's server has maintenance off, and the session's other tests leave enabled policies behind on its
warehouses), placed under the folder of the session server's Spark warehouse: Trino reads that warehouse only
(it reads its catalogs once, at start), so the maintained table is registered there afterwards, read-only, for it.
Spark is the session's `spark` fixture with a second catalog on the maintenance server."""

import json
import os
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from maintenance_support import (
    AGE_DAYS,
    DAY_MS,
    Stack,
    maintenance_database,
    maintenance_server,
    move_back,
    path_of,
    requests_by_status,
    stored,
)
from pyiceberg.io.pyarrow import write_file
from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus, ManifestFile, write_manifest, write_manifest_list
from pyiceberg.table import Table, WriteTask
from pyiceberg.table.metadata import _generate_snapshot_id
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import (
    Operation,
    Snapshot,
    SnapshotSummaryCollector,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
    TableUpdate,
)
from support import duckdb_connection, wait_until

pytestmark = pytest.mark.spark

APPENDS = 500
ROWS_PER_APPEND = 4
APPENDS_PER_COMMIT = 50  # as fast as the catalog allows: one commit carries fifty appends, each its own snapshot
VERSIONS_KEPT = 10  # write.metadata.previous-versions-max
SPARK_CATALOG = "upkeep"
SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
POLICIES = {
    "system.data-compaction": {"enabled": True, "trigger-small-files": 10, "min-input-files": 2,
                               "rewrite-position-deletes": True},
    "system.metadata-compaction": {"enabled": True, "trigger-manifests": 5},
    "system.snapshot-expiry": {"enabled": True, "max-snapshot-age": "PT1H", "min-snapshots-to-keep": 1,
                               "trigger-snapshots": 5},
    "system.orphan-file-removal": {"enabled": True, "min-orphan-age": "P1D"},
}
QUEUES = {"data_compaction", "metadata_compaction", "snapshot_expiry", "orphan_file_removal"}
ENDED = ("SUCCESS", "FAILED", "CANCELLED")


@pytest.fixture(scope="module")
def stack(pg_url, tmp_path_factory, spark_runtime, spark_cluster):
    home = tmp_path_factory.mktemp("maintenance-at-scale")
    # each job is a short-lived driver and executor: the client compiler only and the serial collector spare the
    # two cores the JIT's and the collector's threads would take from the work (not production defaults, only here)
    jvm = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    conf = {**spark_cluster.job_settings(cores=2), "spark.jars": spark_runtime, "spark.driver.memory": "512m",
            "spark.sql.shuffle.partitions": "2", "spark.driver.extraJavaOptions": jvm,
            "spark.executor.extraJavaOptions": jvm}
    server = maintenance_server(maintenance_database(pg_url), home, spark_runtime,
                                LAKELEDGER__SPARK_MASTER=spark_cluster.master_url,
                                LAKELEDGER__SPARK_CONF=json.dumps(conf))
    try:
        yield Stack(server, home)
    finally:
        server.stop()


def expected_rows() -> list[tuple[int, str]]:
    """What the appends, the DELETE and the MERGE INTO below leave."""
    return [(i, f"merged {i}" if i % 50 == 0 else f"row {i}")
            for i in range(APPENDS * ROWS_PER_APPEND) if i % 10 != 3]


def build(stack: Stack, warehouse: dict, spark) -> float:
    """The table; when its appends were committed (monotonic), for the figures printed."""
    catalog = stack.catalog(warehouse)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=SCHEMA, properties={
        "format-version": "2", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read",
        "write.merge.mode": "merge-on-read", "write.metadata.delete-after-commit.enabled": "true",
        "write.metadata.previous-versions-max": str(VERSIONS_KEPT),
        # as a streaming writer's table: every commit adds a manifest, none is merged on the way
        "commit.manifest-merge.enabled": "false",
        # Spark's scans for the DELETE and the MERGE INTO pack 32 of these tiny files to a task (each weighs the
        # 4 MiB open-file cost); the adaptive split size would shrink the splits to 16 MiB: 125 and 175 tasks
        "read.split.adaptive-size.enabled": "false"})
    stream(table)
    streamed = time.monotonic()
    # position deletes: Spark's row-level DELETE and MERGE INTO in merge-on-read mode
    spark.sql(f"DELETE FROM {SPARK_CATALOG}.ns.t WHERE id % 10 = 3")
    spark.sql(f"MERGE INTO {SPARK_CATALOG}.ns.t t USING (SELECT id, concat('merged ', id) AS v "
              f"FROM range(0, {APPENDS * ROWS_PER_APPEND}, 50)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    return streamed


def stream(table: Table) -> None:
    """The ``APPENDS`` appends of a streaming writer, each its own data file, manifest and snapshot (a fast append:
    its manifest list names its new manifest and every earlier one), committed through the catalog
    ``APPENDS_PER_COMMIT`` snapshots to a commit. Written with pyiceberg's own writers (Parquet, manifests, manifest
    lists) rather than ``table.append``, whose transaction spends about half a second an append re-reading and
    re-validating the growing metadata: 500 appends took four minutes that way and take seconds this way."""
    metadata = table.metadata
    schema, spec = metadata.schema(), metadata.spec()
    write_uuid = uuid.uuid4()
    tasks = []
    for n in range(APPENDS):
        ids = range(n * ROWS_PER_APPEND, (n + 1) * ROWS_PER_APPEND)
        rows = pa.table({"id": pa.array(ids, pa.int64()), "v": [f"row {i}" for i in ids]}, schema=SCHEMA)
        tasks.append(WriteTask(write_uuid=write_uuid, task_id=n, schema=schema, record_batches=rows.to_batches()))
    data_files = list(write_file(table.io, metadata, iter(tasks)))
    locations = table.location_provider()
    manifests: list[ManifestFile] = []  # the newest first, as a fast append lists them
    parent: Snapshot | None = None
    for first in range(0, APPENDS, APPENDS_PER_COMMIT):
        requirements = (AssertTableUUID(uuid=metadata.table_uuid),
                        AssertRefSnapshotId(ref=MAIN_BRANCH, snapshot_id=parent.snapshot_id if parent else None))
        updates: list[TableUpdate] = []
        for n in range(first, first + APPENDS_PER_COMMIT):
            snapshot_id, commit_uuid = _generate_snapshot_id(), uuid.uuid4()
            output = table.io.new_output(locations.new_metadata_location(f"{commit_uuid}-m0.avro"))
            with write_manifest(2, spec, schema, output, snapshot_id, "deflate") as writer:
                writer.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                                   data_file=data_files[n]))
            manifest_list = locations.new_metadata_location(f"snap-{snapshot_id}-0-{commit_uuid}.avro")
            with write_manifest_list(2, table.io.new_output(manifest_list), snapshot_id,
                                     parent.snapshot_id if parent else None, n + 1, "deflate") as lists:
                manifests.insert(0, lists.prepare_manifest(writer.to_manifest_file()))
                lists.add_manifests(manifests)
            added = SnapshotSummaryCollector()
            added.add_file(data_files[n], schema=schema, partition_spec=spec)
            summary = update_snapshot_summaries(Summary(Operation.APPEND, **added.build()),
                                                parent.summary.additional_properties if parent and parent.summary
                                                else None)
            parent = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id if parent else None,
                              sequence_number=n + 1, manifest_list=manifest_list, summary=summary,
                              schema_id=schema.schema_id)
            updates += [AddSnapshotUpdate(snapshot=parent),
                        SetSnapshotRefUpdate(ref_name=MAIN_BRANCH, type=SnapshotRefType.BRANCH,
                                             snapshot_id=snapshot_id)]
        table.catalog.commit_table(table, requirements, tuple(updates))


def files_by_content(stack: Stack, warehouse: dict) -> tuple[int, int]:
    """(data files, delete files) of the current snapshot."""
    files = stack.catalog(warehouse).load_table("ns.t").inspect.files().column("content").to_pylist()
    return files.count(0), len(files) - files.count(0)


def test_500_small_appends_with_deletes_are_maintained_on_the_cluster(stack, spark, spark_cluster, spark_runtime, trino,
                                                                      client, spark_warehouse):
    started = time.monotonic()
    name = f"upkeep-{uuid.uuid4().hex[:8]}"
    warehouse = stack.warehouse(name, spark_warehouse["path"] / name)
    spark_catalog = f"spark.sql.catalog.{SPARK_CATALOG}"
    for key, value in {"": "org.apache.iceberg.spark.SparkCatalog", ".type": "rest",
                       ".uri": f"{stack.server.url}/catalog", ".warehouse": name, ".cache-enabled": "false"}.items():
        spark.conf.set(spark_catalog + key, value)
    streamed = build(stack, warehouse, spark)
    deleted = time.monotonic()
    data_files, delete_files = files_by_content(stack, warehouse)
    assert data_files > APPENDS and delete_files >= 1, (data_files, delete_files)
    built_table = stack.catalog(warehouse).load_table("ns.t")
    operations = [s.summary.operation for s in built_table.snapshots() if s.summary]
    assert operations.count(Operation.APPEND) == APPENDS, operations
    # one manifest per append, none merged since (Spark's DELETE and MERGE INTO add theirs)
    assert built_table.inspect.manifests().num_rows > APPENDS
    expected = expected_rows()

    copied = path_of(stack.catalog(warehouse).load_table("ns.t").metadata_location)
    metadata = move_back(stack, warehouse, "t")
    location = path_of(metadata["location"])
    orphans = [location / "data" / f"orphan-{i}.parquet" for i in range(3)]
    days_ago = time.time() - AGE_DAYS * 86_400
    for orphan in orphans:
        orphan.write_bytes(b"PAR1 left by a failed write PAR1")
        os.utime(orphan, (days_ago, days_ago))
    files_before, data_bytes_before = stored(location)
    built = time.monotonic()

    applied_from = len(stack.history(warehouse))
    for policy_type, settings in POLICIES.items():
        stack.policy(warehouse, policy_type, settings)
    # looked at once a second: the jobs take minutes, and the catalog and Postgres serve them on the same two cores
    tasks = wait_until(lambda: (found := stack.tasks(warehouse))
                       and {t["queue-name"] for t in found if t["status"] in ENDED} >= QUEUES and found,
                       900, "every maintenance run to end", interval=1)
    maintained = time.monotonic()
    # each queue's run that succeeded, or its only one (a run the checks schedule later may be cancelled as no
    # longer due, below)
    chosen: dict[str, dict] = {}
    for t in tasks:
        if t["queue-name"] not in chosen or t["status"] == "SUCCESS":
            chosen[t["queue-name"]] = t
    details = {q: stack.details(warehouse, t["task-id"]) for q, t in chosen.items()}
    # a metadata compaction whose turn comes after the data compaction's commit, which dropped the manifests its
    # trigger counted, has nothing left to do: it runs and rewrites nothing, or, where a run's trigger is looked at
    # again when it starts, it is cancelled as no longer due; every other run succeeds
    ran = QUEUES - {"metadata_compaction"} if details["metadata_compaction"]["status"] == "CANCELLED" else QUEUES
    assert {details[q]["status"] for q in ran} == {"SUCCESS"}, {q: d["attempts"] for q, d in details.items()}
    figures = {q: details[q]["task-data"]["figures"] for q in ran}

    # the runs ran on the cluster: the master lists a finished application per run, whose executor the worker
    # launched with the Iceberg runtime fetched from the driver (spark.jars), not found on the worker's classpath
    completed = spark_cluster.completed_applications()
    apps = {q: [a["id"] for a in completed if t["task-id"] in a["name"] and a["state"] == "FINISHED"]
            for q, t in chosen.items() if q in ran}
    assert all(apps.values()), (apps, completed)
    runtime = next(Path(j).name for j in spark_runtime.split(",") if "iceberg-spark-runtime" in j)
    executors = {q: [e for app in found for e in spark_cluster.executor_dirs(app)] for q, found in apps.items()}
    assert all(dirs and all((e / runtime).is_file() for e in dirs) for dirs in executors.values()), executors
    # and the compaction's tasks ran there, not in the driver
    assert any("Running task" in (e / "stderr").read_text(errors="replace") for e in executors["data_compaction"])

    # files at the target: one data file (everything fits the 512 MiB target), the deletes applied and gone
    assert figures["data_compaction"]["rewritten_data_files_count"] >= APPENDS, figures
    assert files_by_content(stack, warehouse) == (1, 0)
    # snapshots and metadata within policy: the aged ones expired, the young ones no more than the trigger
    loaded = stack.client.get(f"{warehouse['prefix']}/namespaces/ns/tables/t").json()
    current = loaded["metadata"]
    table = stack.catalog(warehouse).load_table("ns.t")
    assert len(current["snapshots"]) <= POLICIES["system.snapshot-expiry"]["trigger-snapshots"], current["snapshots"]
    assert all(s["timestamp-ms"] > time.time() * 1000 - DAY_MS for s in current["snapshots"])
    # what is left are the runs' rewrites, recorded as `replace` snapshots
    assert {s["summary"]["operation"] for s in current["snapshots"]} == {"replace"}, current["snapshots"]
    assert figures["snapshot_expiry"]["deleted_data_files_count"] >= APPENDS, figures
    assert len(current["metadata-log"]) <= VERSIONS_KEPT
    # on disk only the current metadata file and those its log lists (and the one move_back copied, which no log
    # names: a file of the test's making, younger than the orphan age)
    kept = {path_of(e["metadata-file"]) for e in current["metadata-log"]} | {path_of(table.metadata_location), copied}
    assert set((location / "metadata").glob("*.metadata.json")) <= kept
    manifests = table.inspect.manifests()
    assert manifests.num_rows <= 2, manifests.to_pylist()
    # the planted orphans gone, the storage smaller
    assert figures["orphan_file_removal"] == {"orphan_files_deleted": 3}
    assert not any(o.exists() for o in orphans)
    files_after, data_bytes_after = stored(location)
    assert files_after < files_before - APPENDS and data_bytes_after < data_bytes_before

    # every reader returns the same rows
    assert sorted((r["id"], r["v"]) for r in table.scan().to_arrow().to_pylist()) == expected
    assert [(r.id, r.v) for r in spark.sql(f"SELECT id, v FROM {SPARK_CATALOG}.ns.t ORDER BY id").collect()] == expected
    duck = duckdb_connection()
    try:
        duck.execute(f"ATTACH '{name}' AS upkeep (TYPE iceberg, ENDPOINT '{stack.server.url}/catalog', "
                     "AUTHORIZATION_TYPE 'none')")
        assert duck.execute("SELECT id, v FROM upkeep.ns.t ORDER BY id").fetchall() == expected
    finally:
        duck.close()
    trino_schema = name.replace("-", "_")
    r = client.post(f"{spark_warehouse['prefix']}/namespaces", json={"namespace": [trino_schema]})
    assert r.status_code == 200, r.text
    r = client.post(f"{spark_warehouse['prefix']}/namespaces/{trino_schema}/register",
                    json={"name": "t", "metadata-location": table.metadata_location})
    assert r.status_code == 200, r.text
    try:
        cursor = trino.connect().cursor()
        cursor.execute(f"SELECT id, v FROM lake.{trino_schema}.t ORDER BY id")
        assert [tuple(row) for row in cursor.fetchall()] == expected
    finally:
        client.post(f"{spark_warehouse['prefix']}/namespaces/{trino_schema}/tables/t/unregister")

    # Spark's row-level writes and the four jobs' commits got no 5xx from the catalog
    answered = requests_by_status(stack)
    assert not {k: n for k, n in answered.items() if k[1].startswith("5")}, answered

    # the history shows each run with its figures
    history = stack.history(warehouse)[applied_from:]
    runs = [e for e in history if e["type"] == "table-maintenance.run-succeeded"]
    assert {q for q in QUEUES for e in runs if q in e["summary"]} == ran, [e["summary"] for e in runs]
    assert all(e["change"]["figures"] for e in runs), runs
    cancelled = [e for e in history if e["type"] == "table-maintenance.run-cancelled"]
    assert {q for q in QUEUES for e in cancelled if q in e["summary"]} >= QUEUES - ran, \
        [e["summary"] for e in cancelled]
    print(f"\nbuilt in {built - started:.0f} s (appends {streamed - started:.0f} s, Spark's DELETE and MERGE INTO "
          f"{deleted - streamed:.0f} s), maintained in {maintained - built:.0f} s; files {files_before} -> "
          f"{files_after}, data bytes {data_bytes_before} -> {data_bytes_after}; figures {figures}; "
          f"job seconds {({q: round(details[q]['task-data']['seconds']) for q in ran})}")
