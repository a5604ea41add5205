"""Iceberg's REST Compatibility Kit (RCK) against a live Lakeledger: the part of `make conformance` that runs
Iceberg's own catalog tests with Iceberg's Java `RESTCatalog`.

The tests are Iceberg's, from Maven Central (conformance/pom.xml): `RESTCompatibilityKitCatalogTests` and
`RESTCompatibilityKitViewCatalogTests`, run with ``rck.local=false`` and CATALOG_URI / CATALOG_WAREHOUSE pointing
at a `lakeledger serve` that scripts/conformance.py starts on a fresh data directory. Each suite gets a warehouse of
its own, because the kit refuses to start where the namespaces it uses (``ns``, ``newdb``, ...) exist, and the other
suite's last test leaves them behind.

They run for several lines of Iceberg (LINES), each a Maven profile of conformance/pom.xml and a server of its own:
1.10.1 (the project's line), 1.11.0, and Iceberg 1.12.0's client running the 1.11.0 kit (1.12.0 published no test
artifacts); and the 1.12 catalog tests once more with the client asking for server-side scan planning
(``scan-planning-mode=server``, the only planning switch the kit has: it passes every ``CATALOG_*`` variable to
the client as a catalog property).

Where the warehouses are is dictated by the kit, not chosen to hide anything:
* the catalog tests create tables at the hardcoded locations ``file:/tmp/<namespace>/<table>``, which Lakeledger
  accepts only inside the warehouse, so that warehouse is ``file:///tmp`` (and the server's data directory lies
  outside /tmp, since warehouses may not overlap); what the run leaves in /tmp is removed afterwards;
* the view tests place views under JUnit's temporary directory, so the test JVM's ``java.io.tmpdir`` is a folder
  inside the views warehouse.

Stdlib only: it runs in the project venv next to scripts/conformance.py, which imports it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "conformance" / "pom.xml"
MAVEN_REPO = ROOT / ".cache" / "m2"
CATALOG_BASE = Path("/tmp")  # file:/tmp is hardcoded in Iceberg's CatalogTests
# Where CatalogTests puts tables with a requested location: file:/tmp/<namespace>/<table> (1.11's kit adds the last
# three).
KIT_NAMESPACES = ("ns", "newdb", "ns1", "ns2", "other_ns")


@dataclass(frozen=True)
class Suite:
    key: str        # the prefix of this suite's entries in the known-failures list
    title: str
    test_class: str  # conformance/src/test/java/org/apache/iceberg/rest/<class>.java


@dataclass(frozen=True)
class Line:
    """One run of the kit: a profile of conformance/pom.xml against a server of its own."""
    name: str
    profile: str | None  # None: the pom's default, Iceberg 1.10.1
    build: str           # the profile's rck.line: where it compiles and reports, .cache/conformance/rck-target-<build>
    suites: tuple[Suite, ...]
    # catalog properties for the client beyond the warehouse and URI, given as the kit reads them: CATALOG_* variables
    client: tuple[tuple[str, str], ...] = ()

    @property
    def reports(self) -> Path:
        return ROOT / ".cache" / "conformance" / f"rck-target-{self.build}" / "surefire-reports"


CATALOG = "LakeledgerCatalogTests"
VIEWS = "LakeledgerViewCatalogTests"
# The 1.10 line keeps the keys it had when it was the only one (rck-catalog::, rck-views::).
LINES = (
    Line("1.10", None, "1.10", (Suite("rck-catalog", "RCK 1.10 catalog", CATALOG),
                                Suite("rck-views", "RCK 1.10 views", VIEWS))),
    Line("1.11", "iceberg-1.11", "1.11", (Suite("rck-1.11-catalog", "RCK 1.11 catalog", CATALOG),
                                          Suite("rck-1.11-views", "RCK 1.11 views", VIEWS))),
    Line("1.12", "iceberg-1.12", "1.12", (Suite("rck-1.12-catalog", "RCK 1.12 catalog", CATALOG),
                                          Suite("rck-1.12-views", "RCK 1.12 views", VIEWS))),
    # the catalog tests with the client asking for server-side scan planning (views are never scanned)
    Line("1.12-planning", "iceberg-1.12", "1.12",
         (Suite("rck-1.12-planning", "RCK 1.12 catalog, planning", CATALOG),),
         client=(("scan-planning-mode", "server"),)),
)


def catalog_variable(prop: str) -> str:
    """The CATALOG_* variable the kit (RCKUtils.environmentCatalogConfig) turns into catalog property ``prop``:
    a dash is written as two underscores, a dot as one."""
    return "CATALOG_" + prop.replace("-", "__").replace(".", "_").upper()


@dataclass
class Result:
    suite: Suite
    outcomes: dict[str, str] = field(default_factory=dict)  # test name -> passed | failed | skipped
    messages: dict[str, str] = field(default_factory=dict)
    broken: str | None = None  # why the suite did not run at all

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)


def missing_tools() -> str | None:
    """What `make rck-deps` installs and this machine lacks, if anything."""
    missing = [tool for tool in ("javac", "mvn") if shutil.which(tool) is None]
    return ", ".join(missing) if missing else None


def _post(base_url: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base_url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        data = response.read()
    return json.loads(data) if data else {}


def _get(base_url: str, path: str) -> dict:
    with urllib.request.urlopen(base_url + path, timeout=30) as response:
        return json.loads(response.read())


def create_warehouse(base_url: str, name: str, location: Path, log) -> str:
    body = _post(base_url, "/management/v1/warehouse", {
        "warehouse-name": name, "storage-profile": {"type": "file", "location": f"file://{location}"}})
    warehouse_id = body["warehouse-id"]
    # The kit's dropTable(id, false) means "keep the files" (testRegisterTable registers them again), but Java
    # sends no purgeRequested then, which Lakeledger's default (Lakekeeper's) reads as a purge; this warehouse
    # setting gives the REST spec's reading instead. See docs/testing.md, Conformance.
    try:
        _post(base_url, f"/management/v1/warehouse/{warehouse_id}/drop-purge-default", {"drop-purge-default": "keep"})
    except urllib.error.HTTPError as e:
        log(f"warehouse {name}: drop-purge-default not set ({e.code} {e.read()[:200]!r}); drops purge")
    return warehouse_id


def namespace_ids(base_url: str, warehouse_id: str) -> set[str]:
    """Every namespace ever created in the warehouse (from its audit history): the first directory level of the
    tables that got the warehouse's default location."""
    ids: set[str] = set()
    token = ""
    while True:
        query = urllib.parse.urlencode({"type": "namespace.created", "pageSize": 1000, "pageToken": token})
        page = _get(base_url, f"/management/v1/warehouse/{warehouse_id}/history?{query}")
        ids.update(event["entity"]["id"] for event in page["events"])
        token = page.get("next-page-token")
        if not token:
            return ids


def run_suite(line: Line, suite: Suite, base_url: str, warehouse: str, tmpdir: Path | None,
              log_path: Path) -> Result:
    """`mvn test` of one suite's class; the outcome of every test is read from Surefire's XML report.
    ``tmpdir``: the test JVM's java.io.tmpdir, where JUnit's @TempDir folders go (None: the JVM's default)."""
    result = Result(suite)
    report = line.reports / f"TEST-org.apache.iceberg.rest.{suite.test_class}.xml"
    report.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CATALOG_")}
    env.update({"CATALOG_URI": f"{base_url}/catalog", "CATALOG_WAREHOUSE": warehouse})
    env.update({catalog_variable(prop): value for prop, value in line.client})
    command = ["mvn", "-B", "-f", str(POM), f"-Dmaven.repo.local={MAVEN_REPO}", "test", f"-Dtest={suite.test_class}"]
    if line.profile is not None:
        command.append(f"-P{line.profile}")
    if tmpdir is not None:
        command.append(f"-DargLine=-Djava.io.tmpdir={tmpdir}")
    with open(log_path, "wb") as sink:
        rc = subprocess.run(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                            check=False).returncode
    if not report.exists():
        result.broken = f"mvn exited with {rc} and wrote no report; see {log_path}"
        return result
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "?")
        outcome, message = "passed", ""
        for tag, meaning in (("failure", "failed"), ("error", "failed"), ("skipped", "skipped")):
            found = case.find(tag)
            if found is not None:
                outcome = meaning
                message = (found.get("message") or found.get("type") or "").strip()
                break
        if name == suite.test_class or name.endswith("." + suite.test_class):  # a class-level (BeforeAll) failure
            name = "(class setup)"
        result.outcomes[name] = outcome
        result.messages[name] = " ".join(message.split())[:300]
    if rc != 0 and not result.outcomes:
        result.broken = f"mvn exited with {rc}; see {log_path}"
    return result


def run(serve, work: Path, log, lines: tuple[Line, ...] = LINES) -> list[Result]:
    """Runs each line against a server of its own (only one warehouse of a server can be /tmp)."""
    results: list[Result] = []
    for line in lines:
        results.extend(run_line(line, serve, work / line.name, log))
    return results


def run_line(line: Line, serve, work: Path, log) -> list[Result]:
    """Starts a server (``serve(data_dir, port)`` gives a started, healthy server with .stop() and .tail()),
    makes one warehouse per suite and runs the line's suites."""
    work.mkdir(parents=True, exist_ok=True)
    before = set(os.listdir(CATALOG_BASE))
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    server = serve(work / "data", port)
    catalog_warehouse = None
    results: list[Result] = []
    try:
        for suite in line.suites:
            if suite.test_class == CATALOG:
                # its temporary folders stay in /tmp, which is inside its warehouse
                catalog_warehouse = create_warehouse(base_url, "rck-catalog", CATALOG_BASE, log)
                warehouse, tmpdir = "rck-catalog", None
            else:
                views = work / "views"
                (views / "tmp").mkdir(parents=True)
                create_warehouse(base_url, "rck-views", views, log)
                warehouse, tmpdir = "rck-views", views / "tmp"
            settings = "".join(f", {prop}={value}" for prop, value in line.client)
            log(f"{suite.title} ({suite.test_class}{settings}) against warehouse {warehouse} on {base_url}")
            results.append(run_suite(line, suite, base_url, warehouse, tmpdir, work / f"{suite.key}.log"))
        return results
    finally:
        try:
            if catalog_warehouse is not None:
                _remove_catalog_leftovers(before, namespace_ids(base_url, catalog_warehouse))
        except OSError as e:  # the server is gone: its history cannot say which directories are its own
            log(f"could not clean up after the catalog tests in {CATALOG_BASE}: {e}")
        finally:
            server.stop()


def _remove_catalog_leftovers(before: set[str], namespaces: set[str]) -> None:
    """What the catalog suite left in /tmp: its namespaces' default table directories and the kit's hardcoded
    ones, when they were not there before the run."""
    for name in set(os.listdir(CATALOG_BASE)) - before:
        if name in KIT_NAMESPACES or name in namespaces:
            shutil.rmtree(CATALOG_BASE / name, ignore_errors=True)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listed(key: str, test: str, known: dict[str, str]) -> bool:
    """Whether a suite's test is on the known-failures list: by name, or by ``<suite key>::*``, a whole suite that
    fails for one reason."""
    return f"{key}::{test}" in known or f"{key}::*" in known


def summarise(results: list[Result], known: dict[str, str]) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Prints each suite's counts; returns (unexpected failures as (suite key, test, message), fixed known ones)."""
    unexpected: list[tuple[str, str, str]] = []
    fixed: list[str] = []
    for result in results:
        key = result.suite.key
        if result.broken:
            unexpected.append((key, "(run)", result.broken))
            continue
        for name, outcome in sorted(result.outcomes.items()):
            node = f"{key}::{name}"
            if outcome == "failed" and not listed(key, name, known):
                unexpected.append((key, name, result.messages.get(name, "")))
            elif outcome == "passed" and node in known:
                fixed.append(node)
        if f"{key}::*" in known and not result.count("failed"):
            fixed.append(f"{key}::*")
    return unexpected, fixed

