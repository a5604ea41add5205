"""Appends go in as rows of parameters (up to ``VALUES_ROWS_MAX`` events) or as one array per column (more): either
way every event keeps its place, its positions follow the append order, and the log reads back what was saved."""

import pytest
from eventsourcing.domain import Aggregate, event

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
