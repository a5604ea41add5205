"""A NATS subject: one message per event, on ``<subject>.<event type>``, with the event id as
``Nats-Msg-Id`` so a JetStream stream listening there de-duplicates a replay run twice."""

import asyncio
from typing import TYPE_CHECKING, Any

from lakeledger.sinks.envelope import to_json

if TYPE_CHECKING:
    from nats.aio.client import Client


class NatsSubjectSink:
    def __init__(self, address: str, subject: str, connect_options: dict[str, Any] | None = None):
        self.address, self.subject = address, subject
        self.connect_options = connect_options or {}  # authentication (lakeledger/sinks/nats_auth.py)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._nc: Client | None = None

    def __enter__(self) -> "NatsSubjectSink":
        import nats

        self._loop = asyncio.new_event_loop()
        self._nc = self._loop.run_until_complete(nats.connect(self.address, connect_timeout=5, max_reconnect_attempts=5,
                                                                      **self.connect_options))
        return self

    def write(self, batch: list[dict[str, Any]]) -> None:
        loop, nc = self._opened()

        async def publish() -> None:
            for e in batch:
                await nc.publish(f"{self.subject}.{e['type']}", to_json(e),
                                       headers={"Nats-Msg-Id": e["id"]})
            await nc.flush()

        loop.run_until_complete(publish())

    def __exit__(self, *exc: object) -> None:
        loop, nc = self._opened()
        try:
            loop.run_until_complete(nc.drain())
        finally:
            loop.close()

    def _opened(self) -> "tuple[asyncio.AbstractEventLoop, Client]":
        assert self._loop is not None and self._nc is not None, "used inside the with block"
        return self._loop, self._nc
