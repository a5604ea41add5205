"""Several API processes on one port (``LAKELEDGER__API_PROCESSES``): one Python process serves requests on one core,
so a machine with more cores runs more of them behind the same address.

``serve`` binds the port, starts the other processes as ``lakeledger serve`` children and accepts every connection
itself, handing each in turn to the next process (itself included): to a child through a Unix socket pair
(``LAKELEDGER__CONNECTIONS_FD``, the connection passed as a file descriptor). Clients keep their connections (every
engine does), so how connections are spread is how the load is spread: with a listening socket per process
(SO_REUSEPORT) the kernel spread them by a hash of their addresses, and four connections fell two and two in only
three cases out of eight, the busier process then serving three clients on one core while the other idled; in turn,
they always fall evenly. Accepting costs the parent a thread that wakes once per connection, not per request. The
children run no workers (the parent does, once) and skip migrations (the parent ran them). Nothing else is shared:
each has its own pools, and read-your-writes holds across them as it does across machines (the catalog projection
commits with the append; docs/scaling.md). A child that dies is started again, connections in turn skipping it
meanwhile; the parent's stop stops them all."""

import asyncio
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from lakeledger.operations.metrics import process_exited

logger = logging.getLogger("lakeledger.api_processes")

RESTART_PAUSE_SECONDS = 1.0
# how long a stop waits for the API processes it signalled (each gives its requests 1 s) before it kills them:
# `serve` must end within 5 s of a SIGTERM whatever the database does
STOP_SECONDS = 2.5


class Connections:
    """Where an API process takes its connections from, besides a listening socket of its own: ``serve_on`` is
    called with the running loop once the server can take connections, and hands each one to ``adopt``."""

    def serve_on(self, loop: asyncio.AbstractEventLoop, adopt: Callable[[socket.socket], None]) -> None: ...

    def stop_serving(self) -> None: ...


class HandedConnections(Connections):
    """A child's: connections its parent passes down the socket pair."""

    def __init__(self, fd: int):
        self.channel = socket.socket(fileno=fd)
        self.channel.setblocking(False)
        self._loop: asyncio.AbstractEventLoop | None = None

    def serve_on(self, loop: asyncio.AbstractEventLoop, adopt: Callable[[socket.socket], None]) -> None:
        def receive() -> None:
            while True:
                try:
                    _, fds, _, _ = socket.recv_fds(self.channel, 1, 16)
                except BlockingIOError:
                    return
                except OSError:  # the parent is gone: its death stops this process too (PR_SET_PDEATHSIG)
                    loop.remove_reader(self.channel.fileno())
                    return
                if not fds:  # the parent closed its end
                    loop.remove_reader(self.channel.fileno())
                    return
                for fd in fds:
                    adopt(socket.socket(fileno=fd))

        self._loop = loop
        loop.add_reader(self.channel.fileno(), receive)

    def stop_serving(self) -> None:
        if self._loop is not None:
            self._loop.remove_reader(self.channel.fileno())


class ApiProcesses(Connections):
    """The parent's side: the listening socket, the children, and the thread that hands out connections in turn."""

    def __init__(self, count: int, host: str, port: int):
        self.count = count
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = _listening(family, (host, port))
        self._children: dict[int, subprocess.Popen] = {}
        self._channels: dict[int, socket.socket] = {}  # our end of each child's socket pair
        self._own: Callable[[socket.socket], None] | None = None  # this process's loop, once it serves
        self._next = 0
        self._stopping = threading.Event()
        self._stop_r, self._stop_w = os.pipe()  # wakes the accepting thread's poll() on stop
        self._monitor = threading.Thread(target=self._watch, name="lakeledger-api-processes", daemon=True)
        self._acceptor = threading.Thread(target=self._accept, name="lakeledger-accept", daemon=True)

    def start(self) -> None:
        for n in range(1, self.count):
            self._children[n] = self._spawn(n)
        self._monitor.start()
        self._acceptor.start()

    def serve_on(self, loop: asyncio.AbstractEventLoop, adopt: Callable[[socket.socket], None]) -> None:
        def own(connection: socket.socket) -> None:
            loop.call_soon_threadsafe(adopt, connection)

        self._own = own

    def stop_serving(self) -> None:
        self._own = None

    def _spawn(self, n: int) -> subprocess.Popen:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**os.environ, "LAKELEDGER__API_PROCESSES": "1", "LAKELEDGER__WORKERS": "off",
               "LAKELEDGER__AUTO_MIGRATE": "false", "LAKELEDGER__CONNECTIONS_FD": str(theirs.fileno()),
               "PGAPPNAME": f"lakeledger-api-{n}"}
        try:
            child = subprocess.Popen([sys.executable, "-m", "lakeledger.cli", "serve"], env=env,
                                     pass_fds=(theirs.fileno(),), preexec_fn=_stop_with_parent)
        finally:
            theirs.close()
        ours.setblocking(False)  # a child that stopped reading is skipped once its queue is full, never waited for
        replaced = self._channels.get(n)
        self._channels[n] = ours
        if replaced is not None:
            replaced.close()
        return child

    def _accept(self) -> None:
        waiting = select.poll()  # not select(): a descriptor numbered past 1,024 is out of its reach
        waiting.register(self.socket, select.POLLIN)
        waiting.register(self._stop_r, select.POLLIN)
        while not self._stopping.is_set():
            if any(fd == self._stop_r for fd, _ in waiting.poll()):
                return
            try:
                connection, _ = self.socket.accept()
            except OSError as e:  # out of file descriptors, a connection reset before it was taken
                logger.warning("Could not accept a connection: %s", e)
                self._stopping.wait(0.1)
                continue
            try:
                self._hand_out(connection)
            except Exception:  # this thread is the port's only door: it must outlive any one connection
                logger.exception("Could not hand out a connection")
                connection.close()

    def _hand_out(self, connection: socket.socket) -> None:
        """To the next process in turn that can take it: a child being started again is skipped."""
        for _ in range(self.count):
            n, self._next = self._next, (self._next + 1) % self.count
            try:
                if n == 0:
                    own = self._own
                    if own is None:  # this process is not serving yet, or no more
                        continue
                    own(connection)
                    return
                # queued in the pair until the child reads it, so a child still starting takes it once it serves
                socket.send_fds(self._channels[n], [b"c"], [connection.fileno()])
            except (OSError, RuntimeError, KeyError):  # a child that died or is stuck; our loop closed while stopping
                continue
            connection.close()  # the child holds its own descriptor of it now
            return
        connection.close()

    def _watch(self) -> None:
        while not self._stopping.wait(0.5):
            for n, child in list(self._children.items()):
                code = child.poll()
                if code is not None and not self._stopping.is_set():
                    logger.warning("API process %s (pid %s) exited with %s; starting it again", n, child.pid, code)
                    process_exited(child.pid)
                    time.sleep(RESTART_PAUSE_SECONDS)
                    if not self._stopping.is_set():
                        self._children[n] = self._spawn(n)

    def stop(self) -> None:
        self._stopping.set()
        os.write(self._stop_w, b"x")
        self._acceptor.join(timeout=5)
        if not self._acceptor.is_alive():
            os.close(self._stop_r)
            os.close(self._stop_w)
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
        for channel in self._channels.values():
            channel.close()
        self.socket.close()


def _listening(family: socket.AddressFamily, address: tuple) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(2048)
    return sock


def _stop_with_parent() -> None:
    """In the child before it runs: SIGTERM when the parent dies, even by kill -9 (Linux's PR_SET_PDEATHSIG), so
    no API process is left serving a port nobody manages."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG
