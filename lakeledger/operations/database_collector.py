"""Metrics that are facts of the database, read from Postgres when Prometheus scrapes: the same answer from
whichever process is asked, and true across processes and machines.

* events appended, per event type: counted from the log itself, incrementally (each scrape counts only the events
  appended since the last one this process saw; appends hold the events table's lock to commit, so positions
  commit in order and none can appear below one already counted);
* how far each consumer of the log (the read models, the purger, the CloudEvents publishers) is behind its head, in
  events and in seconds (the age of the oldest event it has not handled);
* the expiry timers (scheduled, overdue, and how late the oldest overdue one is) and the failed purges waiting for
  their next attempt;
* the tasks (lakeledger/projections/tasks.py) per queue: queued, running, failed (waiting after a failed attempt), and
  how long the oldest due one has waited: one query over the open tasks' index."""

import threading

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from lakeledger.domain.tasks import EXPIRATION, PURGE
from lakeledger.eventstore.append_time import EVENTS
from lakeledger.eventstore.identity import event_type
from lakeledger.projections.tasks_queries import QUEUES

_NEW_EVENTS = (f"SELECT topic, count(*), max(notification_id) FROM {EVENTS} WHERE notification_id > %s"
               " GROUP BY topic")
# each named consumer's (name, position, the log's head, age in seconds of its oldest event not handled yet: null
# when there is none); readiness (lakeledger/operations/health.py) reads the same for the read models
CONSUMER_LAGS = (f"SELECT p.name, p.position, (SELECT max(notification_id) FROM {EVENTS}),"
                 " extract(epoch FROM now() - (SELECT e.appended_at FROM {EVENTS} e"
                 "  WHERE e.notification_id > p.position ORDER BY e.notification_id LIMIT 1))"
                 " FROM ll_projection_positions p WHERE p.name = ANY(%s) ORDER BY p.name").replace("{EVENTS}", EVENTS)
_TIMERS = ("SELECT count(*), count(*) FILTER (WHERE due_at <= now()),"
           " coalesce(extract(epoch FROM now() - min(due_at) FILTER (WHERE due_at <= now())), 0)"
           " FROM ll_expiry_schedule")
_PURGE_RETRIES = ("SELECT count(*), count(*) FILTER (WHERE next_attempt_at <= now()) FROM ll_purge_retries")


# consumers of the log that are not read models; a row of a consumer this installation does not run (OpenFGA's
# tuples under allowall) stays behind for ever and is not reported
WORKERS = ("purger", "cloudevents", "kafka")


class DatabaseCollector:
    def __init__(self, pool, read_models: list[str]):
        self.pool = pool
        self.consumers = [*read_models, *WORKERS]
        self._lock = threading.Lock()
        self._counted_upto = 0
        self._appended: dict[str, int] = {}

    def collect(self):
        with self.pool.connection() as conn:
            appended, head = self._count_new_events(conn)
            consumers = conn.execute(CONSUMER_LAGS, (self.consumers,)).fetchall()
            timers = conn.execute(_TIMERS).fetchone()
            retries = conn.execute(_PURGE_RETRIES).fetchone()
            queues = {row[0]: row[1:] for row in conn.execute(QUEUES).fetchall()}
        events = CounterMetricFamily("lakeledger_events_appended", "Events in the log, by event type", labels=["type"])
        for typ, count in sorted(appended.items()):
            events.add_metric([typ], count)
        yield events
        head = max([head, *(last or 0 for _, _, last, _ in consumers)])
        yield GaugeMetricFamily("lakeledger_log_head_position", "The log's last position", value=head)
        lag_events = GaugeMetricFamily("lakeledger_consumer_lag_events",
                                       "Events appended that a consumer of the log has not handled yet (read models, "
                                       "purger, cloudevents and kafka: the publishers)", labels=["consumer"])
        lag_seconds = GaugeMetricFamily("lakeledger_consumer_lag_seconds",
                                        "Age of the oldest event a consumer of the log has not handled yet (0: none)",
                                        labels=["consumer"])
        for name, position, last, age in consumers:
            lag_events.add_metric([name], max((last or 0) - position, 0))
            lag_seconds.add_metric([name], float(age or 0))
        yield lag_events
        yield lag_seconds
        scheduled, overdue, late = timers
        expiry = GaugeMetricFamily("lakeledger_expiry_timers", "Soft-deleted objects waiting for their expiry",
                                   labels=["state"])
        expiry.add_metric(["scheduled"], scheduled)
        expiry.add_metric(["overdue"], overdue)
        yield expiry
        yield GaugeMetricFamily("lakeledger_expiry_timer_lag_seconds",
                                "How late the oldest overdue expiry is (0: none overdue)", value=float(late))
        waiting, due = retries
        purges = GaugeMetricFamily("lakeledger_purge_retries", "Failed purges waiting to be tried again",
                                   labels=["state"])
        purges.add_metric(["waiting"], waiting)
        purges.add_metric(["due"], due)
        yield purges
        yield from _task_metrics(queues)

    def _count_new_events(self, conn) -> tuple[dict[str, int], int]:
        with self._lock:  # two scrapes at once must not count the same events twice
            for topic, count, last in conn.execute(_NEW_EVENTS, (self._counted_upto,)).fetchall():
                typ = event_type(topic)
                self._appended[typ] = self._appended.get(typ, 0) + count
                self._counted_upto = max(self._counted_upto, last)
            return dict(self._appended), self._counted_upto


def _task_metrics(queues: dict[str, tuple]):
    tasks = GaugeMetricFamily("lakeledger_tasks", "Tasks not ended, per queue and state: queued (waiting, failed ones "
                              "included), running, failed (waiting for a retry after a failed attempt)",
                              labels=["queue", "state"])
    oldest = GaugeMetricFamily("lakeledger_task_oldest_due_seconds",
                               "How long the oldest due task of a queue has waited (0: none due)", labels=["queue"])
    for queue in sorted({EXPIRATION, PURGE, *queues}):  # every queue reported, at 0 when it holds nothing
        queued, running, failed, age = queues.get(queue, (0, 0, 0, 0.0))
        for state, value in (("queued", queued), ("running", running), ("failed", failed)):
            tasks.add_metric([queue, state], value)
        oldest.add_metric([queue], float(age))
    yield tasks
    yield oldest
