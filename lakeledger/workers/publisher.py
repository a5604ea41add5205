"""Publishes every event of the log, in log order, as a CloudEvent 1.0 (structured JSON) to NATS JetStream.

Exactly once, whatever crashes: a batch is published while the ``cloudevents`` row of
``ll_projection_positions`` is locked, each message waits for its PubAck before the next is sent (so the
stream keeps log order), and the row moves past the batch only after every PubAck. A crash between a
PubAck and that commit means the batch is sent again from the recorded position; each message carries
``Nats-Msg-Id`` = the event's id, so JetStream drops the repeats (within the stream's duplicate window,
one hour by default). Any NATS or Postgres error tears the session down and it starts again after a
growing pause: nothing is skipped, and the process does not die.
"""

import asyncio
import contextlib
import logging
import threading
from typing import Any
from uuid import UUID

import nats
import psycopg
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from lakeledger.eventstore.log import EventLog, StoredNotification
from lakeledger.operations.metrics import CLOUDEVENTS_FAILED, CLOUDEVENTS_PUBLISHED
from lakeledger.sinks.cloudevent_messages import CONTENT_TYPE, WAREHOUSES_OF, CloudEventMessages

logger = logging.getLogger("lakeledger.publisher")

POSITION = "cloudevents"
BATCH = 256


class CloudEventsPublisher:
    name = POSITION

    def __init__(self, event_log: EventLog, conninfo: str, *, address: str, stream: str, subject: str,
                 server_id: UUID, duplicate_window_seconds: int = 3600, poll_seconds: float = 1.0,
                 publish_timeout: float = 5.0, connect_options: dict[str, Any] | None = None):
        self.log = event_log
        self.conninfo = conninfo
        self.address = address
        self.stream = stream
        self.subject = subject
        self.messages = CloudEventMessages(server_id)
        self.duplicate_window_seconds = duplicate_window_seconds
        self.poll_seconds = poll_seconds
        self.publish_timeout = publish_timeout
        self.connect_options = connect_options or {}  # authentication (lakeledger/sinks/nats_auth.py)

    def run(self, stop: threading.Event, wake: threading.Event) -> None:
        """The worker thread's body: returns once ``stop`` is set."""
        asyncio.run(self._run(stop, wake))

    async def _run(self, stop: threading.Event, wake: threading.Event) -> None:
        pause = 0.2
        while not stop.is_set():
            try:
                await self._session(stop, wake)
                return
            except Exception as e:  # NATS, Postgres, timeouts: all recoverable by starting over
                CLOUDEVENTS_FAILED.labels("nats").inc()
                logger.warning("CloudEvents publication interrupted (%s: %s); retrying in %.1fs",
                            type(e).__name__, e, pause)
            await asyncio.to_thread(stop.wait, pause)
            pause = min(pause * 2, 10.0)

    async def _session(self, stop: threading.Event, wake: threading.Event) -> None:
        nc = await nats.connect(self.address, connect_timeout=2, allow_reconnect=False, name="lakeledger-publisher",
                                **self.connect_options)
        try:
            js = nc.jetstream(timeout=self.publish_timeout)
            await self._ensure_stream(js)
            async with await psycopg.AsyncConnection.connect(self.conninfo) as conn:
                await conn.execute("INSERT INTO ll_projection_positions (name, position) VALUES (%s, 0)"
                                   " ON CONFLICT (name) DO NOTHING", (POSITION,))
                await conn.commit()
                logger.info("Publishing the log as CloudEvents to %s, stream %s", self.address, self.stream)
                while not stop.is_set():
                    if await self._publish_batch(conn, js) < BATCH:
                        await asyncio.to_thread(wake.wait, self.poll_seconds)
                        wake.clear()
        finally:
            with contextlib.suppress(Exception):
                await nc.close()

    async def _ensure_stream(self, js) -> None:
        try:
            await js.stream_info(self.stream)
        except NotFoundError:
            # Creating an existing stream with the same configuration succeeds, so racing publishers are fine.
            await js.add_stream(StreamConfig(
                name=self.stream, subjects=[f"{self.subject}.>"], storage=StorageType.FILE,
                duplicate_window=float(self.duplicate_window_seconds)))

    async def _publish_batch(self, conn: psycopg.AsyncConnection, js) -> int:
        async with conn.transaction():
            cur = await conn.execute("SELECT position FROM ll_projection_positions WHERE name = %s"
                                     " FOR UPDATE SKIP LOCKED", (POSITION,))
            row = await cur.fetchone()
            if row is None:
                return 0  # another process holds the row and is publishing
            batch = await asyncio.to_thread(self.log.read, row[0], BATCH)
            if not batch:
                return 0
            unknown = self.messages.unknown(batch)
            if unknown:
                self.messages.learn(await (await conn.execute(WAREHOUSES_OF, (unknown, unknown))).fetchall())
            for n in batch:
                event_id, subject, body = self.message(n)
                await js.publish(subject, body, stream=self.stream,
                                 headers={"Nats-Msg-Id": event_id, "Content-Type": CONTENT_TYPE})
            await conn.execute("UPDATE ll_projection_positions SET position = %s, updated_at = now() WHERE name = %s",
                               (batch[-1].position, POSITION))
        CLOUDEVENTS_PUBLISHED.labels("nats").inc(len(batch))
        return len(batch)

    def message(self, n: StoredNotification) -> tuple[str, str, bytes]:
        """(event id, NATS subject, structured CloudEvent JSON) for one stored event."""
        event_id, typ, body = self.messages.message(n)
        return event_id, f"{self.subject}.{typ}", body
