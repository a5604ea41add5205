"""Several API processes on one port (``LAKELEDGER__API_PROCESSES``): one Python process serves requests on one core,
so a machine with more cores runs more of them behind the same address.

``serve`` binds the port and starts the other processes as ``lakeledger serve`` children, handing them its listening
socket (``LAKELEDGER__LISTEN_FD``) for its address: each child listens on a socket of its own bound beside it to that
address (SO_REUSEPORT), and the kernel spreads new connections over them. With one shared socket the process that
woke first took every connection of a burst, and clients that keep their connections (every engine) could all end
up on one process while the other idled. The children run no workers (the parent does, once) and skip migrations
(the parent ran them). Nothing else is shared: each has its own pools, and read-your-writes holds across them as it
does across machines (the catalog projection commits with the append; docs/scaling.md). A child that dies is started
again; the parent's stop stops them all."""

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from lakeledger.operations.metrics import process_exited

log = logging.getLogger("lakeledger.api_processes")

RESTART_PAUSE_SECONDS = 1.0
STOP_SECONDS = 30.0


def inherited_socket(fd: int) -> socket.socket:
    """A listening socket of this child's own, on the address of the one a parent ``serve`` handed down."""
    inherited = socket.socket(fileno=fd)
    try:
        return _listening(inherited.family, inherited.getsockname()[:2])
    finally:
        inherited.close()


def _listening(family: socket.AddressFamily, address: tuple) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # the same address as the other processes'
    sock.bind(address)
    sock.listen(2048)
    return sock


class ApiProcesses:
    def __init__(self, count: int, host: str, port: int):
        self.count = count
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = _listening(family, (host, port))
        self.socket.set_inheritable(True)
        self._children: dict[int, subprocess.Popen] = {}
        self._stopping = threading.Event()
        self._monitor = threading.Thread(target=self._watch, name="lakeledger-api-processes", daemon=True)

    def start(self) -> None:
        for n in range(1, self.count):
            self._children[n] = self._spawn(n)
        self._monitor.start()

    def _spawn(self, n: int) -> subprocess.Popen:
        env = {**os.environ, "LAKELEDGER__API_PROCESSES": "1", "LAKELEDGER__WORKERS": "off",
               "LAKELEDGER__AUTO_MIGRATE": "false", "LAKELEDGER__LISTEN_FD": str(self.socket.fileno()),
               "PGAPPNAME": f"lakeledger-api-{n}"}
        return subprocess.Popen([sys.executable, "-m", "lakeledger.cli", "serve"], env=env,
                                pass_fds=(self.socket.fileno(),), preexec_fn=_stop_with_parent)

    def _watch(self) -> None:
        while not self._stopping.wait(0.5):
            for n, child in list(self._children.items()):
                code = child.poll()
                if code is not None and not self._stopping.is_set():
                    log.warning("API process %s (pid %s) exited with %s; starting it again", n, child.pid, code)
                    process_exited(child.pid)
                    time.sleep(RESTART_PAUSE_SECONDS)
                    if not self._stopping.is_set():
                        self._children[n] = self._spawn(n)

    def stop(self) -> None:
        self._stopping.set()
        for child in self._children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_SECONDS
        for child in self._children.values():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self.socket.close()


def _stop_with_parent() -> None:
    """In the child before it runs: SIGTERM when the parent dies, even by kill -9 (Linux's PR_SET_PDEATHSIG), so
    no API process is left serving a port nobody manages."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
