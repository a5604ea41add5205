"""A Spark standalone cluster for the tests: one master and one worker, real processes started from the PySpark
package installed in the venv (it holds a whole Spark distribution: ``bin/spark-class`` and ``jars/``), on
loopback. Jobs reach it as ``spark://127.0.0.1:PORT``; their executors run as children of the worker."""

import json
import os
import urllib.request
from pathlib import Path

import pytest

from harness.processes import LOOPBACK, Child, free_port

# the master's status goes straight to loopback, never through a proxy the environment names
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def spark_home() -> Path:
    """The installed PySpark package's directory, which Spark's launch scripts take as SPARK_HOME."""
    try:
        import pyspark
    except ImportError:
        pytest.fail("PySpark is missing from the venv: run `make setup`")
    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file() or not (home / "jars").is_dir():
        pytest.fail(f"PySpark at {home} has no bin/spark-class or jars/: run `make setup`")
    return home


class SparkStandalone:
    """A master and one worker offering ``cores`` cores and ``memory`` to executors, their logs and the worker's
    work directory (each application's executor logs) under ``home``. Ready once the master lists the worker ALIVE.

    ``master_url`` is what a job's ``spark.master`` names; ``completed_applications()`` and
    ``running_applications()`` are what the master reports (each a dict with ``id``, ``name``, ``state``...);
    ``executor_dirs(app_id)`` are the executors the worker launched for one application. ``stop()`` stops the
    worker (and the executors it launched) and the master."""

    def __init__(self, home: Path, cores: int = 2, memory: str = "1g", timeout: float = 120.0):
        spark = spark_home()
        conf = home / "conf"  # empty: no spark-defaults.conf or spark-env.sh from elsewhere applies
        self.work_dir = home / "work"
        local = home / "local"  # the executors' scratch space (spark.local.dir), /tmp otherwise
        for folder in (conf, self.work_dir, local):
            folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "SPARK_HOME": str(spark), "SPARK_CONF_DIR": str(conf), "SPARK_LOCAL_IP": LOOPBACK,
               "SPARK_LOCAL_DIRS": str(local),
               # the daemons only schedule (executors get JVMs of their own): a small heap (Spark's default is 1g),
               # grown from 32m, takes each about 135 MiB where the defaults took 195
               "SPARK_DAEMON_MEMORY": "256m",
               "SPARK_DAEMON_JAVA_OPTS": "-Xms32m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"}
        port, self.webui_port = free_port(), free_port()
        self.master_url = f"spark://{LOOPBACK}:{port}"
        self.status_url = f"http://{LOOPBACK}:{self.webui_port}/json/"
        spark_class = str(spark / "bin" / "spark-class")
        # each daemon leads a process group of its own: spark-class execs the JVM, and the worker's executors are
        # its children, so the stop signals reach them all
        self.master = Child([spark_class, "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                             "--port", str(port), "--webui-port", str(self.webui_port)],
                            home / "master.log", env, new_session=True, name="Spark master")
        self.worker: Child | None = None
        try:
            self.master.wait_ready(lambda: self._status() is not None, timeout, 0.2)
            self.worker = Child([spark_class, "org.apache.spark.deploy.worker.Worker", self.master_url,
                                 "--host", LOOPBACK, "--port", str(free_port()), "--webui-port", str(free_port()),
                                 "--cores", str(cores), "--memory", memory, "--work-dir", str(self.work_dir)],
                                home / "worker.log", env, new_session=True, name="Spark worker")
            self.worker.wait_ready(self._worker_alive, timeout, 0.2)
        except RuntimeError as e:
            self.stop()
            pytest.fail(f"the Spark standalone cluster did not start: {e}")

    def job_settings(self, executor_memory: str = "512m", cores: int = 1) -> dict[str, str]:
        """The Spark settings of a driver that runs its work on this cluster: one executor of ``cores`` cores and
        ``executor_memory`` (with the defaults, two such executors fit the worker), everything on loopback, so
        the executors reach the driver (for its jars, from ``spark.jars``) at the address it listens on."""
        return {"spark.master": self.master_url, "spark.driver.host": LOOPBACK, "spark.driver.bindAddress": LOOPBACK,
                "spark.executor.memory": executor_memory, "spark.executor.cores": str(cores),
                "spark.cores.max": str(cores), "spark.ui.enabled": "false"}

    def _status(self) -> dict | None:
        try:
            with _DIRECT.open(self.status_url, timeout=2) as answer:
                return json.load(answer)
        except (OSError, ValueError):
            return None

    def _worker_alive(self) -> bool:
        status = self._status()
        return bool(status and any(w["state"] == "ALIVE" for w in status["workers"]))

    def status(self) -> dict:
        """The master's JSON status (its web UI's /json/): workers, active and completed applications."""
        status = self._status()
        if status is None:
            pytest.fail(f"the Spark master's status ({self.status_url}) did not answer:\n{self.master.tail()}")
        return status

    def completed_applications(self) -> list[dict]:
        return self.status()["completedapps"]

    def running_applications(self) -> list[dict]:
        return self.status()["activeapps"]

    def executor_dirs(self, app_id: str) -> list[Path]:
        """The work directories of the executors the worker launched for ``app_id`` (each holds its logs)."""
        return sorted(p for p in (self.work_dir / app_id).glob("*") if p.is_dir())

    def stop(self) -> None:
        # the worker first: stopped, it kills its executors; the master would otherwise see it vanish
        if self.worker is not None:
            self.worker.stop()
        self.master.stop()
