"""The process's Prometheus metrics (prometheus-client), and what ``/metrics`` exposes.

Counters and histograms here are the process's own: requests, CloudEvents published, connection pools. With
several API processes on one port (lakeledger/api_processes.py) a scrape reaches any one of them, so ``serve``
gives them a shared directory first (lakeledger/operations/shared_metrics.py: the client library's multiprocess mode)
and every scrape sums all of them. What is a fact of the database rather than of a process (events appended, lags,
queues) is read from Postgres at scrape time (lakeledger/operations/database_collector.py): the same answer from any
process. """

import contextlib
import os

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from lakeledger.operations.shared_metrics import MULTIPROC_DIR

# request latency: a loadTable answers in well under a millisecond, a commit in tens; slow storage in seconds
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter("lakeledger_http_requests", "HTTP requests answered, by method, route template and status",
                   ["method", "route", "status"])
REQUEST_SECONDS = Histogram("lakeledger_http_request_duration_seconds",
                            "Time from a request's arrival to the end of its answer, by method and route template",
                            ["method", "route"], buckets=_LATENCY_BUCKETS)
CLOUDEVENTS_PUBLISHED = Counter("lakeledger_cloudevents_published", "CloudEvents acknowledged by the broker",
                                ["sink"])
CLOUDEVENTS_FAILED = Counter("lakeledger_cloudevents_failures",
                             "Publication sessions interrupted by an error (the batch is sent again, none is lost)",
                             ["sink"])
# a read model that cannot advance is an alarm, not an outage (docs/read-models.md): set by the workers' runners
PROJECTION_STUCK = Gauge("lakeledger_projection_stuck",
                         "1 while a read model's writer fails on the log and it cannot advance (the log line "
                         "'cannot advance' names the event), 0 once it advances again", ["projection"],
                         multiprocess_mode="livemax")
PROJECTION_STUCK_POSITION = Gauge("lakeledger_projection_stuck_position",
                                  "The log position of the event a stuck read model fails on (0: none known)",
                                  ["projection"], multiprocess_mode="livemax")
PROJECTION_FAILURES = Counter("lakeledger_projection_failures",
                              "Attempts to advance a read model that failed (retried with a growing pause)",
                              ["projection"])
POOL_CONNECTIONS = Gauge("lakeledger_pg_pool_connections", "Postgres connections a pool holds, by state",
                         ["pool", "state"], multiprocess_mode="livesum")
POOL_WAITING = Gauge("lakeledger_pg_pool_waiting", "Requests waiting for a connection of the pool", ["pool"],
                     multiprocess_mode="livesum")


def observe_pool(name: str, pool) -> None:
    """The pool's connections in use and idle, and the requests waiting for one (psycopg_pool's own counts)."""
    stats = pool.get_stats()
    size, idle = stats.get("pool_size", 0), stats.get("pool_available", 0)
    POOL_CONNECTIONS.labels(name, "in_use").set(size - idle)
    POOL_CONNECTIONS.labels(name, "idle").set(idle)
    POOL_WAITING.labels(name).set(stats.get("requests_waiting", 0))


def observe_pools(pools: dict) -> None:
    """``observe_pool`` for each named pool; a pool that cannot answer (closing at exit) is passed over."""
    for name, pool in pools.items():
        with contextlib.suppress(Exception):
            observe_pool(name, pool)


def process_exited(pid: int) -> None:
    """Drops a stopped API process's live gauges (its counters stay in the sums)."""
    if os.environ.get(MULTIPROC_DIR):
        mark_process_dead(pid)


def exposition(*collectors) -> tuple[bytes, str]:
    """The text a scrape gets: this process's metrics (all processes' in multiprocess mode) and ``collectors``."""
    registry = CollectorRegistry()
    if os.environ.get(MULTIPROC_DIR):
        MultiProcessCollector(registry)
    else:
        from prometheus_client import REGISTRY

        registry.register(_Everything(REGISTRY))
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _Everything:
    """The default registry (this module's metrics, the process and platform collectors) inside another."""

    def __init__(self, registry):
        self.registry = registry

    def collect(self):
        return self.registry.collect()


def serve_metrics(port: int, host: str, pools: dict, every_seconds: float = 5.0) -> None:
    """A process without the API (``lakeledger workers``): its metrics on a port of their own, its pools' gauges
    refreshed every few seconds by a thread."""
    import threading
    import time

    from prometheus_client import start_http_server

    def observe() -> None:
        while True:
            observe_pools(pools)
            time.sleep(every_seconds)

    start_http_server(port, addr=host)
    threading.Thread(target=observe, name="lakeledger-pool-metrics", daemon=True).start()
