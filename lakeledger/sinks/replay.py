"""``lakeledger replay``: streams a range of the log into a sink, in log order. It keeps no position of its
own and touches no projection's or publisher's position, so live sinks are unaffected; run it again with
``--from`` to continue."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, Protocol, Self

from lakeledger.domain.instants import parse_instant
from lakeledger.eventstore.append_time import FutureInstant
from lakeledger.eventstore.log import EventLog, StoredNotification
from lakeledger.sinks.envelope import envelope

BATCH = 500
MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True)
class Bound:
    """A position in the log (``seq``) or an instant (``at``); one of the two."""

    seq: int | None = None
    at: datetime | None = None


class Sink(Protocol):
    """Where replay writes: opened by ``with``, then handed batches of envelopes in log order."""

    def __enter__(self) -> Self: ...

    def write(self, batch: list[dict[str, Any]]) -> None: ...

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None: ...


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


def span(log: EventLog, start: Bound | None, stop: Bound | None) -> tuple[int, int]:
    """(the last position skipped, the last position replayed) of the bounds. An instant bound is where the log
    stood then, by append time (a prefix of the log, the same prefix catalog time travel shows): ``--from T``
    starts after the last event appended before T, ``--to T`` ends with the last one appended at or before it. A
    bound not yet past is the head of the log as it is now."""
    return (_position(log, start) if start else 0), (_position(log, stop, inclusive=True) if stop else log.head())


def _between(log: EventLog, after: int, upto: int) -> Iterator[StoredNotification]:
    while after < upto:
        batch = log.read(after, BATCH, upto=upto)
        if not batch:
            return
        yield from batch
        after = batch[-1].position


def _position(log: EventLog, bound: Bound, inclusive: bool = False) -> int:
    """The position a bound names: the last one replayed for ``--to``, the last one skipped for ``--from``."""
    if bound.seq is not None:
        return bound.seq if inclusive else bound.seq - 1
    assert bound.at is not None  # a Bound holds a seq or an instant
    # append times have microsecond resolution: "before T" is "at or before T minus 1 µs"
    instant = bound.at if inclusive else bound.at - MICROSECOND
    try:
        return log.position_at(instant)
    except FutureInstant:
        return log.head()


def replay(log: EventLog, sink: Sink, start: Bound | None = None, stop: Bound | None = None,
           progress: Callable[[int, int], None] = lambda done, total: None) -> int:
    """Events written; ``progress`` hears (positions covered, positions in the range) after each batch."""
    after, upto = span(log, start, stop)
    total = max(upto - after, 0)
    count, pending = 0, []
    with sink:
        for n in _between(log, after, upto):
            pending.append(envelope(n))
            if len(pending) >= BATCH:
                sink.write(pending)
                count += len(pending)
                pending = []
                progress(n.position - after, total)
        if pending:
            sink.write(pending)
            count += len(pending)
    progress(total, total)
    return count
