"""Commits to one table take turns in an API process, before they take a thread.

Optimistic concurrency keeps the log right whatever the interleaving (a commit that loses a race runs again on the
winner's state), but each lost race costs a whole commit: with sixteen clients on one hot table, fifteen of every
sixteen attempts did their work (a metadata file written and fsynced, then deleted) for nothing. Queued here, on
the event loop, they wait without holding one of the few threads (``LAKELEDGER__API_THREADS``) that other requests
need; only the races between processes are left."""

import asyncio
from collections.abc import AsyncIterator, Hashable, Iterable
from contextlib import asynccontextmanager

from fastapi import Request


class KeyedLocks:
    """One lock per key, made on first use and dropped when nobody holds or awaits it. Used from one event loop."""

    def __init__(self) -> None:
        self._locks: dict[Hashable, tuple[asyncio.Lock, list[int]]] = {}

    @asynccontextmanager
    async def holding(self, keys: Iterable[Hashable]) -> AsyncIterator[None]:
        """Holds the locks of ``keys``, taken in sorted order so that two holders of overlapping sets cannot
        deadlock."""
        taken: list[Hashable] = []
        try:
            for key in sorted(set(keys), key=repr):
                lock, users = self._locks.setdefault(key, (asyncio.Lock(), [0]))
                users[0] += 1
                try:
                    await lock.acquire()
                except BaseException:  # cancelled while waiting: it never held the lock
                    self._leave(key)
                    raise
                taken.append(key)
            yield
        finally:
            for key in reversed(taken):
                self._locks[key][0].release()
                self._leave(key)

    def _leave(self, key: Hashable) -> None:
        _, users = self._locks[key]
        users[0] -= 1
        if users[0] == 0:
            del self._locks[key]

    def __len__(self) -> int:
        return len(self._locks)


async def keyed_locks(request: Request) -> KeyedLocks:
    """The app's ``KeyedLocks`` (a dependency)."""
    return request.app.state.keyed_locks
