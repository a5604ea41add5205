"""The processes a run needs: an embedded Postgres, ``lakeledger serve`` and the bare server.
Every one of them listens on loopback only and is stopped by ``stop()``."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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

    def stop(self) -> None:
        self._server.cleanup()


class ServerProcess:
    """A uvicorn-based server as a child process, ready once GET /health answers 200."""

    def __init__(self, name: str, argv: list[str], port: int, log_path: Path, env: dict[str, str] | None = None):
        self.name = name
        self.port = port
        self.url = f"http://{LOOPBACK}:{port}"
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
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
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


def start_lakeledger(pg_url: str, data_dir: Path, log_dir: Path) -> ServerProcess:
    port = free_port()
    env = {"LAKELEDGER__PG_URL": pg_url, "LAKELEDGER__DATA_DIR": str(data_dir),
           "LAKELEDGER__LISTEN_HOST": LOOPBACK, "LAKELEDGER__LISTEN_PORT": str(port),
           "LAKELEDGER__WORKERS": "on", "LAKELEDGER__LOG_LEVEL": "warning",
           # S3 warehouses keep their credential in the encrypted secret store, which needs a key
           "LAKELEDGER__PG_ENCRYPTION_KEY": "lakeledger-bench-encryption-key"}
    return ServerProcess("lakeledger serve", [sys.executable, "-m", "lakeledger.cli", "serve"], port,
                         log_dir / "lakeledger.log", env)


def start_bare(body_file: Path, log_dir: Path) -> ServerProcess:
    port = free_port()
    root = str(Path(__file__).resolve().parent.parent)  # so `-m bench.bare_server` works from any directory
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return ServerProcess("bare FastAPI", [sys.executable, "-m", "bench.bare_server", str(body_file), LOOPBACK,
                                          str(port)], port, log_dir / "bare.log", {"PYTHONPATH": path})
