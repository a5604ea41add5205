"""A Spark driver of its own, run as a subprocess by the tests that use the standalone cluster (`spark_cluster`):
PySpark allows one SparkContext per process, and the pytest process may hold the `spark` fixture's.

Argument: a JSON object, ``settings`` (the SparkSession's configuration, ``spark.master`` among them) and
``statements`` (Spark SQL, run in order). Output on stdout, one JSON object a line: ``{"rows": [...]}`` for each
statement, its rows as objects (column name: value), then ``{"application": <the application's id>}``. A statement
that fails ends the job with a non-zero exit code and Spark's error on stderr."""

import json
import sys

from pyspark.sql import SparkSession


def main() -> None:
    job = json.loads(sys.argv[1])
    builder = SparkSession.builder.appName(job.get("name", "lakeledger-cluster-job"))
    for key, value in job["settings"].items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        for statement in job["statements"]:
            rows = [row.asDict(recursive=True) for row in session.sql(statement).collect()]
            print(json.dumps({"rows": rows}, default=str), flush=True)
        print(json.dumps({"application": session.sparkContext.applicationId}), flush=True)
    finally:
        session.stop()


if __name__ == "__main__":
    main()
