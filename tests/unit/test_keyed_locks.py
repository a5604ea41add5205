"""Commits on one key take turns; on different keys they do not wait for each other; locks do not pile up, even
when a waiter is cancelled."""

import asyncio

from lakeledger.api.keyed_locks import KeyedLocks


def test_holders_of_one_key_take_turns():
    async def scenario():
        turns, inside, most = KeyedLocks(), [0], [0]

        async def work():
            for _ in range(20):
                async with turns.holding([("w", ("ns",), "t")]):
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                    await asyncio.sleep(0)
                    inside[0] -= 1

        await asyncio.gather(*(work() for _ in range(8)))
        return most[0], len(turns)

    assert asyncio.run(scenario()) == (1, 0)


def test_different_keys_do_not_wait_for_each_other():
    async def scenario():
        turns = KeyedLocks()
        async with turns.holding(["a"]), turns.holding(["b"]):  # would never enter if "b" waited for "a"
            return True

    assert asyncio.run(asyncio.wait_for(scenario(), 5))


def test_overlapping_sets_in_any_order_do_not_deadlock_and_a_cancelled_waiter_leaves_nothing():
    async def scenario():
        turns = KeyedLocks()

        async def work(keys):
            for _ in range(50):
                async with turns.holding(keys):
                    await asyncio.sleep(0)

        await asyncio.wait_for(asyncio.gather(work(["x", "y"]), work(["y", "x"]), work(["y", "z", "x"])), 10)
        async with turns.holding(["x"]):
            waiter = asyncio.create_task(work(["x"]))
            await asyncio.sleep(0.01)
            waiter.cancel()
            await asyncio.gather(waiter, return_exceptions=True)
        return len(turns)

    assert asyncio.run(scenario()) == 0
