"""Processes a test session started and left running (Postgres, nats-server, MinIO, Trino or any JVM,
`lakeledger serve`...). tests/conftest.py marks the session at its start and checks at its end.

A process counts as the session's when it carries the session's mark in its environment (every process
started from the session inherits it, including daemons such as the postmaster that pg_ctl detaches, whose
parent is no longer us), is a descendant of the pytest process, or names a path under the session's
temporary directory on its command line (for a fixture that starts something with an environment of its own).
Other sessions running on the same machine at the same time have marks and directories of their own."""

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

import psutil

MARK = "LAKELEDGER_TEST_SESSION"


def mark_session() -> str:
    """Gives this process (and so everything it starts from now on) a mark of its own."""
    os.environ[MARK] = uuid.uuid4().hex
    return os.environ[MARK]


def started_by_session(mark: str, temp_dirs: list[Path]) -> list[psutil.Process]:
    """The session's live processes, only the top of each tree (a postmaster, not its backends)."""
    me = os.getpid()
    try:
        descendants = {p.pid for p in psutil.Process(me).children(recursive=True)}
    except psutil.Error:
        descendants = set()
    prefixes = [str(d).rstrip("/") + "/" for d in temp_dirs]
    ours: dict[int, psutil.Process] = {}
    for process in psutil.process_iter(["name", "cmdline", "status", "environ", "ppid"]):
        if process.pid == me or process.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        environ = process.info["environ"] or {}
        command = " ".join(process.info["cmdline"] or [])
        if process.pid in descendants or environ.get(MARK) == mark or any(p in command for p in prefixes):
            ours[process.pid] = process
    return [p for p in ours.values() if p.info["ppid"] not in ours]


def describe(process: psutil.Process) -> str:
    command = " ".join(process.info.get("cmdline") or []) or process.info.get("name") or "?"
    return f"pid {process.pid}: {command[:300]}"


def still_running(processes: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for process in processes:
        try:
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.Error:
            pass
    return alive


def left_after(processes: list[psutil.Process], grace_seconds: float) -> list[psutil.Process]:
    """Those of ``processes`` still running after ``grace_seconds`` (a server may be in its last second
    of a stop its fixture asked for)."""
    deadline = time.monotonic() + grace_seconds
    while (alive := still_running(processes)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def end(processes: list[psutil.Process]) -> None:
    """Stops what a session left behind, so that one leaking run does not burden the machine's next ones:
    SIGTERM (a fast shutdown for Postgres is SIGINT), then SIGKILL after 10 s."""
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.send_signal(signal.SIGINT if process.name().startswith("postgres") else signal.SIGTERM)
    for process in left_after(processes, 10):
        with contextlib.suppress(psutil.Error):
            process.kill()
