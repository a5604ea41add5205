"""Table maintenance on Spark: Iceberg's own procedures, run as Spark jobs whose catalog is Lakeledger itself, so every
commit they make goes through the catalog like any engine's (docs/table-maintenance.md).

``procedures`` builds a job's statements and reads their results (pure), ``figures`` reads what a table's metadata says
for the policies' triggers, ``spark`` runs a job as a process of its own (no JVM inside Lakeledger's processes), and
``spark_job`` is that process. The workers that schedule and run the jobs are lakeledger/workers/maintainer.py."""
