"""A serving process freezes what it built at start and collects its first generation ten times less often
(lakeledger/operations/garbage_collector.py: full collections held every request in flight for up to 190 ms)."""

import gc

from lakeledger.operations.garbage_collector import FIRST_GENERATION_THRESHOLD, settle_after_start


def test_settling_freezes_the_start_and_raises_the_first_threshold():
    before = gc.get_threshold()
    try:
        settle_after_start()
        assert gc.get_freeze_count() > 1000
        assert gc.get_threshold() == (FIRST_GENERATION_THRESHOLD, *before[1:])
        assert before[0] < FIRST_GENERATION_THRESHOLD
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
