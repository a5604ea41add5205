"""Which Postgres to use: the one ``LAKELEDGER__PG_URL`` names, or an embedded one (the pgserver
wheel) under the data directory, shared by every Lakeledger process given the same directory.

The embedded Postgres runs while at least one Lakeledger process uses it. Each process that starts or
joins it adds itself (pid and start time) to ``postgres.users.json`` beside ``postgres/``; when it exits it
removes itself and every entry whose process is gone (killed with -9), and if no live user is left it
stops Postgres. pgserver's own bookkeeping (``postgres/.handle_pids.json``) is not used for this: it keeps
the pid of a process that died without its exit handlers for ever, and then never stops Postgres again.
A user killed with -9 stops nothing; the next process to start finds Postgres running and joins it."""

import atexit
import fcntl
import json
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lakeledger.settings import Settings

log = logging.getLogger("lakeledger.postgres")

# Postgres' fast shutdown ends open sessions and stops; it normally takes well under a second.
STOP_TIMEOUT_SECONDS = 60


def postgres_url(settings: Settings) -> str:
    if settings.pg_url:
        return settings.pg_url
    return embedded(settings.data_dir / "postgres").url


_joined: dict[Path, "EmbeddedPostgres"] = {}
_joined_lock = threading.Lock()


def embedded(pgdata: Path) -> "EmbeddedPostgres":
    """This process's place among the users of the embedded Postgres in ``pgdata``: taken (starting
    Postgres if it is not running) on the first call, given up at exit or by ``release()``."""
    pgdata = pgdata.resolve()
    with _joined_lock:
        if pgdata not in _joined:
            postgres = EmbeddedPostgres(pgdata)
            # Registered before joining, so that a start interrupted half-way is still undone at exit.
            atexit.register(postgres.release)
            postgres.join()
            _joined[pgdata] = postgres
        return _joined[pgdata]


class EmbeddedPostgres:
    def __init__(self, pgdata: Path):
        self.pgdata = pgdata
        self.users_file = pgdata.parent / f"{pgdata.name}.users.json"
        self.url = ""
        self._pid = os.getpid()
        self._released = False

    def join(self) -> None:
        import pgserver

        self.pgdata.mkdir(parents=True, exist_ok=True)
        # Under the users file's lock, so that a last user stopping Postgres and a new one joining the
        # running Postgres never interleave.
        with _locked_users(self.users_file) as users:
            users[:] = [u for u in users if _alive(u)] + [_user(self._pid)]
            # pgserver keeps one handle per directory per process and hands it back without looking whether
            # Postgres still runs: after a release() in this process, joining again must start it again.
            pgserver.PostgresServer._instances.pop(self.pgdata, None)
            # cleanup_mode=None: pgserver never stops this Postgres itself; release() does.
            self.url = pgserver.get_server(self.pgdata, cleanup_mode=None).get_uri()

    def release(self) -> None:
        """Leaves the users; the last live one stops Postgres. Idempotent; a forked child, which
        inherits the exit handler but never joined, leaves the parent's place alone."""
        if self._released or os.getpid() != self._pid:
            return
        self._released = True
        with _joined_lock:
            if _joined.get(self.pgdata) is self:
                del _joined[self.pgdata]  # the next embedded() call joins (and starts) it again
        if not self.users_file.parent.is_dir():  # the data directory was deleted under us
            return
        with _stop_signals_ignored(), _locked_users(self.users_file) as users:
            users[:] = [u for u in users if u["pid"] != self._pid and _alive(u)]
            if not users:
                _stop(self.pgdata)


def _user(pid: int) -> dict:
    import psutil  # pgserver's own dependency, installed with it

    return {"pid": pid, "started": psutil.Process(pid).create_time()}


def _alive(user: dict) -> bool:
    """The process the entry names still runs: same pid, same start time (pids are reused), not a
    zombie (a killed process whose parent has not reaped it yet uses nothing)."""
    import psutil

    try:
        process = psutil.Process(user["pid"])
        return (abs(process.create_time() - user["started"]) < 1.0
                and process.status() != psutil.STATUS_ZOMBIE)
    except (psutil.Error, KeyError, TypeError):
        return False


def _postmaster(pgdata: Path):
    """The running postmaster of ``pgdata`` (from its postmaster.pid), or None."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text().split()[0])
        process = psutil.Process(pid)
        # A stale postmaster.pid (Postgres killed) may name a pid that another program reuses.
        if process.name().startswith("postgres") and process.status() != psutil.STATUS_ZOMBIE:
            return process
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    return None


def _stop(pgdata: Path) -> None:
    """Stops Postgres by its documented signals: SIGINT is a fast shutdown (sessions are ended, nothing
    committed is lost), SIGQUIT the immediate one if that does not finish in time. Waits until it is gone."""
    import psutil

    postmaster = _postmaster(pgdata)
    if postmaster is None:
        return
    log.info("last user of %s: stopping its Postgres (pid %s)", pgdata, postmaster.pid)
    for sig, timeout in ((signal.SIGINT, STOP_TIMEOUT_SECONDS), (signal.SIGQUIT, 10)):
        try:
            postmaster.send_signal(sig)
        except psutil.NoSuchProcess:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _postmaster(pgdata) is None:
                return
            time.sleep(0.05)
    log.error("Postgres in %s (pid %s) did not stop", pgdata, postmaster.pid)


@contextmanager
def _locked_users(path: Path) -> Iterator[list]:
    """The users list, read and written back under an exclusive lock on its file."""
    with open(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            users = json.loads(f.read() or "[]")
        except ValueError:
            log.warning("%s is not valid JSON; assuming no other user", path)
            users = []
        try:
            yield users
        finally:
            f.seek(0)
            f.truncate()
            f.write(json.dumps(users))
            f.flush()


@contextmanager
def _stop_signals_ignored() -> Iterator[None]:
    """A second stop request (Ctrl-C twice, another SIGTERM) must not abort stopping Postgres half-way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
