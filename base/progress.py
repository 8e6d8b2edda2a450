"""A one-line progress bar on a terminal stream, redrawn at most a few times a second.

Progress is for people watching a terminal: :func:`terminal_bar` gives a bar only when
the stream is one, so output piped to a file or another program carries no carriage
returns. A bar with no known total counts instead of filling.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(
        self,
        total: int | None,
        *,
        label: str = "",
        stream: TextIO | None = None,
        width: int = 30,
        interval: float = 0.2,
        unit: str = "rec",
    ) -> None:
        self.total = None if total is None else max(total, 0)
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.interval = interval
        self.unit = unit
        self._started = time.monotonic()
        self._drawn = 0.0
        self._shown = False  # whether the bar's line is on the terminal now

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._drawn >= self.interval:
            self._drawn = now
            self._draw(end="")

    def finish(self) -> None:
        self._draw(end="\n")
        self._shown = False

    def clear(self) -> None:
        """Take the bar's line off the terminal, so other output can be printed there;
        the next ``advance`` draws it again."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
            self._drawn = 0.0

    def _draw(self, end: str) -> None:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = f" {self.done / elapsed:,.0f} {self.unit}/s"
        if self.total is None:
            text = f"{self.label}{self.done:,} {self.unit}{rate}"
        else:
            fraction = min(1.0, self.done / self.total) if self.total else 1.0
            filled = int(fraction * self.width)
            bar = "#" * filled + "-" * (self.width - filled)
            text = f"{self.label}[{bar}] {self.done:,}/{self.total:,} {fraction:4.0%}{rate}"
        self.stream.write(f"\r{text}{end}")
        self.stream.flush()
        self._shown = not end


def terminal_bar(
    total: int | None, *, label: str = "", stream: TextIO | None = None, unit: str = "rec"
) -> ProgressBar | None:
    """A bar on ``stream`` (stderr by default) when it is a terminal, else None: quiet
    when not a TTY."""
    stream = stream if stream is not None else sys.stderr
    if not stream.isatty():
        return None
    return ProgressBar(total, label=label, stream=stream, unit=unit)
