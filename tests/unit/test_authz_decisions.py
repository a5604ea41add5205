"""The decisions remembered in front of an authorization backend (lakeledger/authz/decisions.py): how long, how many,
and when they are forgotten. The backend here is a table of tuples in memory that counts the questions it is asked: what
is under test is the remembering, not a decision (those are asked of a real OpenFGA in tests/e2e)."""

import asyncio

from lakeledger.authz.authorizer import Check
from lakeledger.authz.decisions import RememberedDecisions
from lakeledger.authz.objects import RelationTuple


class Table:
    def __init__(self, *allowed: Check):
        self.allowed = set(allowed)
        self.asked: list[Check] = []
        self.closed = False

    async def check_many(self, checks):
        self.asked += checks
        return [c in self.allowed for c in checks]

    def write(self, writes=(), deletes=()):
        for t in writes:
            self.allowed.add(Check(t.user, t.relation, t.object))
        for t in deletes:
            self.allowed.discard(Check(t.user, t.relation, t.object))


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


READ = Check("user:oidc~bob", "can_read_data", "table:t1")
WRITE = Check("user:oidc~bob", "can_write_data", "table:t1")


def ask(decisions, *checks):
    return asyncio.run(decisions.check_many(list(checks)))


def test_an_answer_is_remembered_for_ttl_seconds_allow_and_deny_alike():
    backend, clock = Table(READ), Clock()
    decisions = RememberedDecisions(backend, ttl=2.0, clock=clock)
    assert ask(decisions, READ, WRITE) == [True, False]
    assert ask(decisions, READ, WRITE) == [True, False]
    assert len(backend.asked) == 2
    backend.allowed = {WRITE}  # changed behind the cache's back (another process's revoke and grant)
    clock.now += 1.9
    assert ask(decisions, READ, WRITE) == [True, False]
    clock.now += 0.2
    assert ask(decisions, READ, WRITE) == [False, True]
    assert len(backend.asked) == 4


def test_a_write_through_it_forgets_everything_remembered():
    backend, clock = Table(), Clock()
    decisions = RememberedDecisions(backend, ttl=60, clock=clock)
    assert ask(decisions, READ) == [False]
    decisions.write([RelationTuple(READ.user, READ.relation, READ.object)])
    assert ask(decisions, READ) == [True]
    decisions.write(deletes=[RelationTuple(READ.user, READ.relation, READ.object)])
    assert ask(decisions, READ) == [False]


def test_only_the_unknown_checks_are_asked_once_each_in_one_batch():
    backend = Table(READ)
    decisions = RememberedDecisions(backend, ttl=5, clock=Clock())
    ask(decisions, READ)
    backend.asked.clear()
    assert ask(decisions, READ, WRITE, WRITE) == [True, False, False]
    assert backend.asked == [WRITE]


def test_the_table_is_bounded_least_recently_used_first_out():
    backend = Table()
    decisions = RememberedDecisions(backend, ttl=60, max_entries=2, clock=Clock())
    a, b, c = (Check("user:u", "can_get_metadata", f"table:{n}") for n in "abc")
    ask(decisions, a)
    ask(decisions, b)
    ask(decisions, a)  # a is used again: b is now the oldest
    ask(decisions, c)
    backend.asked.clear()
    ask(decisions, a, c)
    assert backend.asked == []
    ask(decisions, b)
    assert backend.asked == [b]


def test_ttl_zero_asks_every_time():
    backend = Table(READ)
    decisions = RememberedDecisions(backend, ttl=0, clock=Clock())
    ask(decisions, READ)
    ask(decisions, READ)
    assert len(backend.asked) == 2
