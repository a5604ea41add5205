"""uvicorn, without its ten wake-ups a second.

uvicorn's main loop sleeps 0.1 s between checks of its exit flag, and refreshes the Date header every tenth
check: an idle server wakes ten times a second for nothing. Here the loop sleeps a second (the Date header's own
resolution) and a stop signal ends the sleep at once, so shutdown is as prompt as before."""

import asyncio
import contextlib
import socket
import sys
from types import FrameType

import uvicorn
from uvicorn.main import STARTUP_FAILURE

TICK_SECONDS = 1.0


class QuietServer(uvicorn.Server):
    _exit: asyncio.Event | None = None
    _loop: asyncio.AbstractEventLoop | None = None

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


def run(app, sock: socket.socket | None = None, **config) -> None:
    """``uvicorn.run(app, **config)`` for one process; on ``sock`` when given (a socket several processes share),
    else on the configured host and port."""
    server = QuietServer(uvicorn.Config(app, **config))
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock] if sock is not None else None)
    if not server.started:
        sys.exit(STARTUP_FAILURE)
