"""Progress of a long pass over the log (``lakeledger rebuild``): a bar redrawn in place on
a terminal, plain lines now and then otherwise (a log file or a CI job gets a record, not carriage returns).

The total may grow while the pass runs (a rebuild catches up with appends made meanwhile), so it is given with
each update. Events per second are over the whole pass so far, and the time left is what remains at that rate."""

import sys
import time
from typing import TextIO

BAR_WIDTH = 30


class Progress:
    def __init__(self, what: str, out: TextIO | None = None, every_seconds: float | None = None,
                 tty: bool | None = None):
        self.what = what
        self.out = out if out is not None else sys.stderr
        self.tty = self.out.isatty() if tty is None else tty
        # a terminal is redrawn often; a file gets a line every few seconds
        self.every = every_seconds if every_seconds is not None else (0.2 if self.tty else 5.0)
        self.started = time.monotonic()
        self.shown_at = float("-inf")
        self.done = 0
        self.total = 0

    def update(self, done: int, total: int) -> None:
        self.done, self.total = done, max(total, done)
        now = time.monotonic()
        if now - self.shown_at >= self.every:
            self.shown_at = now
            self._show(final=False)

    def finish(self, done: int | None = None) -> None:
        if done is not None:
            self.done = done
        self.total = max(self.total, self.done)
        self._show(final=True)

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        share = f" ({100 * self.done / self.total:.0f} %)" if self.total else ""
        left = (self.total - self.done) / rate if rate > 0 else float("inf")
        eta = _duration(left) if left != float("inf") else "?"
        return (f"{self.what}: {self.done:,}/{self.total:,} events{share}, {rate:,.0f} events/s,"
                f" {'elapsed ' + _duration(elapsed) if self.done >= self.total else 'ETA ' + eta}")

    def _show(self, final: bool) -> None:
        if self.tty:
            filled = BAR_WIDTH * self.done // self.total if self.total else BAR_WIDTH
            bar = "#" * filled + "-" * (BAR_WIDTH - filled)
            self.out.write(f"\r[{bar}] {self.line()}\x1b[K" + ("\n" if final else ""))
        else:
            self.out.write(self.line() + "\n")
        self.out.flush()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
