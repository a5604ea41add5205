"""Commands on the same thing, one at a time within this process.

Optimistic concurrency keeps the log right whatever the interleaving (a command that loses a race runs again on the
winner's state), but each lost race costs a whole command: with sixteen clients on one hot table, fifteen of every
sixteen attempts did their work (a metadata file written and fsynced, then deleted) for nothing. Queueing the
commands on one table here leaves only the races between processes."""

import threading
from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager


class KeyedLocks:
    """One lock per key, made on first use and dropped when nobody holds or awaits it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[Hashable, tuple[threading.Lock, list[int]]] = {}

    @contextmanager
    def holding(self, keys: Iterable[Hashable]) -> Iterator[None]:
        """Holds the locks of ``keys``, taken in sorted order so that two holders of overlapping sets cannot
        deadlock."""
        taken: list[Hashable] = []
        try:
            for key in sorted(set(keys), key=repr):
                with self._guard:
                    lock, users = self._locks.setdefault(key, (threading.Lock(), [0]))
                    users[0] += 1
                taken.append(key)
                lock.acquire()
            yield
        finally:
            for key in reversed(taken):
                with self._guard:
                    lock, users = self._locks[key]
                    lock.release()
                    users[0] -= 1
                    if users[0] == 0:
                        del self._locks[key]

    def __len__(self) -> int:
        with self._guard:
            return len(self._locks)
