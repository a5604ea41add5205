"""Private parts of pinned libraries, and of CPython, that the rest of Lakeledger relies on, used here and nowhere
else. pyiceberg's are in lakeledger/domain/pyiceberg_compat.py, eventsourcing's and psycopg's in
lakeledger/eventstore/compat.py (the domain and the event log import only the domain). Each says why no public API
serves; ``RELIED_ON`` lists them for tests/unit/test_compat.py, which checks them against what is installed."""

import atexit
from pathlib import Path

from lakeledger.domain.private_api import PrivateApi

PGSERVER = "pgserver"
PYTHON = "python"  # CPython itself: its version is the interpreter's


def forget_pgserver_handle(pgdata: Path) -> None:
    """pgserver keeps one handle per data directory per process and hands it back without looking whether Postgres
    still runs: after a release or a crash, ``get_server`` must look again (and start it). It offers no public way
    to drop a handle."""
    import pgserver  # when needed only: importing it lists the folder of its binaries

    pgserver.PostgresServer._instances.pop(pgdata, None)


def run_exit_handlers() -> None:
    """The handlers registered with ``atexit``, run now. The process then ends with ``os._exit``, which skips
    Python's own teardown (it took a second or more under load, lakeledger/cli.py) and the handlers with it; CPython
    runs them only from that teardown otherwise."""
    atexit._run_exitfuncs()


RELIED_ON = (
    PrivateApi(PGSERVER, "pgserver:PostgresServer._instances", None,
               "a handle to a Postgres that stopped is dropped, so that the next get_server looks again"),
    PrivateApi(PYTHON, "atexit:_run_exitfuncs", None, "the exit handlers of a process that ends with os._exit"),
)
