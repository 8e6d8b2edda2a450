"""The demo's long phases (generating events, waiting for every result) as a progress
bar on a terminal's stderr, with the demo's own lines printed above it.

Quiet when stderr is not a terminal. When stdout and stderr share the terminal, a line
printed while a bar is up would land on the bar's line, so ``say`` takes the bar off
first and draws it again after.
"""

from __future__ import annotations

from typing import TextIO

from headrace.base.progress import ProgressBar, terminal_bar


class Phases:
    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._bar: ProgressBar | None = None

    def begin(self, label: str, total: int, unit: str) -> None:
        self.end()
        self._bar = terminal_bar(total, label=f"{label} ", stream=self._stream, unit=unit)

    def reach(self, done: int) -> None:
        """The phase has come to ``done`` of its total."""
        if self._bar is not None and done > self._bar.done:
            self._bar.advance(done - self._bar.done)

    def end(self) -> None:
        if self._bar is not None:
            self._bar.finish()
            self._bar = None

    def say(self, line: str) -> None:
        if self._bar is not None:
            self._bar.clear()
        print(line, flush=True)
        if self._bar is not None:
            self._bar.advance(0)  # drawn again at once: clearing reset its timer
