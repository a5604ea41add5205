"""A transaction sent to Postgres in one round trip: BEGIN, its statements and COMMIT in one pipeline, one sync.

psycopg's ``transaction()`` inside a pipeline syncs after its BEGIN, again before its COMMIT and once more on
leaving: four round trips, and a lock taken in the block is held across one of them, while this process waits
for a core or for the GIL. Here the server runs the whole transaction on one sync, a lock to the commit."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


@contextmanager
def one_round_trip(conn: psycopg.Connection[Any]) -> Iterator[None]:
    """Statements executed on ``conn`` (in autocommit mode) inside the block make one transaction; their results
    are there once the block is left. If one fails the server skips the rest, COMMIT included; whatever failed,
    the transaction is ended before the error goes on, so the connection is idle when it goes back to its pool."""
    try:
        with conn.pipeline(), conn.cursor() as control:
            control.execute(b"BEGIN")
            yield
            control.execute(b"COMMIT")
    except BaseException:
        _roll_back(conn)
        raise


def _roll_back(conn: psycopg.Connection[Any]) -> None:
    if conn.closed or conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return
    try:
        conn.execute(b"ROLLBACK")
    except psycopg.Error:
        conn.close()  # a pool replaces a closed connection
