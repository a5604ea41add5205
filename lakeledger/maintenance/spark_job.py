"""One maintenance job on Spark, as a process of its own (``python -m lakeledger.maintenance.spark_job``): reads the
job (JSON: master, Spark settings, statements) on stdin, runs each statement, and prints the figures as the last line
of its output (JSON). A catalog credential comes in the environment, never on the command line or in the job.

It runs with PySpark (the ``spark`` extra), which starts its own JVM: a Spark driver that runs the executors on the
master it is given (``local[N]`` in this process, or a cluster)."""

import json
import os
import sys

CREDENTIAL_VARIABLE = "LAKELEDGER_MAINTENANCE_CREDENTIAL"


def main() -> int:
    job = json.load(sys.stdin)
    from pyspark.sql import SparkSession

    from lakeledger.maintenance.procedures import figures

    builder = SparkSession.builder.master(job["master"]).appName(job["app_name"])
    conf = dict(job["conf"])
    credential = os.environ.get(CREDENTIAL_VARIABLE)
    if credential:
        conf[f"spark.sql.catalog.{job['catalog']}.credential"] = credential
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    try:
        found: dict[str, int] = {}
        for call in job["calls"]:
            rows = [row.asDict() for row in spark.sql(call["sql"]).collect()]
            for name, value in figures(call["procedure"], rows).items():
                found[name] = found.get(name, 0) + value
        print(json.dumps({"figures": found}), flush=True)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
