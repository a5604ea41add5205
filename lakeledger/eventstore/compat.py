"""What the event log relies on of eventsourcing (pinned: 9.5.6) and psycopg (3.3) that they do not promise: the
private methods lakeledger/eventstore/recorder.py overrides and calls, and psycopg's internal wait timeout. Imported
here or named here (an override can only be named); ``RELIED_ON`` and ``SUBCLASSES`` list them for
tests/unit/test_compat.py, which checks them against the installed libraries. (The event log imports only the
domain, so this is its own module rather than lakeledger/compat.py.)"""

from collections.abc import Callable
from typing import Any, TypeVar

from psycopg import errors

from lakeledger.domain.private_api import PrivateApi, Subclass

EVENTSOURCING = "eventsourcing"
PSYCOPG = "psycopg"

# psycopg's ``Connection.wait`` raises this when its ``timeout`` passes, and nothing public tells that apart from the
# other OperationalErrors (a lost connection): psycopg's own note on it says callers should handle it or convert it to
# a public error, which lakeledger/eventstore/postgres_failures.py does (NoAnswer).
WaitTimeout = errors._WaitTimeout

F = TypeVar("F", bound=Callable[..., Any])


def without_library_retry(method: F) -> F:
    """The library's recorder method without its ``@retry`` (ten attempts on any operational error, each waiting up
    to a pool timeout: minutes with the database down); the recorder applies its own
    (lakeledger/eventstore/recorder.py). The decorator keeps the method as ``__wrapped__`` (functools.wraps)."""
    unwrapped: F = getattr(method, "__wrapped__", method)
    return unwrapped


_RECORDER = "eventsourcing.postgres:PostgresApplicationRecorder"
_OUR_RECORDER = "lakeledger.eventstore.recorder:EventLogRecorder"
# the library's insert calls these, in this order, inside its transaction; the recorder's append variants call them
# the same way, and its hook runs in the last (so inside the transaction, after the rows have their positions)
INSERT_HOOKS = ("_insert_events", "_insert_stored_events", "_fetch_ids_after_insert_events")

RELIED_ON = (
    PrivateApi(EVENTSOURCING, f"{_RECORDER}._insert_stored_events", "(self, curs, stored_events, **kwargs)",
               "overridden: the rows sent as plain parameters (psycopg dumps the library's composite-type array in "
               "Python, at a tenth of an append's CPU) and the lock and notification as one function call",
               overridden_by=_OUR_RECORDER),
    PrivateApi(EVENTSOURCING, f"{_RECORDER}._fetch_ids_after_insert_events", "(self, curs, stored_events, **_)",
               "overridden: the hook that keeps the catalog read model in the append's transaction runs once the "
               "events have their positions", overridden_by=_OUR_RECORDER),
    PrivateApi(EVENTSOURCING, f"{_RECORDER}._insert_events", "(self, curs, stored_events, **_)",
               "called first by the recorder's own append variants, as the library's insert does"),
    PrivateApi(EVENTSOURCING, f"{_RECORDER}.insert_events.__wrapped__", "(self, stored_events, **kwargs)",
               "the library's insert without its retry, which calls the three hooks inside one transaction and "
               "catches Exception there (AppendRefused derives from BaseException to roll it back)",
               calls=(*INSERT_HOOKS, "pipeline", "transaction")),
    PrivateApi(EVENTSOURCING, f"{_RECORDER}.select_events.__wrapped__",
               "(self, originator_id, *, gt=None, lte=None, desc=False, limit=None)",
               "read without the library's retry, again only on a lost connection"),
    PrivateApi(EVENTSOURCING, f"{_RECORDER}.select_notifications.__wrapped__",
               "(self, start, limit, stop=None, topics=(), *, inclusive_of_start=True)",
               "read without the library's retry, again only on a lost connection"),
    PrivateApi(EVENTSOURCING, f"{_RECORDER}.max_notification_id.__wrapped__", "(self)",
               "read without the library's retry, again only on a lost connection"),
    PrivateApi(EVENTSOURCING, "eventsourcing.domain:Aggregate._create", "(event_class, *, id=None, **kwargs)",
               "the library's documented way for a subclass to create an aggregate with an event class of its "
               "choice: a grant's first event may be Added or Removed (lakeledger/domain/grant.py)"),
    PrivateApi(PSYCOPG, "psycopg.errors:_WaitTimeout", None,
               "a wait that timed out, told apart from a lost connection"),
    PrivateApi(PSYCOPG, "psycopg:Connection.wait", "(self, gen, interval=0.1, timeout=None)",
               "overridden (undocumented): every exchange with the server waits at most the answer timeout",
               overridden_by="lakeledger.eventstore.postgres_failures:BoundedConnection"),
    PrivateApi(PSYCOPG, "psycopg:AsyncConnection.wait", "(self, gen, interval=0.1, timeout=None)",
               "overridden (undocumented): every exchange with the server waits at most the answer timeout",
               overridden_by="lakeledger.eventstore.postgres_failures:AsyncBoundedConnection"),
)

SUBCLASSES = (
    Subclass(EVENTSOURCING, _RECORDER, _OUR_RECORDER,
             ("_insert_head", "_inserts", "_insert_many", "_lock_and_notify", "_lock_timeout", "_insert_statement",
              "_library_insert_events", "_insert_in_one_round_trip", "_insert_without_pipeline"),
             "the recorder's own statements and append variants"),
    Subclass(PSYCOPG, "psycopg:Connection", "lakeledger.eventstore.postgres_failures:BoundedConnection",
             ("answer_timeout",), "how long a connection waits for any one answer"),
    Subclass(PSYCOPG, "psycopg:AsyncConnection", "lakeledger.eventstore.postgres_failures:AsyncBoundedConnection",
             ("answer_timeout",), "how long a connection waits for any one answer"),
)
