"""What a failing Postgres looks like to this program, in one place: which errors mean "the database could not
answer" (a retry later may succeed: the API's 503), which mean a pooled connection was lost (worth one retry on a
fresh one), and connections that give up on an answer that does not come.

Postgres enforces ``statement_timeout`` itself, but a stalled server (SIGSTOP, a frozen VM, a network that drops
packets silently) enforces nothing and the kernel still accepts what is sent to it: a client blocked on the answer
would wait forever. The connections here stop waiting a margin after the statement timeout and close themselves,
so their pool replaces them."""

from collections.abc import Iterator
from typing import Any

import psycopg
from eventsourcing.persistence import InterfaceError as LibraryInterfaceError
from eventsourcing.persistence import OperationalError as LibraryOperationalError
from psycopg import errors
from psycopg_pool import PoolTimeout

from lakeledger.eventstore.compat import WaitTimeout

# How long a client waits for an answer beyond the server's own statement timeout before it gives the connection up.
ANSWER_MARGIN_SECONDS = 5.0

CONNECT_TIMEOUT_SECONDS = 5

# What a client may do about a 503 caused by the database: try again after this many seconds.
RETRY_AFTER_SECONDS = 2


# The server ended the session for a timeout of its own: idle in transaction (a stall, then the server's clock
# caught up), transaction timeout (Postgres 17). psycopg reports them as InternalError (SQLSTATE class 25).
SESSION_ENDED_BY_TIMEOUT = frozenset({"25P03", "25P04"})


class NoAnswer(psycopg.OperationalError):
    """The database did not answer in time: stalled, or unreachable without the connection noticing."""


def unavailable(exc: BaseException) -> bool:
    """The error, or one it was raised from, means the database could not answer now: connection refused, lost or
    broken, the server shutting down or starting, out of connections, a statement or lock timeout, no connection
    free in the pool, no answer at all. The eventsourcing library wraps psycopg's errors in its own classes; those
    wrappers count too. Programming and data errors do not: they would fail again."""
    for error in _chain(exc):
        # psycopg's OperationalError covers SQLSTATE classes 08 (connection), 53 (resources: too many connections),
        # 55P03 (lock timeout), 57 (admin/crash shutdown, cannot connect now, query canceled: statement timeout),
        # 40 (serialization failure, deadlock) and the pool's own PoolTimeout, TooManyRequests and PoolClosed
        if isinstance(error, (psycopg.OperationalError, LibraryOperationalError)):
            return True
        if isinstance(error, psycopg.Error) and error.sqlstate in SESSION_ENDED_BY_TIMEOUT:
            return True
        if isinstance(error, (psycopg.InterfaceError, LibraryInterfaceError)) and _connection_gone(error):
            return True
    return False


def connection_lost(exc: BaseException) -> bool:
    """A pooled connection turned out to be broken (the server restarted or ended the session): the same work on
    a fresh connection may succeed at once. Not a timeout: waiting as long again would only double the wait."""
    for error in _chain(exc):
        if isinstance(error, (PoolTimeout, NoAnswer, errors.QueryCanceled, errors.LockNotAvailable)):
            return False
        if isinstance(error, psycopg.Error) and error.sqlstate in SESSION_ENDED_BY_TIMEOUT:
            return True
        if isinstance(error, psycopg.OperationalError):
            sqlstate = error.sqlstate
            if sqlstate is None:
                return True  # "server closed the connection unexpectedly", "the connection is closed", ...
            # class 08: connection exceptions; the server ended the session (admin or crash shutdown)
            if sqlstate.startswith("08") or sqlstate in ("57P01", "57P02"):
                return True
    return False


def _connection_gone(error: BaseException) -> bool:
    return "connection" in str(error).lower() and ("closed" in str(error).lower() or "lost" in str(error).lower())


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 16:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def pool_connection_options(statement_timeout_seconds: float) -> dict[str, str]:
    """Connection parameters of a pool's connections: connecting gives up after a few seconds (a stalled server
    accepts the connection and never answers), and the server ends any statement running longer than the
    statement timeout (0: no limit)."""
    options = {"connect_timeout": str(CONNECT_TIMEOUT_SECONDS)}
    if statement_timeout_seconds > 0:
        options["options"] = f"-c statement_timeout={int(statement_timeout_seconds * 1000)}"
    return options


def answer_timeout(statement_timeout_seconds: float) -> float | None:
    return statement_timeout_seconds + ANSWER_MARGIN_SECONDS if statement_timeout_seconds > 0 else None


class BoundedConnection(psycopg.Connection[Any]):
    """A connection that waits at most ``answer_timeout`` seconds for any one exchange with the server (set on the
    class made by ``bounded_connection``), then closes itself and raises ``NoAnswer``."""

    answer_timeout: float | None = None

    # overrides psycopg's (lakeledger/eventstore/compat.py)
    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        try:
            return super().wait(gen, interval, timeout if timeout is not None else self.answer_timeout)
        except WaitTimeout:
            if timeout is not None:
                raise  # the caller's own timeout (notifies(timeout=...)), as psycopg reports it
            self.pgconn.finish()  # its state is unknown: never used again
            raise NoAnswer(f"the database did not answer within {self.answer_timeout:g} s") from None


class AsyncBoundedConnection(psycopg.AsyncConnection[Any]):
    """``BoundedConnection`` for the asyncio pool."""

    answer_timeout: float | None = None

    async def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        try:
            return await super().wait(gen, interval, timeout if timeout is not None else self.answer_timeout)
        except WaitTimeout:
            if timeout is not None:
                raise
            self.pgconn.finish()
            raise NoAnswer(f"the database did not answer within {self.answer_timeout:g} s") from None


def bounded_connection(base: type, statement_timeout_seconds: float) -> type:
    """``base`` (one of the two classes above) with its answer timeout set for this statement timeout."""
    return type(base.__name__, (base,), {"answer_timeout": answer_timeout(statement_timeout_seconds)})
