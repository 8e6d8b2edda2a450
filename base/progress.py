"""A one-line progress bar on a terminal stream, redrawn at most a few times a second."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(
        self,
        total: int,
        *,
        label: str = "",
        stream: TextIO | None = None,
        width: int = 30,
        interval: float = 0.2,
    ) -> None:
        self.total = max(total, 0)
        self.done = 0
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.interval = interval
        self._started = time.monotonic()
        self._drawn = 0.0

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._drawn >= self.interval:
            self._drawn = now
            self._draw(end="")

    def finish(self) -> None:
        self._draw(end="\n")

    def _draw(self, end: str) -> None:
        fraction = min(1.0, self.done / self.total) if self.total else 1.0
        filled = int(fraction * self.width)
        elapsed = max(time.monotonic() - self._started, 1e-9)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(
            f"\r{self.label}[{bar}] {self.done:,}/{self.total:,}"
            f" {fraction:4.0%} {self.done / elapsed:,.0f} rec/s{end}"
        )
        self.stream.flush()
