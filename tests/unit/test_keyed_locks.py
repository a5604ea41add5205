"""Commands on one key take turns; on different keys they do not wait for each other; locks do not pile up."""

import threading
import time

from lakeledger.services.keyed_locks import KeyedLocks


def test_holders_of_one_key_take_turns():
    locks = KeyedLocks()
    inside, most, lock = [0], [0], threading.Lock()

    def work() -> None:
        for _ in range(50):
            with locks.holding(["t"]):
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.0002)
                with lock:
                    inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert most[0] == 1
    assert len(locks) == 0  # each key's lock is dropped once nobody holds or awaits it


def test_different_keys_do_not_wait_for_each_other():
    locks = KeyedLocks()
    entered = threading.Event()
    with locks.holding(["a"]):
        def other() -> None:
            with locks.holding(["b"]):
                entered.set()

        t = threading.Thread(target=other)
        t.start()
        assert entered.wait(5)
        t.join()


def test_overlapping_sets_taken_in_any_order_do_not_deadlock():
    locks = KeyedLocks()
    done = []

    def work(keys) -> None:
        for _ in range(200):
            with locks.holding(keys):
                pass
        done.append(keys)

    threads = [threading.Thread(target=work, args=(keys,)) for keys in (["x", "y"], ["y", "x"], ["y", "z", "x"])]
    [t.start() for t in threads]
    [t.join(20) for t in threads]
    assert len(done) == 3
    assert len(locks) == 0
