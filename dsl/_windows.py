"""Window specifications: tumbling and hopping, sliding, and session windows.

Every specification is immutable; ``advance_by`` and ``grace`` return new ones. Times
are milliseconds (an ``int``) or a ``timedelta``.

When a window closes, which records are late:

* Time windows ``[start, end)``: a window is closed once stream time reaches
  ``end + grace``. A record updates each of its windows that is still open and is late
  (dropped, counted, reported) when all of them are closed.
* Sliding windows ``[start, end]`` (both ends inclusive): closed once stream time passes
  ``end + grace``. A record at ``t`` is late when ``t + grace`` is behind stream time.
* Session windows ``[start, end]``: a session can still grow until stream time passes
  ``end + gap + grace``. A record at ``t`` is late when ``t + grace`` is behind stream
  time, which also guarantees that it never merges into a closed session.

Stream time here is the largest timestamp the operator has seen, record by record, so a
batch gives the same results as the same records one at a time.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta

from headrace.base.millis import duration_millis

from ._errors import TopologyBuildError

DAY_MS = 86_400_000
# Window stores keep at least a day unless told otherwise (Kafka Streams' old default).
# A batch is judged record by record while the store expires by the task's stream time,
# which is already at the batch's newest record; keeping more than size + grace means a
# window a batch still updates has not been dropped from under it.
DEFAULT_MIN_RETENTION_MS = DAY_MS


def to_ms(value: int | timedelta, what: str) -> int:
    ms = duration_millis(value) if isinstance(value, timedelta) else int(value)
    if ms < 0:
        raise TopologyBuildError(f"{what} must not be negative, got {value!r}")
    return ms


@dataclass(frozen=True)
class TimeWindows:
    """Fixed-size windows ``[start, start + size)`` starting every ``advance`` ms.

    Tumbling when ``advance == size`` (the default), hopping when smaller.

    >>> w = TimeWindows.of_size(60_000).advance_by(15_000).grace(5_000)
    >>> w.windows_for(70_000)
    [15000, 30000, 45000, 60000]
    """

    size_ms: int
    advance_ms: int
    grace_ms: int = 0

    @classmethod
    def of_size(cls, size: int | timedelta) -> TimeWindows:
        ms = to_ms(size, "window size")
        if ms == 0:
            raise TopologyBuildError("window size must be positive")
        return cls(ms, ms)

    @classmethod
    def of_size_and_grace(cls, size: int | timedelta, grace: int | timedelta) -> TimeWindows:
        return cls.of_size(size).grace(grace)

    def advance_by(self, advance: int | timedelta) -> TimeWindows:
        ms = to_ms(advance, "window advance")
        if not 0 < ms <= self.size_ms:
            raise TopologyBuildError(
                f"advance must be in (0, size], got {ms} for size {self.size_ms}"
            )
        return dataclasses.replace(self, advance_ms=ms)

    def grace(self, grace: int | timedelta) -> TimeWindows:
        return dataclasses.replace(self, grace_ms=to_ms(grace, "grace"))

    @property
    def tumbling(self) -> bool:
        return self.advance_ms == self.size_ms

    def windows_for(self, timestamp: int) -> list[int]:
        """Starts of the windows that contain ``timestamp``, oldest first."""
        advance = self.advance_ms
        first = max(0, timestamp - self.size_ms + advance) // advance * advance
        return list(range(first, timestamp - timestamp % advance + 1, advance))

    def close_time(self, start: int, end: int) -> int:
        """Stream time at which window ``[start, end)`` is closed."""
        return end + self.grace_ms

    def default_retention(self) -> int:
        return max(self.size_ms + self.grace_ms, DEFAULT_MIN_RETENTION_MS)

    @property
    def store_window_size(self) -> int:
        return self.size_ms


@dataclass(frozen=True)
class SlidingWindows:
    """Windows of length ``time_difference`` defined by the records themselves.

    For every record at ``t`` there is the window ``[t - d, t]`` ending at it (``[0, d]``
    while ``t < d``) and, when a later record falls within ``d`` after it, the window
    ``[t + 1, t + 1 + d]`` starting just after it. Each window's aggregate covers every
    record whose timestamp lies in it, so the set of windows names each distinct group of
    records no more than ``d`` apart.
    """

    time_difference_ms: int
    grace_ms: int = 0

    @classmethod
    def with_time_difference(cls, difference: int | timedelta) -> SlidingWindows:
        ms = to_ms(difference, "time difference")
        if ms == 0:
            raise TopologyBuildError("time difference must be positive")
        return cls(ms)

    @classmethod
    def with_time_difference_and_grace(
        cls, difference: int | timedelta, grace: int | timedelta
    ) -> SlidingWindows:
        return cls.with_time_difference(difference).grace(grace)

    def grace(self, grace: int | timedelta) -> SlidingWindows:
        return dataclasses.replace(self, grace_ms=to_ms(grace, "grace"))

    def close_time(self, start: int, end: int) -> int:
        return end + self.grace_ms + 1

    def default_retention(self) -> int:
        return max(2 * (self.time_difference_ms + self.grace_ms + 1), DEFAULT_MIN_RETENTION_MS)

    @property
    def store_window_size(self) -> int:
        return self.time_difference_ms


@dataclass(frozen=True)
class SessionWindows:
    """Sessions of activity: records of a key closer than ``gap`` ms share a session."""

    gap_ms: int
    grace_ms: int = 0

    @classmethod
    def with_inactivity_gap(cls, gap: int | timedelta) -> SessionWindows:
        ms = to_ms(gap, "inactivity gap")
        if ms == 0:
            raise TopologyBuildError("inactivity gap must be positive")
        return cls(ms)

    @classmethod
    def with_inactivity_gap_and_grace(
        cls, gap: int | timedelta, grace: int | timedelta
    ) -> SessionWindows:
        return cls.with_inactivity_gap(gap).grace(grace)

    def grace(self, grace: int | timedelta) -> SessionWindows:
        return dataclasses.replace(self, grace_ms=to_ms(grace, "grace"))

    def close_time(self, start: int, end: int) -> int:
        return end + self.gap_ms + self.grace_ms + 1

    def default_retention(self) -> int:
        return max(self.gap_ms + self.grace_ms + 1, DEFAULT_MIN_RETENTION_MS)


AnyWindows = TimeWindows | SlidingWindows | SessionWindows
