"""Suppressed: holding back a windowed table's updates until its windows close.

``Suppressed.until_window_closes()`` asks for one result per window: its final value,
emitted once stream time passes the window's close time (see ``_windows``). Sliding
windows follow Kafka Streams' suppression buffer: a window goes out once stream time
reaches ``end + grace``, where the aggregate still takes records for it (its end is
inclusive), and each update it takes then goes out too (see ``_sliding_aggregate``).
``idle_close`` adds the wall-clock rule of ``_final``: when the input has been quiet
that long, stream time is taken to move on with the wall clock, so the last windows of
a quiet stream still close.

It is carried out by the windowed aggregation behind the table, which then emits
final results only (``_final``); stateless operators between the aggregation and
``suppress`` see the final values, and rows they filter out are not emitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from ._windows import to_ms


@dataclass(frozen=True)
class Suppressed:
    idle_close_ms: int | None = None

    @classmethod
    def until_window_closes(cls, *, idle_close: int | timedelta | None = None) -> Suppressed:
        """One final result per window; ``idle_close`` closes windows on wall-clock time
        once the input has been idle that long."""
        return cls(None if idle_close is None else max(1, to_ms(idle_close, "idle close")))


def until_window_closes(*, idle_close: int | timedelta | None = None) -> Suppressed:
    return Suppressed.until_window_closes(idle_close=idle_close)
