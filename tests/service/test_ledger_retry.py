"""``Ledger.retrying``: a command that lost a race to another writer runs again on the state that won; one that keeps
losing gives up, with its caller's error, only once its deadline has passed and it has tried its minimum; what is not
a conflict is never retried."""

import time

import pytest

from lakeledger.domain.errors import AlreadyExists, CommitFailed, NamespaceNotEmpty, NoSuchNamespace
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.services import unit_of_work


def _rival_sets(catalog, key: str):
    """The rival's move: one more property on namespace ``ns``, appended at the namespace's next version."""
    count = iter(range(1_000_000))
    return lambda: catalog.rival.namespaces.update_properties(catalog.warehouse_id, ["ns"], {key: str(next(count))},
                                                              [], Provenance("rival", "update"))


def test_a_command_that_lost_a_race_runs_again_on_the_winners_state(catalog, interleave):
    ns_id = catalog.namespace("ns")
    start = catalog.head()
    seen = interleave(catalog.services.ledger, _rival_sets(catalog, "theirs"))

    updated, removed, missing = catalog.services.namespaces.update_properties(
        catalog.warehouse_id, ["ns"], {"mine": "1"}, [], Provenance("me", "update"))

    assert seen.appends == 2  # the first append met the rival's event at the same version; the second went in
    assert (updated, removed, missing) == (["mine"], [], [])
    events = catalog.events_after(start)
    assert [(type(n.event), n.event.actor) for n in events] == [(Namespace.PropertiesUpdated, "rival"),
                                                                (Namespace.PropertiesUpdated, "me")]
    assert [n.originator_version for n in events] == [2, 3]  # built on the winner's version, not its own first read
    assert catalog.services.log.get(Namespace, ns_id).properties == {"theirs": "0", "mine": "1"}


def test_a_command_that_keeps_losing_gives_up_after_its_deadline(catalog, monkeypatch):
    """The retry is bounded by time, not by a count: with a minimum of one attempt and a deadline of 0.3 s, it keeps
    going until the deadline has passed, then raises the caller's error (not the conflict)."""
    monkeypatch.setattr(unit_of_work, "MIN_ATTEMPTS", 1)
    monkeypatch.setattr(unit_of_work, "RETRY_SECONDS", 0.3)
    ns_id = catalog.namespace("ns")
    start = catalog.head()
    rival_sets = _rival_sets(catalog, "theirs")
    attempts: list[int] = []  # the namespace version each attempt built on

    def command() -> None:
        ns = catalog.services.log.get(Namespace, ns_id)
        attempts.append(ns.version)
        rival_sets()  # another writer wins every race
        ns.update_properties({"mine": "1"}, [], Provenance("me", "update"))
        catalog.services.ledger.append(ns)

    began = time.monotonic()
    with pytest.raises(AlreadyExists, match="^gave up on ns$") as refused:
        catalog.services.ledger.retrying(command, AlreadyExists, "gave up on ns")
    gave_up = time.monotonic()

    assert refused.value.__cause__ is None and refused.value.__suppress_context__  # the conflict is not shown
    assert gave_up - began >= 0.3  # not before its deadline, however few attempts that took
    events = catalog.events_after(start)
    # each attempt lost to one rival event and built on it in the next; none of its own went in
    assert attempts == list(range(attempts[0], attempts[0] + len(attempts)))
    assert len(events) == len(attempts)
    assert {n.event.actor for n in events} == {"rival"}
    assert "mine" not in catalog.services.log.get(Namespace, ns_id).properties


def test_a_service_that_keeps_losing_tries_its_minimum_then_says_retry(catalog, interleave, monkeypatch):
    """Past the deadline already (0 s), a service still makes MIN_ATTEMPTS real attempts, then refuses with its
    default error."""
    monkeypatch.setattr(unit_of_work, "RETRY_SECONDS", 0.0)
    catalog.namespace("ns")
    start = catalog.head()
    seen = interleave(catalog.services.ledger, _rival_sets(catalog, "theirs"), times=None)

    with pytest.raises(CommitFailed, match="^Concurrent modification, please retry$"):
        catalog.services.namespaces.update_properties(catalog.warehouse_id, ["ns"], {"mine": "1"}, [],
                                                      Provenance("me", "update"))

    assert seen.appends == unit_of_work.MIN_ATTEMPTS
    assert [n.event.actor for n in catalog.events_after(start)] == ["rival"] * unit_of_work.MIN_ATTEMPTS


@pytest.mark.parametrize("error", [ValueError("not a conflict"), NoSuchNamespace("Namespace does not exist: x"),
                                   CommitFailed("Requirement failed: current schema changed")])
def test_errors_that_are_not_conflicts_are_raised_at_once(catalog, error):
    calls = []

    def command() -> None:
        calls.append(1)
        raise error

    with pytest.raises(type(error)) as raised:
        catalog.services.ledger.retrying(command)
    assert raised.value is error and calls == [1]


def test_a_refusal_inside_the_append_is_not_retried(catalog, interleave):
    """A condition that fails in the append transaction is the command's answer, not a lost race: one attempt."""
    catalog.namespace("ns")
    catalog.table("ns", "t")
    start = catalog.head()
    seen = interleave(catalog.services.ledger, lambda: None, times=0)

    with pytest.raises(NamespaceNotEmpty, match="^Namespace is not empty: ns$"):
        catalog.services.namespaces.drop(catalog.warehouse_id, ["ns"], Provenance("me", "drop"))

    assert seen.appends == 1
    assert catalog.head() == start
    assert catalog.namespace_listed("ns")


def test_a_conflict_is_retried_until_the_command_gets_through(catalog):
    """ConcurrentChange is what a lost race raises, from the log or from a condition (tree_unchanged): the command
    runs again, and its answer is the one of the attempt that got through."""
    calls = []

    def command() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConcurrentChange("The namespace tree changed while it was being dropped")
        return "done"

    assert catalog.services.ledger.retrying(command) == "done"
    assert len(calls) == 3
