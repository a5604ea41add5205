"""Appends go in as rows of parameters (up to ``VALUES_ROWS_MAX`` events) or as one array per column (more): either
way every event keeps its place, its positions follow the append order, and the log reads back what was saved."""

import pytest
from eventsourcing.domain import Aggregate, event
from psycopg.pq import Trace

from lakeledger.eventstore.log import EventLog
from lakeledger.eventstore.recorder import VALUES_ROWS_MAX
from lakeledger.eventstore.settings import PostgresSettings


class Tally(Aggregate):
    @event("Created")
    def __init__(self, name: str):
        self.name = name
        self.marks: list[bytes | str] = []

    @event("Marked")
    def mark(self, mark: str) -> None:
        self.marks.append(mark)


@pytest.mark.parametrize("marks", [0, 2, VALUES_ROWS_MAX - 1, VALUES_ROWS_MAX, VALUES_ROWS_MAX + 1, 1000])
def test_an_append_keeps_every_event_in_its_order(database, marks):
    log = EventLog(PostgresSettings.from_url(database), create_table=True, cache_size=0, pool_size=1)
    try:
        first, second = Tally("first"), Tally("second")
        for i in range(marks):
            first.mark(f"m{i}\x00é")  # a NUL and a non-ASCII character in the stored state
            second.mark(str(i))
        last = log.save(first, second)
        stored = log.read(after=0, limit=10_000)
        assert last == stored[-1].position
        assert [(s.originator_id, s.originator_version) for s in stored] == \
            [(first.id, v) for v in range(1, marks + 2)] + [(second.id, v) for v in range(1, marks + 2)]
        assert [s.position for s in stored] == sorted({s.position for s in stored})
        again = log.get(Tally, first.id)
        assert again.marks == first.marks and again.version == marks + 1
        # the next append follows on
        second.mark("after")
        assert log.save(second) > last
    finally:
        log.close()


def _log(database) -> EventLog:
    return EventLog(PostgresSettings.from_url(database), create_table=True, cache_size=0, pool_size=1)


def test_an_append_in_one_round_trip_is_atomic_with_its_hooks_work(database, tmp_path):
    """An append with a read model's writes (``one_trip``) is sent as one pipeline: the events and the hook's
    statements commit together, and the client syncs with the server once (one round trip; psycopg's transaction
    block in a pipeline would sync four times and hold the events table's lock across one of them)."""
    log = _log(database)
    try:
        tally = Tally("once")
        tally.mark("a")
        with log._app.recorder.datastore.get_connection() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS tally_marks (id uuid, version int)")

        trace, traced = tmp_path / "libpq.trace", []

        def one_trip(cur, events):
            # from here to the append's end: the hook's statements, the commit, and every sync the client sends
            traced.append(cur.connection.pgconn)
            cur.connection.pgconn.trace(out.fileno())
            cur.connection.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)
            for e in events:
                cur.execute("INSERT INTO tally_marks VALUES (%s, %s)", (e.originator_id, e.originator_version))

        with open(trace, "w") as out:
            try:
                position = log.save(tally, one_trip=one_trip)
            finally:
                for pgconn in traced:
                    pgconn.untrace()
        messages = [line.split("\t") for line in trace.read_text().splitlines()]
        assert [m[2].strip() for m in messages if m[0] == "F" and m[2].strip() == "Sync"] == ["Sync"]
        # and the server answered every statement of the append after that one sync: its BEGIN, the lock, the
        # events' insert, the hook's two, its COMMIT
        answered = [m[3].strip() for m in messages if m[0] == "B" and m[2].startswith("CommandComplete")]
        assert answered == ['"BEGIN"', '"SELECT 1"', '"INSERT 0 2"', '"INSERT 0 1"', '"INSERT 0 1"', '"COMMIT"']
        assert position is not None
        with log._app.recorder.datastore.get_connection() as conn:
            marks = conn.execute("SELECT count(*) AS n FROM tally_marks WHERE id = %s", (tally.id,)).fetchone()
        assert marks["n"] == 2
        assert log.get(Tally, tally.id).marks == ["a"]
    finally:
        log.close()


@pytest.mark.parametrize("failure", ["statement", "python"])
def test_an_append_whose_hook_fails_leaves_no_event_and_a_clean_connection(database, failure):
    """The hook fails after the events' insert is queued in the pipeline, in the database (a statement that
    errors) or in this process (an exception before COMMIT is queued): nothing is appended, the connection goes back
    to the pool out of any transaction, and the next append goes through."""
    log = _log(database)
    try:
        tally = Tally("refused")

        def one_trip(cur, events):
            if failure == "statement":
                cur.execute("SELECT 1 / 0")
            else:
                raise RuntimeError("the read model's writer failed")

        before = log.head()
        with pytest.raises(Exception) as raised:
            log.save(tally, one_trip=one_trip)
        assert "division by zero" in str(raised.value) if failure == "statement" else \
            isinstance(raised.value, RuntimeError)
        assert log.head() == before and log.get(Tally, tally.id) is None
        with log._app.recorder.datastore.get_connection() as conn:
            assert conn.info.transaction_status == conn.info.transaction_status.IDLE
        again = Tally("after")
        assert log.save(again, one_trip=lambda cur, events: None) > before
        assert log.get(Tally, again.id).name == "after"
    finally:
        log.close()


def test_the_append_lock_function_sets_the_lock_timeout_for_its_transaction_only(database):
    """The library's lock timeout, lock and notification as one function (``EventLogRecorder``): the timeout holds
    for the append's transaction and is gone after it, as SET LOCAL's was."""
    log = _log(database)
    try:
        recorder = log._app.recorder
        with recorder.datastore.get_connection() as conn:
            with conn.transaction():
                conn.execute(recorder._lock_and_notify, ("1500ms",))
                assert conn.execute("SHOW lock_timeout").fetchone()["lock_timeout"] == "1500ms"
                mode = conn.execute("SELECT mode FROM pg_locks WHERE relation = 'lakeledger_events'::regclass"
                                    " AND pid = pg_backend_pid()").fetchone()
                assert mode["mode"] == "ExclusiveLock"
            assert conn.execute("SHOW lock_timeout").fetchone()["lock_timeout"] == "0"
    finally:
        log.close()
