"""A read model that cannot advance is an alarm, not an outage (docs/read-models.md): what the workers do when a
runner's ``advance`` fails, for each read model on its own."""

import logging

from lakeledger.domain.errors import ReadModelStuck
from lakeledger.operations.metrics import PROJECTION_FAILURES, PROJECTION_STUCK, PROJECTION_STUCK_POSITION

logger = logging.getLogger("lakeledger.workers")

# pauses between attempts of a read model that cannot advance: the first retry soon (a lock timeout, a restart),
# then less and less often, so a poison event costs a query now and then, not a loop
RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 15.0


class Alarm:
    """A read model that cannot advance is an alarm, not an outage: each failure counts, the gauge says it is stuck
    (and at which position), and one log line per episode names the read model, the event (its position and type)
    and the error; the same failure again is retried quietly, with a growing pause. Once it advances, one line says
    so and the gauge goes back to 0."""

    def __init__(self, name: str):
        self.name = name
        self.episode: tuple | None = None  # what the last failure was about: its event, or the error's kind
        self.pause = RETRY_FIRST_SECONDS
        PROJECTION_STUCK.labels(name).set(0)
        PROJECTION_STUCK_POSITION.labels(name).set(0)
        PROJECTION_FAILURES.labels(name)

    def failed(self, error: Exception) -> float:
        """Records a failure; returns how long to wait before the next attempt."""
        PROJECTION_FAILURES.labels(self.name).inc()
        PROJECTION_STUCK.labels(self.name).set(1)
        if isinstance(error, ReadModelStuck):
            PROJECTION_STUCK_POSITION.labels(self.name).set(error.position)
            episode: tuple = (error.position, error.event_type, error.error)
        else:
            episode = (None, type(error).__name__)
        if episode != self.episode:
            if isinstance(error, ReadModelStuck):
                logger.error("Projection %s cannot advance: the event at position %s (%s) fails: %s; the other read "
                          "models and the catalog API go on, this one is retried every %g s at most and catches up "
                          "once the cause is removed", self.name, error.position, error.event_type, error.error,
                          RETRY_MAX_SECONDS)
            else:
                logger.error("Projection %s cannot advance (no single event fails alone: the database?); retried every"
                          " %g s at most", self.name, RETRY_MAX_SECONDS, exc_info=error)
            self.episode, self.pause = episode, RETRY_FIRST_SECONDS
        else:
            logger.debug("Projection %s still cannot advance", self.name)
        pause, self.pause = self.pause, min(self.pause * 2, RETRY_MAX_SECONDS)
        return pause

    def advanced(self) -> None:
        if self.episode is not None:
            logger.warning("Projection %s advances again (it was stuck at %s)", self.name,
                        f"position {self.episode[0]}" if self.episode[0] is not None else self.episode[1])
            self.episode, self.pause = None, RETRY_FIRST_SECONDS
            PROJECTION_STUCK.labels(self.name).set(0)
            PROJECTION_STUCK_POSITION.labels(self.name).set(0)
