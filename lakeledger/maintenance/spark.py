"""Runs a maintenance job on Spark as a process of its own (lakeledger/maintenance/spark_job.py), with Lakeledger as the
job's Iceberg REST catalog: the JVM never lives in a Lakeledger process (its memory stays the catalog's), a job that
hangs is killed at its timeout with everything it started, and a worker killed with -9 takes its job down with it
(the job's Python dies with its parent; PySpark's JVM ends when its Python does)."""

import contextlib
import ctypes
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lakeledger.maintenance.procedures import Call
from lakeledger.maintenance.spark_job import CREDENTIAL_VARIABLE
from lakeledger.settings import Settings

logger = logging.getLogger("lakeledger.maintenance")

CATALOG = "lakeledger"
# Iceberg's Spark runtime matching the `spark` extra's PySpark (3.5, Scala 2.12), fetched by Spark from Maven Central
# when neither spark.jars nor spark.jars.packages is set
DEFAULT_PACKAGES = "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0"
MAX_ERROR_CHARS = 500
_PR_SET_PDEATHSIG = 1
STOP_CHECK_SECONDS = 0.5
STOP_REQUEST_CHECK_SECONDS = 2.0  # a read of the tasks read model


class JobFailed(Exception):
    """The job did not finish: Spark or a procedure failed, the catalog refused a commit, or the timeout passed."""


class JobStopped(Exception):
    """The job was killed because its worker is stopping."""


class JobStopRequested(JobFailed):
    """The job was killed because a task control asked its run to stop (Lakekeeper's ``stop``)."""


@dataclass(frozen=True)
class Job:
    warehouse: str
    calls: list[Call]
    # sent as every catalog request's x-request-id, so the job's commits are found by the run in the history
    request_id: str


class SparkJobs:
    """Submits jobs to ``LAKELEDGER__SPARK_MASTER`` through PySpark in a child process."""

    def __init__(self, settings: Settings):
        self.master = settings.spark_master
        self.python = settings.spark_python or sys.executable
        self.timeout = settings.maintenance_job_timeout_seconds
        self.catalog_uri = (settings.maintenance_catalog_uri
                            or f"http://127.0.0.1:{settings.listen_port}/catalog").rstrip("/")
        self.extra_conf = dict(settings.spark_conf)
        self.credential = settings.maintenance_credential.get_secret_value() \
            if settings.maintenance_credential else None
        self.oauth2_server_uri = settings.maintenance_oauth2_server_uri
        self.provider_uri = settings.openid_provider_uri
        self.scope = settings.maintenance_scope

    def conf(self, job: Job) -> dict[str, str]:
        catalog = f"spark.sql.catalog.{CATALOG}"
        conf = {
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            catalog: "org.apache.iceberg.spark.SparkCatalog",
            f"{catalog}.type": "rest",
            f"{catalog}.uri": self.catalog_uri,
            f"{catalog}.warehouse": job.warehouse,
            # every load asks the catalog: a job must work on the table as it is now
            f"{catalog}.cache-enabled": "false",
            f"{catalog}.header.X-Iceberg-Access-Delegation": "vended-credentials",
            f"{catalog}.header.x-request-id": job.request_id,
            "spark.ui.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
        }
        if self.credential:
            conf[f"{catalog}.oauth2-server-uri"] = self._token_endpoint()
            if self.scope:
                conf[f"{catalog}.scope"] = self.scope
        conf.update(self.extra_conf)
        if "spark.jars" not in conf and "spark.jars.packages" not in conf:
            conf["spark.jars.packages"] = DEFAULT_PACKAGES
        return conf

    def _token_endpoint(self) -> str:
        if self.oauth2_server_uri:
            return self.oauth2_server_uri
        if not self.provider_uri:
            raise JobFailed("LAKELEDGER__MAINTENANCE_CREDENTIAL is set without an OpenID provider: set "
                            "LAKELEDGER__MAINTENANCE_OAUTH2_SERVER_URI to the token endpoint")
        import httpx  # here: only a maintenance credential needs it, and serve need not carry it

        try:
            found = httpx.get(self.provider_uri.rstrip("/") + "/.well-known/openid-configuration", timeout=10)
            found.raise_for_status()
            return str(found.json()["token_endpoint"])
        except (httpx.HTTPError, KeyError, ValueError) as e:
            raise JobFailed(f"the OpenID provider's token endpoint is unknown: {e}") from None

    def run(self, job: Job, stop: threading.Event | None = None,
            stop_requested: Callable[[], bool] | None = None) -> dict[str, int]:
        """Runs the job; the figures its procedures reported. Raises JobFailed, JobStopped when ``stop`` is set
        first (the worker is stopping: the job is killed, and the run taken over by the next worker), or
        JobStopRequested when ``stop_requested`` (asked every STOP_REQUEST_CHECK_SECONDS) says a task control asked
        for it."""
        body = json.dumps({"master": self.master, "app_name": f"lakeledger-maintenance {job.request_id}",
                           "catalog": CATALOG, "conf": self.conf(job),
                           "calls": [{"procedure": c.procedure, "sql": c.sql} for c in job.calls]})
        env = {**os.environ, "PYSPARK_PYTHON": self.python}
        if self.credential:
            env[CREDENTIAL_VARIABLE] = self.credential
        started = time.monotonic()
        try:
            process = subprocess.Popen([self.python, "-m", "lakeledger.maintenance.spark_job"], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
                                       start_new_session=True, preexec_fn=_die_with_parent)
        except OSError as e:
            raise JobFailed(f"cannot start {self.python}: {e}") from None
        sent: str | None = body
        asked_at = started
        try:
            while True:
                try:
                    out, err = process.communicate(sent, timeout=STOP_CHECK_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    sent = None  # sent once; a later call collects what is left
                    if stop is not None and stop.is_set():
                        raise JobStopped("the worker stopped") from None
                    if stop_requested is not None and time.monotonic() - asked_at >= STOP_REQUEST_CHECK_SECONDS:
                        asked_at = time.monotonic()
                        if stop_requested():
                            raise JobStopRequested("stopped by a task control (stop); tried again") from None
                    if time.monotonic() - started > self.timeout:
                        raise JobFailed(f"the job ran longer than {self.timeout:.0f} s "
                                        f"(LAKELEDGER__MAINTENANCE_JOB_TIMEOUT_SECONDS) and was stopped") from None
        except BaseException:
            _kill_group(process)
            raise
        logger.info("maintenance job %s ended with %s after %.1f s", job.request_id, process.returncode,
                    time.monotonic() - started)
        if process.returncode != 0:
            raise JobFailed(_reason(err))
        return _figures(out)


def _die_with_parent() -> None:
    """In the child, before exec: the kernel kills it when the worker dies (kill -9 included)."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux: the JVM still ends with its Python
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _kill_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _figures(out: str) -> dict[str, int]:
    for line in reversed(out.strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, Mapping) and isinstance(found.get("figures"), Mapping):
            return {str(k): int(v) for k, v in found["figures"].items()}
    raise JobFailed("the job printed no figures")


def _reason(err: str) -> str:
    """The error a failed job records: the last exception Spark or Python printed, not the whole log."""
    lines = [line.strip() for line in err.splitlines() if line.strip()]
    chosen = next((line for line in reversed(lines) if "Exception" in line or "Error" in line), None)
    text = chosen or (lines[-1] if lines else "the job failed without a message")
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"
