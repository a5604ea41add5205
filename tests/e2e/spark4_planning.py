"""The PySpark 4 session of tests/e2e/test_spark4_scan_planning.py: tests/e2e/spark4_sql.py's SQL loop with Iceberg's
Java API over py4j for what SQL cannot do. Stdlib and PySpark only; runs in `make spark4-deps`'s interpreter.

- ``{"equality-delete": {"catalog", "table", "partition": {name: value}, "column", "values"}}`` writes a Parquet
  equality delete file of ``column`` (Spark writes none) into that partition of the table's current spec (``{}``
  when it is unpartitioned: a global equality delete) with iceberg-data's
  GenericAppenderFactory and commits it with a row delta; answers ``[[snapshot id, the delete file's path]]`` (the
  path as its manifest has it).
- ``{"incremental": {"catalog", "table", "start", "end", "columns"}}`` reads the appends after snapshot ``start`` up
  to ``end`` (the DataFrame options Spark has for it, which SQL has not); answers the rows in ``columns`` order."""

import uuid
from typing import Any

from pyspark.sql import SparkSession
from spark4_sql import main


def _iceberg_table(session: SparkSession, catalog: str, table: str) -> Any:
    jvm = session.sparkContext._jvm
    assert jvm is not None
    icebergs = jvm.org.apache.iceberg.spark.Spark3Util.loadIcebergCatalog(session._jsparkSession, catalog)
    return jvm, icebergs.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(table))


def equality_delete(session: SparkSession, argument: dict[str, Any]) -> list[list[Any]]:
    jvm, table = _iceberg_table(session, argument["catalog"], argument["table"])
    gateway = session.sparkContext._gateway
    assert gateway is not None
    iceberg = jvm.org.apache.iceberg
    schema, spec = table.schema(), table.spec()
    field_ids = gateway.new_array(jvm.int, 1)
    field_ids[0] = schema.findField(argument["column"]).fieldId()
    delete_schema = schema.select(jvm.java.util.List.of(argument["column"]))
    partition = iceberg.data.GenericRecord.create(spec.partitionType())
    for name, value in argument["partition"].items():
        partition.setField(name, value)
    factory = iceberg.data.GenericAppenderFactory(schema, spec, field_ids, delete_schema, None)
    file_name = f"eq-delete-{uuid.uuid4().hex}.parquet"
    location = table.locationProvider().newDataLocation(file_name) if spec.isUnpartitioned() else \
        table.locationProvider().newDataLocation(spec, partition, file_name)
    output = iceberg.encryption.EncryptedFiles.plainAsEncryptedOutput(table.io().newOutputFile(location))
    writer = factory.newEqDeleteWriter(output, iceberg.FileFormat.PARQUET, partition)
    for value in argument["values"]:
        row = iceberg.data.GenericRecord.create(delete_schema)
        row.setField(argument["column"], value)
        writer.write(row)
    writer.close()
    delete_file = writer.toDeleteFile()
    table.newRowDelta().addDeletes(delete_file).commit()
    table.refresh()
    return [[table.currentSnapshot().snapshotId(), delete_file.location()]]


def incremental(session: SparkSession, argument: dict[str, Any]) -> list[list[Any]]:
    frame = (session.read.format("iceberg").option("start-snapshot-id", str(argument["start"]))
             .option("end-snapshot-id", str(argument["end"])).load(f"{argument['catalog']}.{argument['table']}"))
    return [list(row) for row in frame.select(*argument["columns"]).collect()]


if __name__ == "__main__":
    main({"equality-delete": equality_delete, "incremental": incremental})
