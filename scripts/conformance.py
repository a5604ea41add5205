"""Conformance: Iceberg's REST Compatibility Kit and pyiceberg's own integration suite, each run against a real
`lakeledger serve`.

`make conformance` runs ``.venv/bin/python scripts/conformance.py``, which first runs Iceberg's REST Compatibility
Kit (its catalog and view tests, with Iceberg's Java client; see scripts/rck.py and conformance/pom.xml) against a
server of its own on a fresh data directory, and then

1. downloads the pyiceberg sdist from PyPI into .cache/conformance/ and unpacks its tests,
2. builds .cache/conformance/venv with pyiceberg and the test dependencies its integration tests import,
3. starts `lakeledger serve` on 127.0.0.1:8181 (the address pyiceberg's fixtures hardcode) on a fresh data
   directory whose default warehouse is ``default``,
4. starts a Spark Connect server on localhost:15002, as upstream's harness does (scripts/conformance_spark.py:
   the venv's PySpark 4.0.1 with Iceberg's Spark runtime, its ``rest`` catalog being our server), and creates
   the tables the read tests expect with upstream's own dev/provision.py over it,
5. runs every module of tests/integration with ``-m integration``, prints pass/fail/error counts per module and
   overall,
6. runs them again on a server whose default warehouse is an S3 warehouse (scripts/conformance_s3.py), on the
   MinIO the suite expects at localhost:9000 (up for both passes: some tests write their own files to
   ``s3://warehouse/...``), with a Spark Connect server and provisioning of its own,

and last prints passed/failed/skipped per suite. It exits non-zero when a test of any suite fails that is not
listed in scripts/conformance.known-failures.txt.

This same file is also loaded into that pytest run as a plugin (``-p conformance``): it records every outcome
in a JSON-lines report.
Only the standard library is imported at module level, because the plugin runs in the other venv.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import venv
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

PYICEBERG_VERSION = "0.12.0"
ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "conformance"
SDIST = CACHE / f"pyiceberg-{PYICEBERG_VERSION}.tar.gz"
SOURCE = CACHE / f"pyiceberg-{PYICEBERG_VERSION}"
VENV = CACHE / "venv"
KNOWN_FAILURES = Path(__file__).resolve().parent / "conformance.known-failures.txt"
PORT = 8181
URI = f"http://localhost:{PORT}"  # what pyiceberg's session_catalog / rest_catalog fixtures use
REPORT_ENV = "LAKELEDGER_CONFORMANCE_REPORT"

# Every module of the sdist's tests/integration, in this order in the summary.
MODULES = [
    # the REST catalog's own behaviour
    "tests/integration/test_catalog.py",
    "tests/integration/test_rest_catalog.py",
    "tests/integration/test_rest_schema.py",
    "tests/integration/test_partition_evolution.py",
    "tests/integration/test_sort_order_update.py",
    "tests/integration/test_snapshot_operations.py",
    "tests/integration/test_statistics_operations.py",
    "tests/integration/test_rest_manifest.py",
    "tests/integration/test_rest_scan_planning_integration.py",
    # writes and deletes through the catalog's commit endpoint
    "tests/integration/test_writes/test_writes.py",
    "tests/integration/test_writes/test_partitioned_writes.py",
    "tests/integration/test_writes/test_optimistic_concurrency.py",
    "tests/integration/test_deletes.py",
    "tests/integration/test_delete_count.py",
    "tests/integration/test_add_files.py",
    "tests/integration/test_inspect_table.py",
    "tests/integration/test_partitioning_key.py",
    # reads of the tables dev/provision.py writes with Spark
    "tests/integration/test_reads.py",
    # Spark's Hive session catalog to Iceberg (needs upstream's Hive metastore)
    "tests/integration/test_hive_migration.py",
]

# Parametrisations against catalogs other than the REST one at localhost:8181 (Hive, in-memory, SQLite, the
# PYICEBERG_TEST_CATALOG one) are deselected by fixture id.
OTHER_CATALOGS = ["session_catalog_hive", "hive_catalog", "memory_catalog", "sqlite_catalog_memory",
                  "sqlite_catalog_file", "rest_test_catalog"]
KEYWORDS = " and ".join(f"not {name}" for name in OTHER_CATALOGS)

# Lines of the known-failures list starting with one of these apply to that pyiceberg pass only; the others to both
# passes (and to the RCK, whose test ids differ).
S3_ONLY = "s3::"
FILE_ONLY = "file::"
# Every reason starts with the class of its failure, counted apart in the summary.
FAILURE_CLASSES = {
    "LAKELEDGER BUG": "ours",
    "ENVIRONMENT": "the test's environment",
    "UPSTREAM": "upstream",
    "NOT YET": "not built yet",
}

# Tests that need the server started with other settings: run in passes of their own, each on a fresh server.
SEPARATE_PASSES = {
    # asserts that the client took namespace-separator "." from /config
    "tests/integration/test_catalog.py::test_rest_custom_namespace_separator": {"LAKELEDGER__NAMESPACE_SEPARATOR": "."},
}

# From the sdist's [dependency-groups] dev, the entries the integration tests import (read with their pins
# from its pyproject.toml). pyspark[connect] is the whole of PySpark, jars included: the Spark Connect server of
# the run is started from it (scripts/conformance_spark.py), at the client's version.
DEV_GROUP_NAMES = ["pytest", "pytest-lazy-fixtures", "pytest-mock", "moto", "fastavro", "sqlalchemy", "protobuf",
                   "pyspark"]
# daft, ray and polars: test_reads.py reads tables through each of them.
PYICEBERG_EXTRAS = "pyarrow,pandas,duckdb,hive,pyiceberg-core,daft,ray,polars"
# test_writes.py and test_inspect_table.py import pytz, which upstream gets transitively through its lock file.
# DuckDB is pinned to the build whose extensions PyPI ships as wheels: its tests `INSTALL iceberg`, which finds
# them already installed (see duckdb_home) instead of downloading at run time.
# PyArrow and pandas as the sdist's uv.lock pins them (for Python 3.11+): newer ones convert UUID columns to
# uuid.UUID, where the suite's comparisons with Spark expect bytes.
UNDECLARED = ["pytz", "pyarrow==25.0.1", "pandas==3.0.3",
              "duckdb==1.4.4", "duckdb-ext-iceberg==1.4.4.20260205", "duckdb-ext-httpfs==1.4.4.20260205",
              "duckdb-ext-avro==1.4.4.20260205"]


# ---------------------------------------------------------------------------------------------------------------
# the driver (project venv)
# ---------------------------------------------------------------------------------------------------------------

def log(message: str) -> None:
    print(f"[conformance] {message}", flush=True)


def fail(message: str) -> None:
    print(f"[conformance] ERROR: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def pip_env() -> dict[str, str]:
    # PyPI only: a machine-wide find-links directory must not supply other builds.
    env = dict(os.environ)
    env.pop("PIP_FIND_LINKS", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def fetch_sdist() -> None:
    if not SDIST.exists():
        log(f"downloading pyiceberg=={PYICEBERG_VERSION} sdist from PyPI")
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
                        f"pyiceberg=={PYICEBERG_VERSION}", "-d", str(CACHE)], check=True, env=pip_env())
    if (SOURCE / "tests" / "integration").is_dir():
        return
    log(f"unpacking {SDIST.name}")
    package_prefix = f"pyiceberg-{PYICEBERG_VERSION}/pyiceberg/"
    with tarfile.open(SDIST) as archive:
        # The library itself stays packed: `python -m pytest` puts the source root first on sys.path, and the
        # tests must exercise the PyPI build installed in the venv, not an uncompiled copy of its source.
        members = [m for m in archive.getmembers() if not m.name.startswith(package_prefix)]
        archive.extractall(CACHE, members=members, filter="data")


def requirements() -> list[str]:
    import tomllib

    dev = tomllib.loads((SOURCE / "pyproject.toml").read_text())["dependency-groups"]["dev"]

    def name_of(spec: str) -> str:
        for i, ch in enumerate(spec):
            if ch in "[<>=!~; ":
                return spec[:i].lower()
        return spec.lower()

    picked = {name_of(spec): spec for spec in dev if name_of(spec) in DEV_GROUP_NAMES}
    missing = sorted(set(DEV_GROUP_NAMES) - set(picked))
    if missing:
        fail(f"the sdist's dev group no longer lists {missing}; update DEV_GROUP_NAMES in {__file__}")
    return [f"pyiceberg[{PYICEBERG_EXTRAS}]=={PYICEBERG_VERSION}", *picked.values(), *UNDECLARED]


def ensure_venv(where: Path | None = None, packages: list[str] | None = None) -> Path:
    """The python of a venv at ``where`` (pyiceberg's suite's by default) with exactly ``packages`` (its
    requirements by default), made again whenever the list changes."""
    where = where or VENV
    python = where / "bin" / "python"
    wanted = "\n".join(packages if packages is not None else requirements())
    stamp = where / ".installed"
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    log(f"creating {where.relative_to(ROOT)} with: {', '.join(wanted.splitlines())}")
    # Built from the project venv's interpreter, so both run the same Python version.
    venv.EnvBuilder(with_pip=True, clear=True).create(str(where))
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--upgrade", "pip"], check=True, env=pip_env())
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", *wanted.splitlines()], check=True, env=pip_env())
    stamp.write_text(wanted)
    return python


def duckdb_home(python: Path, work: Path) -> Path:
    """A HOME for the suite's pytest whose ~/.duckdb/extensions (DuckDB's default extension directory) is the
    folder the duckdb-ext-* wheels install into, so `INSTALL iceberg; LOAD iceberg` loads them, offline."""
    found = subprocess.run([str(python), "-c", "import importlib.util; "
                            "print(next(iter(importlib.util.find_spec('duckdb_ext').submodule_search_locations)))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    home = work / "home"
    (home / ".duckdb").mkdir(parents=True, exist_ok=True)
    link = home / ".duckdb" / "extensions"
    if not link.exists():
        link.symlink_to(Path(found) / "extensions")
    return home


def port_in_use(port: int = PORT) -> str | None:
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            try:
                if s.connect_ex((host, port)) == 0:
                    return host
            except OSError:
                continue
    return None


def _processes():
    """harness/processes.py, the process helpers shared with the tests and the bench (standard library only);
    imported where a server starts, not at module level, where this file is also the other venv's plugin."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))
    from harness import processes

    return processes


class Serve:
    """`lakeledger serve` of the project venv on a fresh data directory."""

    def __init__(self, data_dir: Path, port: int = PORT, **settings: str):
        self.log_path = data_dir.parent / f"serve-{data_dir.name}.log"
        self.data_dir = data_dir
        self.port = port
        env = {k: v for k, v in os.environ.items() if not k.startswith("LAKELEDGER__")}
        env.update({"LAKELEDGER__DATA_DIR": str(data_dir), "LAKELEDGER__DEFAULT_WAREHOUSE": "default",
                    "LAKELEDGER__LISTEN_HOST": "127.0.0.1", "LAKELEDGER__LISTEN_PORT": str(port), **settings})
        binary = ROOT / ".venv" / "bin" / "lakeledger"
        if not binary.exists():
            fail(f"{binary} is missing: run `make setup`")
        self.child = _processes().Child([str(binary), "serve"], self.log_path, env, name="lakeledger serve")
        self.process = self.child.process

    @classmethod
    def started(cls, data_dir: Path, port: int = PORT, **settings: str) -> Serve:
        """A server that answers /health; one that never does is stopped again, its embedded Postgres too."""
        server = cls(data_dir, port, **settings)
        try:
            server.wait_healthy()
        except BaseException:
            server.stop()
            raise
        return server

    def wait_healthy(self, seconds: float = 90) -> None:
        processes = _processes()
        try:
            self.child.wait_ready(processes.url_answers(f"http://127.0.0.1:{self.port}/health"), seconds, 0.3)
        except RuntimeError as e:
            fail(str(e))

    def tail(self) -> str:
        return self.child.tail(4000)

    def stop(self) -> None:
        self.child.stop(grace=20)
        self._stop_embedded_postgres()

    def _stop_embedded_postgres(self) -> None:
        """The embedded Postgres this server started, if it outlived the server (a stopped `serve` has been seen
        to leave it running): a fast shutdown of the postmaster that postmaster.pid names."""
        pid_file = self.data_dir / "postgres" / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split()[0])
            # only that postmaster: a stale file's pid may since belong to another process
            if str(self.data_dir / "postgres").encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
                return
            os.kill(pid, signal.SIGINT)
        except (OSError, ValueError, IndexError):
            return
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                return
            time.sleep(0.2)


@contextlib.contextmanager
def spark_connect(python: Path, work: Path, name: str) -> Iterator[None]:
    """A Spark Connect server for one pass (scripts/conformance_spark.py), its ``rest`` catalog being the pass's
    server at PORT, with upstream's tables provisioned over it; stopped when the pass ends, however it ends."""
    import conformance_s3
    import conformance_spark

    conf = conformance_spark.catalog_conf(URI, conformance_s3.ENDPOINT, conformance_s3.USER,
                                          conformance_s3.PASSWORD)
    log(f"Spark Connect server on localhost:{conformance_spark.PORT}, log in {work / name / 'spark-connect.log'}")
    try:
        server = conformance_spark.start(python, work / name, conf)
    except (FileNotFoundError, RuntimeError) as error:
        fail(str(error))
    try:
        provision_py = work / name / "provision.py"
        provision_py.write_text(conformance_spark.provision_source(SOURCE / "dev" / "provision.py"))
        log("provisioning upstream's tables (dev/provision.py, the `rest` catalog) over Spark Connect")
        output = work / name / "provision.log"
        with open(output, "wb") as sink:
            rc = subprocess.run([str(python), str(provision_py)], cwd=SOURCE, stdout=sink, stderr=subprocess.STDOUT,
                                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, check=False).returncode
        if rc != 0:
            fail(f"dev/provision.py exited with {rc}:\n{output.read_text(errors='replace')[-3000:]}\n"
                 f"Spark Connect log:\n{server.tail()}")
        yield
        if not server.running():
            fail(f"the Spark Connect server died during the run:\n{server.tail()}")
    finally:
        server.stop()


def read_known_failures(s3: bool = False) -> dict[str, str]:
    """The known failures of the RCK and pyiceberg's file pass, or (``s3``) of its S3 pass."""
    known: dict[str, str] = {}
    for number, line in enumerate(KNOWN_FAILURES.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        node, sep, reason = line.partition(" | ")
        if not sep or not reason.strip():
            fail(f"{KNOWN_FAILURES.name}:{number}: expected '<test id> | <reason>'")
        node, reason = node.strip(), reason.strip()
        if not any(reason.startswith(f"{label}:") for label in FAILURE_CLASSES):
            fail(f"{KNOWN_FAILURES.name}:{number}: the reason must start with one of "
                 f"{', '.join(f'{label}:' for label in FAILURE_CLASSES)}")
        for prefix, only_s3 in ((S3_ONLY, True), (FILE_ONLY, False)):
            if node.startswith(prefix):
                node = node[len(prefix):] if s3 == only_s3 else ""  # "": the other pass's
                break
        if node:
            known[node] = reason
    return known


def failure_class(reason: str) -> str:
    return next(name for label, name in FAILURE_CLASSES.items() if reason.startswith(f"{label}:"))


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def summarise(report_path: Path, pytest_rc: int, s3: bool = False) -> tuple[int, Counter]:
    """Prints pyiceberg's counts per module and what failed; (exit code, the total counts)."""
    records = [json.loads(line) for line in report_path.read_text().splitlines()] if report_path.exists() else []
    known = read_known_failures(s3)
    title = "pyiceberg on S3" if s3 else "pyiceberg"
    outcome: dict[str, str] = {}
    message: dict[str, str] = {}
    skipped_by: dict[str, str] = {}
    for r in records:
        node = r["nodeid"]
        if r["kind"] == "deselected":
            skipped_by[node] = r["reason"]
            continue
        previous = outcome.get(node)
        # A test's outcome is its worst phase: an error in teardown spoils a passed call.
        rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
        if previous is None or rank[r["outcome"]] > rank[previous]:
            outcome[node] = r["outcome"]
            if r.get("message"):
                message[node] = r["message"]

    columns = ["passed", "failed", "error", "skipped", "known", "other-catalog"]
    per_module: dict[str, Counter] = defaultdict(Counter)
    unexpected, fixed = [], []
    by_class: Counter = Counter()
    for node, result in outcome.items():
        counts = per_module[module_of(node)]
        counts[result] += 1
        if result in ("failed", "error"):
            if node in known:
                counts["known"] += 1
                by_class[failure_class(known[node])] += 1
            else:
                unexpected.append(node)
        elif node in known and result == "passed":
            fixed.append(node)
    for node, reason in skipped_by.items():
        if node not in outcome:  # a test left out of the first pass may have run in a later one
            per_module[module_of(node)][reason] += 1

    width = max(len(m) for m in [*MODULES, "total"]) - len("tests/integration/")
    header = f"{'module':<{width}} " + " ".join(f"{c:>13}" for c in columns)
    print(f"\n{title}\n" + header + "\n" + "-" * len(header))
    total: Counter = Counter()
    for module in MODULES:
        counts = per_module.get(module, Counter())
        total.update(counts)
        print(f"{module.removeprefix('tests/integration/'):<{width}} " + " ".join(f"{counts[c]:>13}" for c in columns))
    print("-" * len(header))
    print(f"{'total':<{width}} " + " ".join(f"{total[c]:>13}" for c in columns))
    print("(known = failed or error and listed in scripts/conformance.known-failures.txt; other-catalog = "
          "Hive/in-memory/SQLite parametrisations, deselected)")
    if fixed:
        print("\nlisted as known failures but passed now (remove them from the list):")
        for node in fixed:
            print(f"  {node}")
    if unexpected:
        print("\nFAILURES NOT ON THE KNOWN LIST:")
        for node in sorted(unexpected):
            print(f"  {outcome[node].upper():6} {node}\n         {message.get(node, '')[:300]}")
    ran = sum(total[c] for c in ("passed", "failed", "error"))
    classes = ", ".join(f"{by_class[name]} {name}" for name in FAILURE_CLASSES.values())
    print(f"\n{title}: {total['passed']} passed, {total['failed'] + total['error']} failed "
          f"({total['known']} known: {classes}; {len(unexpected)} unexpected)")
    if ran == 0 or pytest_rc not in (0, 1):
        print(f"pytest exited with {pytest_rc} after running {ran} tests: the run itself is broken")
        return 1, total
    return (1 if unexpected else 0), total


def summarise_rck(results: list, known: dict[str, str]) -> int:
    """Prints what failed in the RCK suites and is not on the known list; the exit code."""
    import rck

    unexpected, fixed = rck.summarise(results, known)
    if fixed:
        print("\nRCK: listed as known failures but passed now (remove them from the list):")
        for node in fixed:
            print(f"  {node}")
    if unexpected:
        print("\nRCK FAILURES NOT ON THE KNOWN LIST:")
        for key, name, message in unexpected:
            print(f"  {key}::{name}\n         {message}")
    return 1 if unexpected else 0


def print_suites(rows: list[tuple[str, int, int, int, int]]) -> None:
    """passed / failed / skipped per suite, then one closing line over all of them."""
    header = f"{'suite':<28} {'passed':>8} {'failed':>8} {'(known)':>8} {'skipped':>8}"
    print("\n" + header + "\n" + "-" * len(header))
    for title, passed, failed, known, skipped in rows:
        print(f"{title:<28} {passed:>8} {failed:>8} {known:>8} {skipped:>8}")
    print("(failed includes the known failures, each listed with its reason in scripts/conformance.known-failures.txt)")
    print(f"\nconformance: {sum(r[1] for r in rows)} passed, {sum(r[2] for r in rows)} failed, "
          f"{sum(r[4] for r in rows)} skipped")


def run_rck(keep: bool, lines: list[str] | None = None) -> list:
    """Iceberg's REST Compatibility Kit, each line against a server of its own (scripts/rck.py); ``lines``: the
    names of the lines to run (None: all)."""
    import rck

    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rck-", dir=CACHE))  # outside /tmp: its catalog warehouse is /tmp

    try:
        return rck.run(Serve.started, work, log,
                       tuple(line for line in rck.LINES if lines is None or line.name in lines))
    finally:
        if keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run_pyiceberg(pytest_args: list[str], keep: bool, passes: tuple[str, ...] = ("file", "s3")) -> list:
    """pyiceberg's suite on a file default warehouse and on an S3 one, both with the MinIO the suite expects;
    [(title, exit code, total counts)] per pass."""
    import conformance_s3

    for port, what in ((PORT, f"pyiceberg's integration fixtures hardcode {URI}, so the conformance server must "
                              f"listen there"),
                       (conformance_s3.PORT, f"pyiceberg's fixtures expect MinIO at {conformance_s3.ENDPOINT}, "
                                             f"which the run starts")):
        if (host := port_in_use(port)) is not None:
            fail(f"port {port} is already in use on {host}. {what}: stop whatever listens on {port} and run again.")
    binary = conformance_s3.minio_binary()
    if binary is None:
        fail("MinIO (.cache/minio/bin/minio) is missing: run `make minio-deps`")
    import conformance_spark

    if (host := port_in_use(conformance_spark.PORT)) is not None:
        fail(f"port {conformance_spark.PORT} is already in use on {host}. pyiceberg's `spark` fixture expects "
             f"Spark Connect there, which the run starts: stop whatever listens on it and run again.")
    if shutil.which("java") is None:
        fail("java is missing (the Spark Connect server): run `make java-check`")
    try:
        conformance_spark.jars()
    except FileNotFoundError as missing:
        fail(str(missing))
    fetch_sdist()
    python = ensure_venv()

    work = Path(tempfile.mkdtemp(prefix="lakeledger-conformance-"))
    log(f"MinIO on {conformance_s3.ENDPOINT} (bucket {conformance_s3.BUCKET}), data in {work / 'minio'}")
    minio = conformance_s3.Minio(binary, work / "minio")
    try:
        results = []
        if "file" in passes:
            results.append(("pyiceberg", *file_pass(python, work, pytest_args)))
        if "s3" in passes:
            results.append(("pyiceberg on S3", *s3_pass(python, work, pytest_args)))
        if minio.process.poll() is not None:
            fail(f"MinIO died during the run:\n{minio.tail()}")
        return results
    finally:
        minio.stop()
        if keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def suite_command(python: Path) -> list[str]:
    return [str(python), "-m", "pytest", "-m", "integration", "-k", KEYWORDS, "-p", "conformance",
            "-p", "no:cacheprovider", "-q", "--tb=short", "-rN"]


def suite_env(python: Path, work: Path, report: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYICEBERG_TEST_CATALOG")}
    env.update({"PYTHONPATH": str(Path(__file__).resolve().parent), REPORT_ENV: str(report),
                "HOME": str(duckdb_home(python, work))})
    return env


def file_pass(python: Path, work: Path, pytest_args: list[str]) -> tuple[int, Counter]:
    server = Serve(work / "data")
    try:
        log(f"lakeledger serve on 127.0.0.1:{PORT}, data in {work / 'data'}")
        server.wait_healthy()
        report = work / "report.jsonl"
        env = suite_env(python, work, report)
        pytest = suite_command(python)
        command = [*pytest, *(f"--deselect={node}" for node in SEPARATE_PASSES), *MODULES, *pytest_args]
        output = work / "pytest.log"
        with spark_connect(python, work, "spark"):
            log("running: " + " ".join(command[1:]))
            with open(output, "wb") as sink:
                rc = subprocess.run(command, cwd=SOURCE, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                    check=False).returncode
            log(f"pytest exited with {rc}; full output: {output}")
        if server.process.poll() is not None:
            fail(f"lakeledger serve died during the run:\n{server.tail()}")
        server.stop()
        for n, (node, settings) in enumerate(SEPARATE_PASSES.items()):
            server = Serve(work / f"data-{n}", **settings)
            log(f"{node} on a server with {settings}")
            server.wait_healthy()
            with open(output, "ab") as sink:
                subprocess.run([*pytest, node], cwd=SOURCE, env=env, stdout=sink, stderr=subprocess.STDOUT,
                               check=False)
            server.stop()
        return summarise(report, rc)
    finally:
        server.stop()


def s3_pass(python: Path, work: Path, pytest_args: list[str]) -> tuple[int, Counter]:
    """The same modules on a server whose default warehouse is the S3 warehouse of
    conformance_s3. A server makes its default warehouse (a file one) at start unless it exists, so the S3
    warehouse is created first, through the management API, and the server restarted with it as the default."""
    import conformance_s3

    data = work / "data-s3"
    key = {"LAKELEDGER__PG_ENCRYPTION_KEY": conformance_s3.ENCRYPTION_KEY}
    server = Serve(data, **key)
    try:
        server.wait_healthy()
        conformance_s3.create_warehouse(f"http://127.0.0.1:{PORT}")
        server.stop()
        server = Serve(data, LAKELEDGER__DEFAULT_WAREHOUSE=conformance_s3.WAREHOUSE, **key)
        log(f"lakeledger serve on 127.0.0.1:{PORT}, default warehouse {conformance_s3.WAREHOUSE!r} on S3 "
            f"(s3://{conformance_s3.BUCKET}/{conformance_s3.KEY_PREFIX}), data in {data}")
        server.wait_healthy()
        conformance_s3.create_namespace(f"http://127.0.0.1:{PORT}", "default")
        report = work / "report-s3.jsonl"
        command = [*suite_command(python), *(f"--deselect={node}" for node in SEPARATE_PASSES), *MODULES,
                   *pytest_args]
        output = work / "pytest-s3.log"
        with spark_connect(python, work, "spark-s3"):
            log("running: " + " ".join(command[1:]))
            with open(output, "wb") as sink:
                rc = subprocess.run(command, cwd=SOURCE, env=suite_env(python, work, report), stdout=sink,
                                    stderr=subprocess.STDOUT, check=False).returncode
            log(f"pytest exited with {rc}; full output: {output}")
        if server.process.poll() is not None:
            fail(f"lakeledger serve died during the run:\n{server.tail()}")
        return summarise(report, rc, s3=True)
    finally:
        server.stop()


def main() -> int:
    import rck

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=["all", "rck", "pyiceberg", "pyiceberg-file", "pyiceberg-s3"],
                        default="all",
                        help="run only Iceberg's REST Compatibility Kit, or only pyiceberg's suite (both passes), "
                             "or only its pass on the file or on the S3 default warehouse")
    parser.add_argument("--rck-line", action="append", choices=[line.name for line in rck.LINES],
                        help="run only this line of Iceberg's kit (repeatable; default: every line)")
    parser.add_argument("--keep", action="store_true", help="keep the servers' data directories and logs")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments for pyiceberg's suite (after --)")
    args = parser.parse_args()

    if args.suite in ("all", "rck") and (missing := rck.missing_tools()):
        fail(f"Iceberg's REST Compatibility Kit needs {missing} (a JDK and Maven): run `make rck-deps`")
    known = read_known_failures()
    rows, rc = [], 0
    if args.suite in ("all", "rck"):
        results = run_rck(args.keep, args.rck_line)
        for result in results:
            failed = result.count("failed")
            known_failed = sum(1 for name, outcome in result.outcomes.items()
                               if outcome == "failed" and rck.listed(result.suite.key, name, known))
            rows.append((result.suite.title, result.count("passed"), failed, known_failed, result.count("skipped")))
        rc |= summarise_rck(results, known)
    if args.suite.startswith("pyiceberg") or args.suite == "all":
        passes = {"pyiceberg-s3": ("s3",), "pyiceberg-file": ("file",)}.get(args.suite, ("file", "s3"))
        for title, pyiceberg_rc, total in run_pyiceberg(args.pytest_args, args.keep, passes):
            rows.append((title, total["passed"], total["failed"] + total["error"], total["known"],
                         total["skipped"]))
            rc |= pyiceberg_rc
    print_suites(rows)
    return rc


# ---------------------------------------------------------------------------------------------------------------
# the pytest plugin (conformance venv); hooks act only when the driver set REPORT_ENV
# ---------------------------------------------------------------------------------------------------------------

def _record(entry: dict) -> None:
    path = os.environ.get(REPORT_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def pytest_deselected(items):
    for item in items:
        _record({"kind": "deselected", "nodeid": item.nodeid, "reason": "other-catalog"})


def pytest_collectreport(report):
    if report.failed:
        _record({"kind": "test", "nodeid": report.nodeid, "outcome": "error",
                 "message": str(report.longrepr)[-300:]})


def pytest_runtest_logreport(report):
    if report.when == "call" or report.failed or report.skipped:
        outcome = ("failed" if report.when == "call" else "error") if report.failed else report.outcome
        crash = getattr(report.longrepr, "reprcrash", None)
        text = crash.message if crash is not None else (str(report.longrepr) if report.longrepr else "")
        _record({"kind": "test", "nodeid": report.nodeid, "outcome": outcome, "message": text.splitlines()[0]
                 if text else ""})


if __name__ == "__main__":
    sys.exit(main())
