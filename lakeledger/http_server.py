"""uvicorn, without its ten wake-ups a second.

uvicorn's main loop sleeps 0.1 s between checks of its exit flag, and refreshes the Date header every tenth
check: an idle server wakes ten times a second for nothing. Here the loop sleeps a second (the Date header's own
resolution) and a stop signal ends the sleep at once, so shutdown is as prompt as before. It also serves connections
accepted elsewhere (lakeledger/api_processes.py: the parent of several API processes hands them out)."""

import asyncio
import contextlib
import socket
import sys
from types import FrameType

import orjson
import uvicorn
from uvicorn.main import STARTUP_FAILURE
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from lakeledger.api_processes import Connections

TICK_SECONDS = 1.0


class QuietServer(uvicorn.Server):
    _exit: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None
    connections: Connections | None = None

    def __init__(self, config: uvicorn.Config):
        super().__init__(config)
        self._adopting: set[asyncio.Task] = set()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started and self.connections is not None:
            self.connections.serve_on(asyncio.get_running_loop(), self._adopt)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        if self.connections is not None:
            self.connections.stop_serving()
        await super().shutdown(sockets)

    def _adopt(self, connection: socket.socket) -> None:
        """A connection accepted elsewhere, served as one this server accepted (same protocol, same shutdown)."""
        # the loop keeps only a weak reference to a task: one nobody holds may be collected before it has run
        task = asyncio.get_running_loop().create_task(self._serve_connection(connection))
        self._adopting.add(task)
        task.add_done_callback(self._adopting.discard)

    async def _serve_connection(self, connection: socket.socket) -> None:
        config = self.config
        try:
            connection.setblocking(False)
            await asyncio.get_running_loop().connect_accepted_socket(
                # uvicorn types the class as a bare asyncio.Protocol; its HTTP protocols take these (its own
                # server.py makes the same call, with the same ignore)
                lambda: config.http_protocol_class(config=config, server_state=self.server_state,  # type: ignore[call-arg]
                                                   app_state=self.lifespan.state), connection)
        except OSError:  # the client was gone before it was served
            connection.close()

    async def main_loop(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._exit = asyncio.Event()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000  # on_tick does its once-a-second work at multiples of 10
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exit.wait(), TICK_SECONDS)
            should_exit = await self.on_tick(counter)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        super().handle_exit(sig, frame)
        if self._loop is not None and self._exit is not None:
            self._loop.call_soon_threadsafe(self._exit.set)


class ErrorModelHttpTools(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol on httptools (llhttp, in C: a third more loadTable and 304 answers a second than on
    h11's pure-Python parser, measured side by side on 2 cores), whose answer to a message that is not HTTP (a
    Content-Length that is no length or shorter than the body, so the rest reads as a broken next request) is an
    Iceberg ErrorModel, as every other refusal, rather than plain text. The connection is closed after it, as before:
    its framing cannot be trusted."""

    def send_400_response(self, msg: str) -> None:
        body = orjson.dumps({"error": {"message": msg, "type": "BadRequestException", "code": 400}})
        head = [STATUS_LINE[400]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head.append(b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body))
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def run(app, connections: Connections | None = None, **config) -> None:
    """``uvicorn.run(app, **config)`` for one process: on the configured host and port, or on the connections handed
    to it when given (then it listens on no socket of its own)."""
    server = QuietServer(uvicorn.Config(app, **{"http": ErrorModelHttpTools, **config}))
    server.connections = connections
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[] if connections is not None else None)
    if not server.started:
        sys.exit(STARTUP_FAILURE)
