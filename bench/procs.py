"""The processes a run needs: an embedded Postgres, ``lakeledger serve``, the bare server, and for the
authorization section an OpenID provider and OpenFGA. Every one of them listens on loopback only and is stopped
by ``stop()``."""

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
ROOT = Path(__file__).resolve().parent.parent


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


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


class ServerProcess:
    """A server as a child process, ready once GET ``ready_path`` answers 200."""

    def __init__(self, name: str, argv: list[str], port: int, log_path: Path, env: dict[str, str] | None = None,
                 ready_path: str = "/health"):
        self.name = name
        self.port = port
        self.url = f"http://{LOOPBACK}:{port}"
        self.ready_path = ready_path
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._wait_ready()

    @property
    def pid(self) -> int:
        return self.process.pid

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.stop()
                raise RuntimeError(f"{self.name} exited at start:\n{self.tail()}")
            try:
                if httpx.get(self.url + self.ready_path, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} did not become ready in {START_TIMEOUT_S:.0f} s:\n{self.tail()}")

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT_S)
        self._log.close()


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
    return ServerProcess(f"lakeledger serve ({name})", [sys.executable, "-m", "lakeledger.cli", "serve"], port,
                         log_dir / f"{name}.log", env)


def start_workers(pg_url: str, data_dir: Path, log_dir: Path, name: str = "workers") -> subprocess.Popen:
    """``lakeledger workers``: the background read models, publisher and timers, in a process of their own."""
    return subprocess.Popen([sys.executable, "-m", "lakeledger.cli", "workers"], env={**os.environ,
                            **lakeledger_env(pg_url, data_dir)}, stdout=open(log_dir / f"{name}.log", "wb"),
                            stderr=subprocess.STDOUT)


def start_openfga(home: Path) -> ServerProcess:
    """``openfga run`` (``make openfga-deps``) with its memory datastore; playground and metrics off."""
    binary = Path(os.environ.get("LAKELEDGER_OPENFGA", ROOT / ".cache/openfga/bin/openfga"))
    if not binary.exists():
        raise SystemExit(f"OpenFGA ({binary}) is missing: run `make openfga-deps` (make bench does)")
    port = free_port()
    return ServerProcess("OpenFGA", [str(binary), "run", "--datastore-engine", "memory",
                                     "--http-addr", f"{LOOPBACK}:{port}", "--grpc-addr", f"{LOOPBACK}:{free_port()}",
                                     "--playground-enabled=false", "--metrics-enabled=false", "--log-level", "warn"],
                         port, home / "openfga.log", ready_path="/healthz")


def start_oidc_provider(home: Path, audience: str) -> ServerProcess:
    """The OpenID provider of the tests (tests/oidc/provider.mjs on the npm oidc-provider, ``make oidc-deps``):
    clients ``spark`` and ``bob``, secret ``<client>-secret``, hour-long JWT access tokens for ``audience`` by
    client credentials. Its ``url`` is the issuer."""
    modules = Path(os.environ.get("LAKELEDGER_OIDC_MODULES", ROOT / ".cache/oidc"))
    node = shutil.which("node")
    if node is None or not (modules / "node_modules/oidc-provider/package.json").is_file():
        raise SystemExit(f"Node.js or oidc-provider ({modules}) is missing: run `make oidc-deps` (make bench does)")
    port = free_port()
    return ServerProcess("oidc-provider", [node, str(ROOT / "tests/oidc/provider.mjs")], port, home / "oidc.log",
                         {"OIDC_MODULES": str(modules), "OIDC_PORT": str(port), "OIDC_AUDIENCE": audience},
                         ready_path="/.well-known/openid-configuration")


def start_bare(body_file: Path, log_dir: Path) -> ServerProcess:
    port = free_port()
    # so `-m bench.bare_server` works from any directory
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return ServerProcess("bare FastAPI", [sys.executable, "-m", "bench.bare_server", str(body_file), LOOPBACK,
                                          str(port)], port, log_dir / "bare.log", {"PYTHONPATH": path})
