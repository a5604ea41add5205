"""Publishes every event of the log, in log order, as a CloudEvent 1.0 (structured JSON) to a Kafka topic, exactly
once whatever crashes (confluent-kafka, librdkafka's transactional producer).

* Each batch of the log is one Kafka transaction; every message carries its log position (header
  ``lakeledger-position``), keyed by the entity id (one entity's events stay in order in its partition).
* Where publication stands is read from Kafka itself, not from Postgres: at the start of a session the producer's
  ``init_transactions`` fences any earlier producer with the same transactional id and aborts its open transaction,
  then the last position of a committed message (read with ``read_committed``) is where this session goes on. A
  crash before a commit loses the transaction (aborted, never seen by ``read_committed`` consumers); a crash after
  it loses nothing, since the next session reads the position back from the topic. The ``kafka`` row of
  ``ll_projection_positions`` follows, for lag metrics only.
* One publisher at a time: a session holds a Postgres advisory lock for the transactional id, since two producers of
  one id would fence each other in turn. A second ``lakeledger workers`` waits as a hot standby.

Any error tears the session down and it starts again after a growing pause; the process does not die."""

import hashlib
import logging
import threading
import uuid
from typing import Any

import psycopg
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from lakeledger.eventstore.log import EventLog, StoredNotification
from lakeledger.operations.metrics import CLOUDEVENTS_FAILED, CLOUDEVENTS_PUBLISHED
from lakeledger.sinks.cloudevent_messages import CONTENT_TYPE, WAREHOUSES_OF, CloudEventMessages

logger = logging.getLogger("lakeledger.kafka")

POSITION = "kafka"
POSITION_HEADER = "lakeledger-position"
BATCH = 256
TIMEOUT_SECONDS = 30.0


class KafkaPublisher:
    name = POSITION

    def __init__(self, event_log: EventLog, conninfo: str, *, topic: str, config: dict[str, Any],
                 transactional_id: str, server_id: uuid.UUID, poll_seconds: float = 1.0, batch: int = BATCH):
        self.log = event_log
        self.conninfo = conninfo
        self.topic = topic
        self.config = dict(config)  # librdkafka's properties: bootstrap.servers, security.protocol, sasl.*, ...
        self.transactional_id = transactional_id
        self.messages = CloudEventMessages(server_id)
        self.poll_seconds = poll_seconds
        self.batch = batch
        self._lock_key = int.from_bytes(hashlib.sha256(f"lakeledger-kafka:{transactional_id}".encode()).digest()[:8],
                                        "big", signed=True)

    def run(self, stop: threading.Event, wake: threading.Event) -> None:
        """The worker thread's body: returns once ``stop`` is set."""
        pause = 0.2
        while not stop.is_set():
            try:
                self._session(stop, wake)
                return
            except Exception as e:  # Kafka, Postgres, timeouts: all recoverable by starting over
                CLOUDEVENTS_FAILED.labels("kafka").inc()
                logger.warning("Kafka publication interrupted (%s: %s); retrying in %.1fs", type(e).__name__, e, pause)
            stop.wait(pause)
            pause = min(pause * 2, 10.0)

    def _session(self, stop: threading.Event, wake: threading.Event) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            while not _locked(conn.execute("SELECT pg_try_advisory_lock(%s)", (self._lock_key,)).fetchone()):
                if stop.wait(self.poll_seconds):  # another process publishes: stand by
                    return
            producer = Producer({**self.config, "transactional.id": self.transactional_id,
                                 "enable.idempotence": True, "acks": "all"})
            producer.init_transactions(TIMEOUT_SECONDS)
            position = self.committed_position()
            conn.execute("INSERT INTO ll_projection_positions (name, position) VALUES (%s, %s)"
                         " ON CONFLICT (name) DO UPDATE SET position = excluded.position, updated_at = now()",
                         (POSITION, position))
            logger.info("Publishing the log as CloudEvents to Kafka topic %s from position %s", self.topic, position)
            while not stop.is_set():
                batch = self.log.read(position, self.batch)
                if not batch:
                    wake.wait(self.poll_seconds)
                    wake.clear()
                    continue
                self._publish(producer, conn, batch)
                position = batch[-1].position
                conn.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now() WHERE name = %s",
                             (position, POSITION))
            producer.flush(TIMEOUT_SECONDS)

    def _publish(self, producer: Producer, conn: psycopg.Connection, batch: list[StoredNotification]) -> None:
        unknown = self.messages.unknown(batch)
        if unknown:
            self.messages.learn(conn.execute(WAREHOUSES_OF, (unknown, unknown)).fetchall())
        producer.begin_transaction()
        for n in batch:
            event_id, _, body = self.messages.message(n)
            producer.produce(self.topic, key=str(n.originator_id).encode(), value=body, headers=[
                ("content-type", CONTENT_TYPE.encode()), ("ce_id", event_id.encode()),
                (POSITION_HEADER, str(n.position).encode())])
        producer.commit_transaction(TIMEOUT_SECONDS)
        CLOUDEVENTS_PUBLISHED.labels("kafka").inc(len(batch))

    def committed_position(self) -> int:
        """The log position of the last message of a committed transaction in the topic (0: none yet)."""
        consumer = Consumer({**self.config, "group.id": f"lakeledger-position-{uuid.uuid4()}",
                             "isolation.level": "read_committed", "enable.auto.commit": False,
                             "enable.partition.eof": True})
        try:
            metadata = consumer.list_topics(self.topic, timeout=TIMEOUT_SECONDS).topics.get(self.topic)
            if metadata is None or metadata.error is not None:
                return 0  # not created yet: nothing was published
            return max([_last_position(consumer, self.topic, p, self.batch) for p in metadata.partitions] or [0])
        finally:
            consumer.close()


def _last_position(consumer: Consumer, topic: str, partition: int, batch: int) -> int:
    """The highest position among the partition's committed messages, read from its end backwards in growing
    steps (aborted transactions and their markers take offsets too)."""
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=TIMEOUT_SECONDS,
                                               cached=False)
    back = 2 * batch + 16
    while True:
        start = max(low, high - back)
        consumer.assign([TopicPartition(topic, partition, start)])
        found = 0
        while True:
            message = consumer.poll(TIMEOUT_SECONDS)
            if message is None:
                raise TimeoutError(f"reading {topic}[{partition}] from offset {start} took too long")
            error = message.error()
            if error:
                if error.code() == KafkaError._PARTITION_EOF:
                    break
                raise RuntimeError(f"reading {topic}[{partition}]: {error}")
            headers = message.headers() or []
            assert isinstance(headers, list)  # a consumed message's headers are (key, value) pairs, not a dict
            for key, value in headers:
                if key == POSITION_HEADER:
                    assert value is not None  # written by _publish: a position
                    found = max(found, int(value))
        if found or start == low:
            return found
        back *= 4


def _locked(row: tuple[Any, ...] | None) -> bool:
    """pg_try_advisory_lock's answer (a function's one row)."""
    assert row is not None
    return bool(row[0])
