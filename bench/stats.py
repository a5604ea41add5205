import math
import statistics
import time
from collections.abc import Callable


def percentile(sorted_values: list[float], p: float) -> float:
    """Nearest-rank percentile of already sorted values (0.0 for none)."""
    if not sorted_values:
        return 0.0
    rank = min(len(sorted_values), max(1, math.ceil(p / 100 * len(sorted_values))))
    return sorted_values[rank - 1]


def median_ms(work: Callable[[], object], rounds: int) -> float:
    """The median wall time of ``rounds`` runs of ``work``, in milliseconds."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)
