"""The processes a run needs: an embedded Postgres, ``lakeledger serve``, the bare server, and for the
authorization section an OpenID provider and OpenFGA. Every one of them listens on loopback only and is stopped
by ``stop()``."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness import processes
from harness.processes import LOOPBACK, ROOT, Child, HttpServer, free_port, lakeledger_command

__all__ = ["LOOPBACK", "ROOT", "free_port"]  # re-exported: the bench's modules import them from here

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process and all its descendants so far (those still running)."""
    import psutil

    process = psutil.Process(pid)
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            pass
    return total


def self_cpu_seconds() -> float:
    """CPU time of this process (the bench's own load generator)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class EmbeddedPostgres:
    """pgserver in ``directory``; it listens on a unix socket only (no TCP port at all)."""

    def __init__(self, directory: Path):
        import warnings

        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")  # platformdirs, harmless here
        import pgserver

        self._server = pgserver.get_server(directory, cleanup_mode="delete")
        self.url = self._server.get_uri()

    def cpu_seconds(self) -> float:
        """CPU time of the postmaster and its backends so far."""
        pid = int((self._server.pgdata / "postmaster.pid").read_text().split()[0])
        return tree_cpu_seconds(pid)

    def stop(self) -> None:
        self._server.cleanup()


CONTRIB_EXTENSIONS = ("uuid-ossp", "pgcrypto", "pg_trgm", "btree_gin", "btree_gist")


def contrib_postgres_bin() -> Path | None:
    """The bin directory of the newest Postgres of Debian's packages with the contrib extensions Lakekeeper's
    migrations create (``LAKELEDGER_BENCH_PG_BIN`` names another); None when there is none."""
    named = os.environ.get("LAKELEDGER_BENCH_PG_BIN")
    candidates = [Path(named)] if named else sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True,
                                                    key=lambda b: int(b.parent.name) if b.parent.name.isdigit() else 0)
    for bin_dir in candidates:
        version = bin_dir.parent.name
        share = Path(f"/usr/share/postgresql/{version}/extension")
        if (bin_dir / "postgres").exists() and (named or all((share / f"{e}.control").exists()
                                                             for e in CONTRIB_EXTENSIONS)):
            return bin_dir
    return None


class ContribPostgres:
    """A Postgres server of Debian's packages (``contrib_postgres_bin``), for a section where pgserver's build will
    not do: it has no contrib extensions. Like ``EmbeddedPostgres`` it listens on a unix socket only, in a directory of
    its own under /tmp (run as root, Postgres runs as the user ``postgres``, who must reach it)."""

    def __init__(self, bin_dir: Path, max_connections: int = 400):
        self.bin_dir = bin_dir
        self.home = Path(tempfile.mkdtemp(prefix="lakeledger-bench-pg-"))
        self.port = free_port()  # names the socket file only; nothing listens on TCP
        self._user = "postgres" if os.geteuid() == 0 else None
        if self._user:
            shutil.chown(self.home, self._user)
        data = self.home / "data"
        self._run("initdb", "-D", str(data), "--auth=trust", "-U", "postgres", "--encoding=utf8", "--no-sync")
        self._run("pg_ctl", "start", "-w", "-t", str(int(START_TIMEOUT_S)), "-D", str(data),
                  "-l", str(self.home / "postgres.log"),
                  "-o", f"-k {self.home} -c listen_addresses= -p {self.port} -c max_connections={max_connections}")
        self.pid = int((data / "postmaster.pid").read_text().split()[0])

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run([str(self.bin_dir / tool), *args], user=self._user, capture_output=True, text=True,
                              timeout=START_TIMEOUT_S + 30)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")

    def url(self, database: str = "postgres") -> str:
        """A libpq URL of ``database`` (psycopg's, sqlx's alike: the socket directory in ``host``)."""
        return f"postgresql://postgres@localhost:{self.port}/{database}?host={self.home}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def cpu_seconds(self) -> float:
        """CPU time of the postmaster and its backends so far."""
        return tree_cpu_seconds(self.pid)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "stop", "-m", "fast", "-D", str(self.home / "data"))
        finally:
            shutil.rmtree(self.home, ignore_errors=True)


def tear_down(started: list, work: Path, keep: bool, say: Callable[[str], None]) -> None:
    """Stops what a run started, last first, going on past one that fails to stop; then removes its working
    directory unless ``keep``."""
    for thing in reversed(started):
        try:
            thing.stop()
        except Exception as e:  # keep tearing down the rest
            say(f"could not stop {thing!r}: {e}")
    if keep:
        say(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


class ServerProcess(HttpServer):
    """A server as a child process (``env``: variables on top of this process's), ready once GET ``ready_path``
    answers 200."""

    stop_grace = STOP_TIMEOUT_S

    def __init__(self, name: str, argv: list[str], port: int, log_path: Path, env: dict[str, str] | None = None,
                 ready_path: str = "/health", timeout: float = START_TIMEOUT_S, interval: float = 0.2):
        super().__init__(argv, port, log_path, {**os.environ, **(env or {})}, ready_path, timeout, interval,
                         name=name)


def lakeledger_env(pg_url: str, data_dir: Path, **settings: str) -> dict[str, str]:
    """The environment of a ``lakeledger`` command of the bench; ``settings`` (``AUTHZ_BACKEND="openfga"``) are
    LAKELEDGER__ settings on top."""
    env = {"LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir), "LAKELEDGER__WORKERS": "on",
           "LAKELEDGER__LOG_LEVEL": "warning",
           # S3 warehouses keep their credential in the encrypted secret store, which needs a key
           "LAKELEDGER__PG_ENCRYPTION_KEY": "lakeledger-bench-encryption-key"}
    return {**env, **{f"LAKELEDGER__{k}": v for k, v in settings.items()}}


def start_lakeledger(pg_url: str, data_dir: Path, log_dir: Path, name: str = "lakeledger",
                     **settings: str) -> ServerProcess:
    port = free_port()
    env = lakeledger_env(pg_url, data_dir, LISTEN_HOST=LOOPBACK, LISTEN_PORT=str(port), **settings)
    return ServerProcess(f"lakeledger serve ({name})", lakeledger_command("serve"), port, log_dir / f"{name}.log", env)


def start_workers(pg_url: str, data_dir: Path, log_dir: Path, name: str = "workers",
                  **settings: str) -> Child:
    """``lakeledger workers``: the background read models, publisher and timers, in a process of their own."""
    workers = Child(lakeledger_command("workers"), log_dir / f"{name}.log",
                    {**os.environ, **lakeledger_env(pg_url, data_dir, **settings)}, name=f"lakeledger workers ({name})")
    workers.stop_grace = STOP_TIMEOUT_S
    return workers


def start_openfga(home: Path) -> processes.OpenFga:
    """``openfga run`` (``make openfga-deps``) with its memory datastore; playground and metrics off."""
    binary = processes.cached_tool("LAKELEDGER_OPENFGA", ".cache/openfga/bin/openfga")
    if binary is None:
        raise SystemExit("OpenFGA (.cache/openfga/bin/openfga) is missing: run `make openfga-deps` (make bench does)")
    fga = processes.OpenFga(binary, home / "openfga.log", timeout=START_TIMEOUT_S, interval=0.2)
    fga.stop_grace = STOP_TIMEOUT_S
    return fga


def start_oidc_provider(home: Path, audience: str) -> processes.OidcProvider:
    """The OpenID provider of the tests (tests/oidc/provider.mjs on the npm oidc-provider, ``make oidc-deps``):
    clients ``spark`` and ``bob``, secret ``<client>-secret``, hour-long JWT access tokens for ``audience`` by
    client credentials. Its ``url`` is the issuer."""
    parts = processes.oidc_provider_parts()
    if parts is None:
        raise SystemExit("Node.js or oidc-provider (.cache/oidc) is missing: run `make oidc-deps` (make bench does)")
    oidc = processes.OidcProvider(*parts, audience, home / "oidc.log", timeout=START_TIMEOUT_S, interval=0.2)
    oidc.stop_grace = STOP_TIMEOUT_S
    return oidc


def start_bare(body_file: Path, log_dir: Path) -> ServerProcess:
    port = free_port()
    # so `-m bench.bare_server` works from any directory
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return ServerProcess("bare FastAPI", [sys.executable, "-m", "bench.bare_server", str(body_file), LOOPBACK,
                                          str(port)], port, log_dir / "bare.log", {"PYTHONPATH": path})
