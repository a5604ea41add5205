"""Authorization decisions remembered for a moment: an Authorizer in front of another that keeps each check's
answer (allow or deny) for ``ttl`` seconds, in a bounded least-recently-used table keyed by the check (user,
relation, object and the contextual tuples it was asked with: a token naming other roles is another question).

Why: an engine asks the same few questions hundreds of times a second (loadTable of the same table, the signer for
each of its files); an OpenFGA round trip per request would cost more than the request itself. The price is that
a revoke made by another process may be honoured by this one up to ``ttl`` seconds late. A tuple written or
deleted through this process (the grant projection runs inside the grant's request) forgets every remembered
answer at once, so a grant or revoke is effective on the process that made it when its call returns.

Listing objects and reading tuples are not cached: they serve the permission endpoints, not the hot path."""

import contextlib
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from lakeledger.authz.authorizer import Authorizer, Check
from lakeledger.authz.objects import RelationTuple


class RememberedDecisions:
    def __init__(self, backend: Authorizer, ttl: float, max_entries: int = 100_000, clock=time.monotonic):
        self.backend = backend
        self.ttl = ttl
        self.max_entries = max_entries
        self._clock = clock
        # check -> (valid until, allowed); rebound (never mutated from another thread) on forget
        self._entries: OrderedDict[Check, tuple[float, bool]] = OrderedDict()

    def forget(self) -> None:
        """Drops every remembered answer (after a tuple write, or in tests)."""
        self._entries = OrderedDict()

    def _remembered(self, entries, key, now: float) -> bool | None:
        found = entries.get(key)
        if found is None:
            return None
        if found[0] <= now:
            entries.pop(key, None)
            return None
        with contextlib.suppress(KeyError):  # dropped meanwhile
            entries.move_to_end(key)
        return found[1]

    def _remember(self, entries, key, allowed: bool, now: float) -> None:
        entries[key] = (now + self.ttl, allowed)
        while len(entries) > self.max_entries:
            entries.popitem(last=False)

    async def check(self, user: str, relation: str, object: str) -> bool:
        [allowed] = await self.check_many([Check(user, relation, object)])
        return allowed

    async def check_many(self, checks: Sequence[Check]) -> list[bool]:
        if self.ttl <= 0:
            return await self.backend.check_many(checks)
        entries, now = self._entries, self._clock()
        answers: list[bool | None] = [self._remembered(entries, c, now) for c in checks]
        unknown = [i for i, a in enumerate(answers) if a is None]
        if unknown:
            # one round trip for everything not remembered; a check asked twice in one batch is asked once
            distinct = list(dict.fromkeys(checks[i] for i in unknown))
            fresh = dict(zip(distinct, await self.backend.check_many(distinct), strict=True))
            for i in unknown:
                answers[i] = fresh[checks[i]]
            # remembered with the time the question was put: an answer is never trusted past ttl of its asking
            for c, allowed in fresh.items():
                self._remember(entries, c, allowed, now)
        return answers  # type: ignore[return-value]

    async def list_objects(self, user: str, relation: str, type_name: str):
        return await self.backend.list_objects(user, relation, type_name)

    async def read(self, object: str, relation: str | None = None) -> list[RelationTuple]:
        return await self.backend.read(object, relation)

    def write(self, writes: Iterable[RelationTuple] = (), deletes: Iterable[RelationTuple] = ()) -> None:
        try:
            self.backend.write(writes, deletes)
        finally:
            self.forget()

    def close(self) -> None:
        self.backend.close()

    async def aclose(self) -> None:
        await self.backend.aclose()

    def __getattr__(self, name):
        # what a backend offers beyond the protocol (OpenFga's store and model ids) stays reachable
        return getattr(self.backend, name)
