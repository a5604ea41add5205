"""Which database errors mean "the database could not answer" (a 503) and which a lost connection worth one more
attempt (lakeledger/eventstore/postgres_failures.py), on the error classes psycopg, psycopg_pool and the eventsourcing
library raise."""

import psycopg
import pytest
from eventsourcing.persistence import DataError as LibraryDataError
from eventsourcing.persistence import InterfaceError as LibraryInterfaceError
from eventsourcing.persistence import OperationalError as LibraryOperationalError
from psycopg import errors
from psycopg_pool import PoolClosed, PoolTimeout, TooManyRequests

from lakeledger.eventstore.postgres_failures import NoAnswer, connection_lost, unavailable


def _wrapped(library_class, cause: BaseException) -> BaseException:
    """As the eventsourcing library raises it: its own class, from psycopg's error."""
    try:
        try:
            raise cause
        except BaseException as e:
            raise library_class(str(e)) from e
    except BaseException as wrapper:
        return wrapper


UNAVAILABLE = [errors.AdminShutdown("terminating connection due to administrator command"),
               errors.CrashShutdown(), errors.CannotConnectNow("the database system is starting up"),
               errors.QueryCanceled("canceling statement due to statement timeout"),
               errors.LockNotAvailable(), errors.TooManyConnections(), errors.ConnectionFailure(),
               errors.SerializationFailure(), errors.IdleInTransactionSessionTimeout(),
               psycopg.OperationalError("server closed the connection unexpectedly"),
               PoolTimeout("couldn't get a connection after 3.00 sec"), PoolClosed(), TooManyRequests(),
               NoAnswer("the database did not answer within 7 s")]


@pytest.mark.parametrize("error", UNAVAILABLE, ids=lambda e: type(e).__name__)
def test_unavailable_errors_and_their_library_wrappers(error):
    assert unavailable(error)
    assert unavailable(_wrapped(LibraryOperationalError, error))
    assert unavailable(_wrapped(RuntimeError, error))  # whatever wraps it, the cause decides


@pytest.mark.parametrize("error", [errors.UniqueViolation(), errors.UntranslatableCharacter(),
                                   errors.UndefinedTable(), psycopg.ProgrammingError("bad query"),
                                   psycopg.InterfaceError("cursor already closed"), ValueError("x")],
                         ids=lambda e: type(e).__name__)
def test_data_and_programming_errors_are_not(error):
    assert not unavailable(error)
    assert not unavailable(_wrapped(LibraryDataError, error))


def test_a_closed_connection_reported_as_an_interface_error_is():
    assert unavailable(_wrapped(LibraryInterfaceError, psycopg.InterfaceError("the connection is lost")))


@pytest.mark.parametrize(
    "error",
    [
        errors.AdminShutdown(),
        errors.ConnectionFailure(),
        errors.IdleInTransactionSessionTimeout(),
        psycopg.OperationalError("server closed the connection unexpectedly"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_a_broken_connection_is_worth_another_attempt(error):
    assert connection_lost(error)
    assert connection_lost(_wrapped(LibraryOperationalError, error))


@pytest.mark.parametrize("error", [PoolTimeout(), NoAnswer(), errors.QueryCanceled(), errors.LockNotAvailable(),
                                   errors.TooManyConnections(), errors.UniqueViolation()],
                         ids=lambda e: type(e).__name__)
def test_a_timeout_is_not_waited_for_twice(error):
    assert not connection_lost(error)
    assert not connection_lost(_wrapped(LibraryOperationalError, error))
