"""Identical reads that are waiting at the same moment share one query.

Under load most of a revalidation's cost is its one read-model lookup: the query's own round trip, and one more
suspension of the request for it. Clients that poll a hot table (engines' workers, dashboards) send the same lookup
many times at once; here the lookups of one key that arrive before its query is sent wait for that one query.

Read-your-writes still holds: a lookup joins only a query that has not been sent yet, so the query starts after the
request arrived, after every write its client had been answered. A lookup that comes once the query is on its way
starts the next one. Each waiter has its own future, so a waiter whose request is cancelled (its client went away)
cancels neither the query nor the others; once every waiter is gone the query is cancelled too, as a request's own
query would be (a stopping server cancels its requests, and a query nobody awaits would hold its connection, and the
stop, for as long as a stalled database does not answer)."""

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Query(Generic[V]):
    """One query and the lookups waiting for it. Each waiting lookup holds it, and so its task: the loop holds tasks
    only weakly, and a query is cancelled once no lookup waits for it."""

    __slots__ = ("task", "waiters")

    def __init__(self) -> None:
        self.waiters: list[asyncio.Future[V]] = []
        self.task: asyncio.Task[None] | None = None


class Coalesced(Generic[K, V]):
    def __init__(self, fetch: Callable[[K], Awaitable[V]]):
        self._fetch = fetch
        self._waiting: dict[K, _Query[V]] = {}

    async def get(self, key: K) -> V:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[V] = loop.create_future()
        query = self._waiting.get(key)
        if query is None:
            query = self._waiting[key] = _Query()
            # its first step runs after the callbacks already ready: the lookups that arrived with this one join it
            query.task = loop.create_task(self._answer(key, query))
        query.waiters.append(future)
        try:
            return await future
        except asyncio.CancelledError:
            if all(waiter.cancelled() for waiter in query.waiters):
                # nobody wants the answer any more (their clients left, or the server is stopping): the query
                # must not keep a connection waiting on a database that may not answer
                if self._waiting.get(key) is query:
                    del self._waiting[key]
                assert query.task is not None
                query.task.cancel()
            raise

    async def _answer(self, key: K, query: _Query[V]) -> None:
        if self._waiting.get(key) is query:
            del self._waiting[key]  # from here on, a lookup of this key starts another query
        try:
            value = await self._fetch(key)
        except asyncio.CancelledError:
            for waiter in query.waiters:
                waiter.cancel()
            raise
        except Exception as exc:
            for waiter in query.waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for waiter in query.waiters:
            if not waiter.done():
                waiter.set_result(value)
