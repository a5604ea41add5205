"""Lookups of one key waiting at the same moment share one query; a lookup that comes once the query is on its way
gets a query of its own (it may follow a write the first query cannot see); a waiter that is cancelled cancels
nobody else, and when all are the query is cancelled; a failure reaches every waiter."""

import asyncio

import pytest

from lakeledger.projections.coalesced import Coalesced


class Reads:
    """A read model whose answer is the query's ordinal (1 for the first sent), each held until ``release``."""

    def __init__(self):
        self.cancelled = 0
        self.sent: list[str] = []
        self.release = asyncio.Event()
        self.fail: Exception | None = None

    async def fetch(self, key: str) -> int:
        self.sent.append(key)
        ordinal = len(self.sent)
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.fail is not None:
            raise self.fail
        return ordinal


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_lookups_arriving_together_share_one_query_per_key():
    async def scenario():
        reads = Reads()
        coalesced = Coalesced(reads.fetch)
        waiting = [asyncio.ensure_future(coalesced.get(k)) for k in ("a", "a", "b", "a", "b")]
        await _settle()
        reads.release.set()
        return await asyncio.gather(*waiting), sorted(reads.sent)

    answers, sent = asyncio.run(scenario())
    assert sent == ["a", "b"]
    assert answers[0] == answers[1] == answers[3] != answers[2] == answers[4]


def test_a_lookup_after_the_query_was_sent_does_not_take_its_answer():
    async def scenario():
        reads = Reads()
        coalesced = Coalesced(reads.fetch)
        first = asyncio.ensure_future(coalesced.get("a"))
        await _settle()  # the first query is on its way (held in fetch)
        later = asyncio.ensure_future(coalesced.get("a"))
        await _settle()
        reads.release.set()
        return await first, await later, reads.sent

    first, later, sent = asyncio.run(scenario())
    assert (first, later, sent) == (1, 2, ["a", "a"])


def test_a_cancelled_waiter_cancels_neither_the_query_nor_the_others():
    async def scenario():
        reads = Reads()
        coalesced = Coalesced(reads.fetch)
        leaving = asyncio.ensure_future(coalesced.get("a"))
        staying = asyncio.ensure_future(coalesced.get("a"))
        await _settle()
        leaving.cancel()
        await _settle()
        reads.release.set()
        answer = await staying
        with pytest.raises(asyncio.CancelledError):
            await leaving
        return answer, reads.sent

    assert asyncio.run(scenario()) == (1, ["a"])


def test_a_failed_query_fails_every_waiter_and_the_next_lookup_asks_again():
    async def scenario():
        reads = Reads()
        reads.fail = ConnectionError("the database went away")
        coalesced = Coalesced(reads.fetch)
        waiting = [asyncio.ensure_future(coalesced.get("a")) for _ in range(3)]
        await _settle()
        reads.release.set()
        outcomes = await asyncio.gather(*waiting, return_exceptions=True)
        reads.fail = None
        again = await coalesced.get("a")
        return outcomes, again, reads.sent

    outcomes, again, sent = asyncio.run(scenario())
    assert all(isinstance(o, ConnectionError) for o in outcomes)
    assert again == 2 and sent == ["a", "a"]


def test_when_every_waiter_is_cancelled_the_query_is_too_and_the_next_lookup_asks_again():
    async def scenario():
        reads = Reads()
        coalesced = Coalesced(reads.fetch)
        waiting = [asyncio.ensure_future(coalesced.get("a")) for _ in range(3)]
        await _settle()  # the query is on its way, held by a database that does not answer
        for w in waiting:
            w.cancel()
        await _settle()
        reads.release.set()
        again = await asyncio.wait_for(coalesced.get("a"), 5)
        return reads.cancelled, again, reads.sent

    assert asyncio.run(scenario()) == (1, 2, ["a", "a"])
