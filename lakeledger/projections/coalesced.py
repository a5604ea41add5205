"""Identical reads that are waiting at the same moment share one query.

Under load most of a revalidation's cost is its one read-model lookup: the query's own round trip, and one more
suspension of the request for it. Clients that poll a hot table (engines' workers, dashboards) send the same lookup
many times at once; here the lookups of one key that arrive before its query is sent wait for that one query.

Read-your-writes still holds: a lookup joins only a query that has not been sent yet, so the query starts after the
request arrived, after every write its client had been answered. A lookup that comes once the query is on its way
starts the next one. Each waiter has its own future, so a waiter whose request is cancelled (its client went away)
cancels neither the query nor the others."""

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Coalesced(Generic[K, V]):
    def __init__(self, fetch: Callable[[K], Awaitable[V]]):
        self._fetch = fetch
        self._waiting: dict[K, list[asyncio.Future[V]]] = {}
        self._running: set[asyncio.Task[None]] = set()  # the loop holds tasks weakly

    async def get(self, key: K) -> V:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[V] = loop.create_future()
        waiters = self._waiting.get(key)
        if waiters is None:
            self._waiting[key] = [future]
            # its first step runs after the callbacks already ready: the lookups that arrived with this one join it
            task = loop.create_task(self._answer(key))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
        else:
            waiters.append(future)
        return await future

    async def _answer(self, key: K) -> None:
        waiters = self._waiting.pop(key)  # from here on, a lookup of this key starts another query
        try:
            value = await self._fetch(key)
        except asyncio.CancelledError:  # the server is stopping
            for waiter in waiters:
                waiter.cancel()
            raise
        except Exception as exc:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(value)
