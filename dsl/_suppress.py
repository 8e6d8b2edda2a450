"""Suppressed: holding back a table's updates, as Kafka Streams' ``suppress``.

``Suppressed.until_window_closes()`` asks for one result per window: its final value,
emitted once stream time passes the window's close time (see ``_windows``). Sliding
windows follow Kafka Streams' suppression buffer: a window goes out once stream time
reaches ``end + grace``, where the aggregate still takes records for it (its end is
inclusive), and each update it takes then goes out too (see ``_sliding_aggregate``).
``idle_close`` adds the wall-clock rule of ``_final``: when the input has been quiet
that long, stream time is taken to move on with the wall clock, so the last windows of
a quiet stream still close. It is carried out by the windowed aggregation behind the
table, which then emits final results only (``_final``); stateless operators between
the aggregation and ``suppress`` see the final values, and rows they filter out are not
emitted.

``Suppressed.until_time_limit(time_to_wait, buffer_config)`` works on any table: a key's
updates are held in a buffer and its latest one goes out once the operator's stream time
(the newest record timestamp it has seen) is ``time_to_wait`` past the timestamp of the
key's first buffered update; deletes go out too. ``BufferConfig`` bounds the buffer by
records and bytes; when it is over a bound it emits its oldest keys early, or, with
``shut_down_when_full()``, fails the task (``_time_limit_buffer``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta

from ._errors import TopologyBuildError
from ._windows import to_ms


@dataclass(frozen=True)
class BufferConfig:
    """How much ``until_time_limit`` may hold, and what it does when that is exceeded
    (Kafka Streams' ``Suppressed.BufferConfig``). Unbounded unless a bound is given."""

    max_records_limit: int | None = None
    max_bytes_limit: int | None = None
    shuts_down_when_full: bool = False

    @classmethod
    def unbounded(cls) -> BufferConfig:
        return cls()

    @classmethod
    def max_records(cls, records: int) -> BufferConfig:
        return cls().with_max_records(records)

    @classmethod
    def max_bytes(cls, size: int) -> BufferConfig:
        return cls().with_max_bytes(size)

    def with_max_records(self, records: int) -> BufferConfig:
        if records < 0:
            raise TopologyBuildError(f"buffer max records must be >= 0, got {records}")
        return dataclasses.replace(self, max_records_limit=records)

    def with_max_bytes(self, size: int) -> BufferConfig:
        if size < 0:
            raise TopologyBuildError(f"buffer max bytes must be >= 0, got {size}")
        return dataclasses.replace(self, max_bytes_limit=size)

    def with_no_bound(self) -> BufferConfig:
        return dataclasses.replace(self, max_records_limit=None, max_bytes_limit=None)

    def emit_early_when_full(self) -> BufferConfig:
        return dataclasses.replace(self, shuts_down_when_full=False)

    def shut_down_when_full(self) -> BufferConfig:
        return dataclasses.replace(self, shuts_down_when_full=True)


@dataclass(frozen=True)
class Suppressed:
    """What ``KTable.suppress`` holds back: ``until_window_closes`` or
    ``until_time_limit`` (see the module docstring)."""

    idle_close_ms: int | None = None
    time_to_wait_ms: int | None = None
    """Set for ``until_time_limit``: how long a key's updates are held."""
    buffer: BufferConfig = BufferConfig()

    @classmethod
    def until_window_closes(cls, *, idle_close: int | timedelta | None = None) -> Suppressed:
        """One final result per window; ``idle_close`` closes windows on wall-clock time
        once the input has been idle that long."""
        return cls(None if idle_close is None else max(1, to_ms(idle_close, "idle close")))

    @classmethod
    def until_time_limit(
        cls, time_to_wait_for_more_events: int | timedelta, buffer_config: BufferConfig
    ) -> Suppressed:
        """Each key's latest update, once stream time is ``time_to_wait_for_more_events``
        past its first held update; ``buffer_config`` bounds what is held."""
        wait = to_ms(time_to_wait_for_more_events, "time to wait for more events")
        return cls(time_to_wait_ms=wait, buffer=buffer_config)


def until_window_closes(*, idle_close: int | timedelta | None = None) -> Suppressed:
    return Suppressed.until_window_closes(idle_close=idle_close)


def until_time_limit(
    time_to_wait_for_more_events: int | timedelta, buffer_config: BufferConfig
) -> Suppressed:
    return Suppressed.until_time_limit(time_to_wait_for_more_events, buffer_config)
