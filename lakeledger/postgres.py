"""Which Postgres to use: the one ``LAKELEDGER__PG_URL`` names, or an embedded one (the pgserver
wheel) under the data directory, shared by every Lakeledger process given the same directory.

The embedded Postgres runs while at least one Lakeledger process uses it. Each process that starts or
joins it adds itself (pid and start time) to ``postgres.users.json`` beside ``postgres/``; when it exits it
removes itself and every entry whose process is gone (killed with -9), and if no live user is left it
stops Postgres. pgserver's own bookkeeping (``postgres/.handle_pids.json``) is not used for this: it keeps
the pid of a process that died without its exit handlers for ever, and then never stops Postgres again.
A user killed with -9 stops nothing; the next process to start finds Postgres running and joins it.

The long-running users (``serve``, ``workers``) supervise it: a postmaster that died (kill -9, out of memory) is
started again, which recovers from its WAL, at the same socket; the pools reconnect (docs/postgres-failures.md)."""

import atexit
import contextlib
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

logger = logging.getLogger("lakeledger.postgres")

# Postgres' fast shutdown ends open sessions and stops; it normally takes well under a second. Bounded so that a
# stop of the last user (SIGTERM) ends within its 5 s whatever Postgres does; the immediate shutdown that follows
# is as safe for what was committed (Postgres recovers from its WAL at the next start).
STOP_TIMEOUT_SECONDS = 2.0
IMMEDIATE_STOP_TIMEOUT_SECONDS = 0.5
# How often a supervising process looks whether the postmaster still runs.
SUPERVISE_SECONDS = 0.5
# initdb's default (100) is too few for one machine's Lakeledger: an API process with its workers holds about twenty
# connections idle and thirty or more under load, and a rebuild opens one per read model; a second process beside
# them and a rebuild ran out (FATAL: sorry, too many clients already).
MAX_CONNECTIONS = 400


def postgres_url(settings: Settings) -> str:
    if settings.pg_url:
        return settings.pg_url
    return embedded(settings.data_dir / "postgres").url


_joined: dict[Path, "EmbeddedPostgres"] = {}
_joined_lock = threading.Lock()


def supervise(settings: Settings) -> None:
    """Keeps the embedded Postgres running while this process uses it (none with ``LAKELEDGER__PG_URL``)."""
    if not settings.pg_url:
        embedded(settings.data_dir / "postgres").supervise()


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
        self._releasing = threading.Event()
        self._launching = threading.Lock()

    def join(self) -> None:
        self.pgdata.mkdir(parents=True, exist_ok=True)
        # Under the users file's lock, so that a last user stopping Postgres and a new one joining the
        # running Postgres never interleave.
        with _locked_users(self.users_file) as users:
            users[:] = [u for u in users if _alive(u)] + [_user(self._pid)]
            self.url = self._start()
            if len(users) == 1:  # nobody else uses it: restarting it (once in a data directory's life) is safe
                self._make_room_for_connections()

    def _make_room_for_connections(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute("SHOW max_connections").fetchone()
            if row is not None and int(row[0]) >= MAX_CONNECTIONS:
                return
            # kept in postgresql.auto.conf, so every later start has it; it takes effect at a restart only
            conn.execute(f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
        logger.info("restarting the embedded Postgres in %s with max_connections = %s", self.pgdata, MAX_CONNECTIONS)
        _stop(self.pgdata)
        self.url = self._start()

    def _start(self) -> str:
        """Starts Postgres unless it runs; its URL. Called with the users file locked."""
        import pgserver

        from lakeledger.compat import forget_pgserver_handle

        # after a release() or a crash, pgserver must look again whether Postgres runs (and start it)
        forget_pgserver_handle(self.pgdata)
        # cleanup_mode=None: pgserver never stops this Postgres itself; release() does.
        return pgserver.get_server(self.pgdata, cleanup_mode=None).get_uri()

    def supervise(self) -> None:
        """Starts a thread that starts Postgres again whenever its postmaster is found gone, until release()."""
        if self._pid == os.getpid():
            threading.Thread(target=self._supervise, name="lakeledger-postgres-supervisor", daemon=True).start()

    def _supervise(self) -> None:
        gone: float | None = None
        socket_dir = _socket_dir(self.pgdata)  # remembered: a start that fails may leave no postmaster.pid
        while not self._releasing.wait(SUPERVISE_SECONDS):
            if _postmaster(self.pgdata) is not None:
                socket_dir = _socket_dir(self.pgdata) or socket_dir
                if gone is not None:
                    logger.warning("the embedded Postgres in %s runs again (%.1f s after it was found gone)",
                                self.pgdata, time.monotonic() - gone)
                    gone = None
                continue
            if gone is None:
                gone = time.monotonic()
                logger.warning("the embedded Postgres in %s is gone; starting it again", self.pgdata)
            # The local lock lets release() wait for a launch in flight (a fraction of a second: it does not wait
            # for the recovery), so that it stops what was launched; the users file's lock keeps the supervisors of
            # other processes using this Postgres from launching it at the same time.
            with self._launching:
                if self._releasing.is_set():
                    return
                try:
                    with _locked_users(self.users_file):
                        if _postmaster(self.pgdata) is not None:
                            continue  # another process launched it
                        if socket_dir is None:
                            self._start()  # pgserver's own start, which finds a socket directory
                        else:
                            _launch(self.pgdata, socket_dir)
                except Exception as e:  # its old processes may still hold its shared memory: tried again shortly
                    logger.warning("the embedded Postgres in %s did not start (%s); trying again", self.pgdata, e)

    def release(self) -> None:
        """Leaves the users; the last live one stops Postgres. Idempotent; a forked child, which
        inherits the exit handler but never joined, leaves the parent's place alone."""
        if self._released or os.getpid() != self._pid:
            return
        self._released = True
        self._releasing.set()  # no supervisor starts it again from here on
        with self._launching:
            pass  # a launch in flight has made its postmaster, which the stop below finds
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


def _launch(pgdata: Path, socket_dir: str) -> None:
    """Starts the postmaster of ``pgdata`` again as pgserver started it (same socket directory, so the same URL),
    without waiting (-W) for it to accept connections: it recovers from its WAL first, and meanwhile connecting fails
    (a 503) as it did while it was gone. A stop of this process then never waits for a recovery to finish."""
    # pgserver re-exports each of its commands, made at import time from a list (so invisible to mypy)
    from pgserver import pg_ctl  # type: ignore[attr-defined]

    # Postgres takes a lock file whose process exists as held, and a dead postmaster stays a zombie until whoever
    # inherited it (pg_ctl started it detached) reaps it: not always soon in a container. A zombie holds nothing;
    # sessions of the dead postmaster that still run still hold its shared memory, which Postgres checks itself.
    for lock_file in (pgdata / "postmaster.pid", *Path(socket_dir).glob(".s.PGSQL.*.lock")):
        _remove_if_held_by_a_zombie(lock_file)
    user = "pgserver" if os.geteuid() == 0 else None  # as pgserver runs it: Postgres refuses to run as root
    pg_ctl(["-W", "-o", '-h ""', "-o", f"-k {socket_dir}", "-l", str(pgdata / "log"), "start"], pgdata=pgdata,
           user=user, timeout=10)


def _remove_if_held_by_a_zombie(lock_file: Path) -> None:
    import psutil

    with contextlib.suppress(OSError, ValueError, IndexError, psutil.Error):
        if psutil.Process(int(lock_file.read_text().split()[0])).status() == psutil.STATUS_ZOMBIE:
            lock_file.unlink()


def _socket_dir(pgdata: Path) -> str | None:
    """Where the running postmaster of ``pgdata`` listens (line 5 of its postmaster.pid)."""
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()[4].strip() or None
    except (OSError, IndexError):
        return None


def _stop(pgdata: Path) -> None:
    """Stops Postgres by its documented signals: SIGINT is a fast shutdown (sessions are ended, nothing
    committed is lost), SIGQUIT the immediate one if that does not finish in time, SIGKILL last. Waits until it is
    gone, at most about 3 s (STOP_TIMEOUT_SECONDS and IMMEDIATE_STOP_TIMEOUT_SECONDS)."""
    import psutil

    postmaster = _postmaster(pgdata)
    if postmaster is None:
        return
    logger.info("last user of %s: stopping its Postgres (pid %s)", pgdata, postmaster.pid)
    stops = [(signal.SIGINT, STOP_TIMEOUT_SECONDS), (signal.SIGQUIT, IMMEDIATE_STOP_TIMEOUT_SECONDS)]
    if not _ready(pgdata):
        # still starting (recovering after a crash): it has committed nothing new, so the immediate shutdown loses
        # nothing (the recovery runs again at the next start), and the fast one would wait for the recovery
        stops = stops[1:]
    for sig, timeout in stops:
        try:
            postmaster.send_signal(sig)
            # a stopped (SIGSTOP) Postgres acts on no signal until it is continued, its postmaster waiting for its
            # sessions: stopping it is what is asked
            for process in (postmaster, *postmaster.children(recursive=True)):
                with contextlib.suppress(psutil.Error):
                    process.send_signal(signal.SIGCONT)
        except psutil.NoSuchProcess:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _postmaster(pgdata) is None:
                return
            time.sleep(0.05)
    # Last resort, within a stop's bound: killed, which loses nothing committed either (its WAL is replayed at the
    # next start); its sessions end when they see their postmaster gone.
    logger.error("Postgres in %s (pid %s) did not stop; killing it", pgdata, postmaster.pid)
    with contextlib.suppress(psutil.Error):
        for process in (*postmaster.children(recursive=True), postmaster):
            with contextlib.suppress(psutil.Error):
                process.kill()


def _ready(pgdata: Path) -> bool:
    """Postgres says it accepts connections (the status line of its postmaster.pid)."""
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()[7].strip() == "ready"
    except (OSError, IndexError):
        return False


@contextmanager
def _locked_users(path: Path) -> Iterator[list]:
    """The users list, read and written back under an exclusive lock on its file."""
    with open(os.open(path, os.O_RDWR | os.O_CREAT, 0o644), "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            users = json.loads(f.read() or "[]")
        except ValueError:
            logger.warning("%s is not valid JSON; assuming no other user", path)
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
