"""What every command shares: appending to the log (with the catalog read model and the command's
conditions in the same transaction), name claims, a retry when another writer appended to the
same aggregate first, the change-approval hook and the clock."""

import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeGuard, TypeVar, cast
from uuid import UUID

from eventsourcing.domain import Aggregate
from psycopg import Connection, Cursor

from lakeledger.domain.base import CatalogAggregate
from lakeledger.domain.errors import CommitFailed, RequestAlreadyApplied
from lakeledger.domain.idempotency import IdempotencyKey
from lakeledger.domain.name_claim import NameClaim
from lakeledger.domain.names import EXACT, claim_id, name_key
from lakeledger.domain.provenance import Provenance
from lakeledger.eventstore.log import Blind, ConcurrentChange, EventLog, InTransaction, StoredNotification
from lakeledger.projections.catalog_queries import CatalogQueries
from lakeledger.projections.driver import ProjectionDriver
from lakeledger.services import idempotency
from lakeledger.services.approval import ApproveAll, ChangeApproval
from lakeledger.services.conditions import Condition

T = TypeVar("T")

# A command that lost a race is re-run against the state that won; its own checks (a name now
# taken, a requirement no longer met) then give the definitive answer. Every lost race means another
# writer won, so the log always moves on; jitter spreads the losers out. But the writers of another API
# process can win race after race (there a table's commits take turns, each starting as the last one lands,
# ahead of a loser reading again), so a loser keeps going for RETRY_SECONDS, not for a number of attempts:
# with 16 clients on one table over two processes, 32 attempts left a few commits in ten thousand refused.
MIN_ATTEMPTS = 32
RETRY_SECONDS = 5.0


class Ledger:
    def __init__(self, log: EventLog, catalog_view: ProjectionDriver, queries: CatalogQueries,
                 approval: ChangeApproval | None = None):
        self.log = log
        self.catalog_view = catalog_view
        self.queries = queries
        self.approval: ChangeApproval = approval or ApproveAll()
        # called after every append with the appended events' classes and the log position of the last one:
        # what must see an append before its request answers but cannot run inside it (OpenFGA's tuples)
        self.after_append: list[Callable[[set[type], int], None]] = []
        # the name claims one attempt of a command has read, by id (None: no claim yet): a command checks a name
        # is free and then takes it, and both read the same claim. Reading it once is safe: a writer that takes
        # the name in between makes this attempt's append conflict, and the next attempt reads afresh.
        self._attempt = threading.local()

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)

    def append(self, *aggregates: Aggregate | None, conditions: Sequence[Condition] = (),
               views: Sequence[ProjectionDriver] = ()) -> int | None:
        """Appends atomically, if every condition still holds at that moment; the catalog read model
        shows the change in the same transaction, and so do ``views`` (read models of other events, such as
        users and roles). A request's Idempotency-Key goes into the same append.

        The conditions run in the first of ``views`` (else in the catalog's), once it has absorbed every
        earlier append: they ask that read model, the catalog's being unchanged by such events."""
        def in_transaction(conn: Connection, appended: list[StoredNotification]) -> None:
            for view in views:
                view.apply_in_transaction(conn, appended, conditions if view is views[0] else ())
            self.catalog_view.apply_in_transaction(conn, appended, () if views else conditions)

        def one_trip(cur: Cursor, events: list[Any]) -> None:
            self.catalog_view.apply_in_one_trip(cur, events)

        kinds = {type(e) for a in aggregates if a is not None for e in a.pending_events}
        # nothing to ask the database before the events go in: the append can be one round trip
        position = self._save(aggregates, in_transaction, None if views or conditions else one_trip)
        if getattr(self._attempt, "claims", None):
            self._attempt.claims = {}  # what this attempt reads next is read after its own append
        if position is not None:
            for follower in self.after_append:
                follower(kinds, position)
        return position

    def _save(self, aggregates: Sequence[Aggregate | None], in_transaction: InTransaction,
              one_trip: Blind | None) -> int | None:
        keyed = idempotency.current.get()
        by = _provenance_of(aggregates)
        if keyed is None or keyed.recorded or by is None:
            return self.log.save(*aggregates, in_transaction=in_transaction, one_trip=one_trip)
        key = IdempotencyKey.use(keyed.key, keyed.method, keyed.path, keyed.request_hash, by)
        try:
            position = self.log.save(*aggregates, key, in_transaction=in_transaction, one_trip=one_trip)
        except ConcurrentChange:
            if self.log.get(IdempotencyKey, key.id) is not None:
                raise RequestAlreadyApplied(f"A request with Idempotency-Key {keyed.key} was already applied") \
                    from None
            raise
        keyed.recorded = True
        return position

    def retrying(self, command: Callable[[], T], on_conflict: type[Exception] = CommitFailed,
                 message: str = "Concurrent modification, please retry") -> T:
        deadline = time.monotonic() + RETRY_SECONDS
        attempt = 0
        # a command run inside another's attempt keeps claims of its own; the outer one reads afresh after it (the
        # inner command may have appended)
        outer = getattr(self._attempt, "claims", None)
        while True:
            self._attempt.claims = {}
            try:
                return command()
            except ConcurrentChange:
                attempt += 1
                if attempt >= MIN_ATTEMPTS and time.monotonic() > deadline:
                    raise on_conflict(message) from None
                time.sleep(random.uniform(0, 0.001 * min(attempt, 10)))
            finally:
                self._attempt.claims = None if outer is None else {}

    def _name_claim(self, scope: str, container_id: UUID, key: str) -> NameClaim | None:
        """The claim on ``key`` in the container, read once per attempt of a command (outside one: every time)."""
        found_id = claim_id(scope, container_id, key)
        read: dict[UUID, NameClaim | None] | None = getattr(self._attempt, "claims", None)
        if read is not None and found_id in read:
            return read[found_id]
        claim = self.log.get(NameClaim, found_id)
        if read is not None:
            read[found_id] = claim
        return claim

    def claim(self, scope: str, container_id: UUID, name: str, holder_id: UUID, what: str,
              by: Provenance, shown_as: str | None = None, matching: str = EXACT) -> NameClaim:
        """The claim on ``name`` in the container, taken for ``holder_id``. ``matching`` is the rule of the warehouse
        the name is in (lakeledger/domain/names.py): the claim is the key's, so names that differ only in case
        meet on one claim in a case-insensitive warehouse; the claim keeps the spelling it was first taken with."""
        key = name_key(name, matching)
        claim = self._name_claim(scope, container_id, key)
        if claim is None:
            return NameClaim.first(scope, container_id, name, holder_id, by, key)
        claim.claim(holder_id, what, by, shown_as)
        return claim

    def holder(self, scope: str, container_id: UUID, name: str, matching: str = EXACT) -> UUID | None:
        claim = self._name_claim(scope, container_id, name_key(name, matching))
        return claim.holder_id if claim is not None else None

    def release(self, scope: str, container_id: UUID, name: str, holder_id: UUID, by: Provenance,
                matching: str = EXACT) -> NameClaim | None:
        claim = self._name_claim(scope, container_id, name_key(name, matching))
        if claim is not None:
            claim.release(holder_id, by)
        return claim


def all_found(aggregates: list[T | None]) -> TypeGuard[list[T]]:
    """Whether every aggregate looked up was in the log."""
    return all(a is not None for a in aggregates)


def _provenance_of(aggregates: Sequence[Aggregate | None]) -> Provenance | None:
    """Who made the change and under which request, as its own first event says: the key is recorded with it."""
    for aggregate in aggregates:
        if aggregate is not None and aggregate.pending_events:
            # every aggregate of the catalog is a CatalogAggregate, whose events carry who and which request
            first = cast(CatalogAggregate.Event, aggregate.pending_events[0])
            return Provenance(first.actor, first.request_id)
    return None
