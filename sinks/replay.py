"""``lakeledger replay``: streams a range of the log into a sink, in log order. It keeps no position of its
own and touches no projection's or publisher's position, so live sinks are unaffected; run it again with
``--from`` to continue."""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from lakeledger.domain.instants import parse_instant
from lakeledger.eventstore.log import EventLog, StoredNotification
from lakeledger.sinks.envelope import envelope

BATCH = 500


@dataclass(frozen=True)
class Bound:
    """A position in the log (``seq``) or an instant (``at``); one of the two."""

    seq: int | None = None
    at: datetime | None = None


def parse_bound(text: str) -> Bound:
    """``123`` or ``seq:123`` is a log position; anything else must be an RFC 3339 instant with an offset."""
    value = text.removeprefix("seq:")
    if value.isdigit():
        return Bound(seq=int(value))
    try:
        return Bound(at=parse_instant(text))
    except ValueError:
        raise ValueError(f"{text!r} is neither a log position nor an RFC 3339 instant "
                         "(with an offset, like 2026-11-01T00:00:00Z)") from None


def notifications(log: EventLog, start: Bound | None, stop: Bound | None) -> Iterator[StoredNotification]:
    after = start.seq - 1 if start and start.seq is not None else 0
    upto = stop.seq if stop and stop.seq is not None else log.head()
    while after < upto:
        batch = log.read(after, BATCH, upto=upto)
        if not batch:
            return
        for n in batch:
            if start and start.at is not None and n.event.timestamp < start.at:
                continue
            if stop and stop.at is not None and n.event.timestamp > stop.at:
                continue  # event times are taken just before the append lock, so they may be out of order by a hair
            yield n
        after = batch[-1].position


def replay(log: EventLog, sink, start: Bound | None = None, stop: Bound | None = None) -> int:
    count, pending = 0, []
    with sink:
        for n in notifications(log, start, stop):
            pending.append(envelope(n))
            if len(pending) >= BATCH:
                sink.write(pending)
                count += len(pending)
                pending = []
        if pending:
            sink.write(pending)
            count += len(pending)
    return count
