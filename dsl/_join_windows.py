"""JoinWindows: which records of two streams pair up, and until when.

A left record at ``tl`` and a right record at ``tr`` pair when
``tl - before <= tr <= tl + after``. ``of_time_difference(d)`` sets both to ``d``;
``before`` and ``after`` change one bound each (either may be negative, as long as
``before + after`` is not).

Seen from each record, its *window* is the span of the other side's timestamps it can
pair with: ``[tl - before, tl + after]`` for a left record, ``[tr - after, tr + before]``
for a right one. The window *closes* once the join's stream time (the largest
timestamp either side has seen) passes its end plus ``grace``. After that the record
takes part in no new pair, and a left or outer join may emit it unmatched.

>>> w = JoinWindows.of_time_difference(10_000).after(2_000).grace(500)
>>> (w.before_ms, w.after_ms, w.grace_ms)
(10000, 2000, 500)
>>> w.close_time(1_000, left=True), w.close_time(1_000, left=False)
(3500, 11500)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import timedelta

from headrace.base.millis import duration_millis

from ._errors import TopologyBuildError
from ._windows import DEFAULT_MIN_RETENTION_MS, to_ms


def _signed_ms(value: int | timedelta) -> int:
    return duration_millis(value) if isinstance(value, timedelta) else int(value)


@dataclass(frozen=True)
class JoinWindows:
    before_ms: int
    after_ms: int
    grace_ms: int = 0

    def __post_init__(self) -> None:
        if self.before_ms + self.after_ms < 0:
            raise TopologyBuildError(
                f"join window before + after must not be negative, got {self.before_ms} + "
                f"{self.after_ms}"
            )

    @classmethod
    def of_time_difference(cls, difference: int | timedelta) -> JoinWindows:
        """Records at most ``difference`` apart pair up; no grace unless ``grace`` is set."""
        ms = to_ms(difference, "time difference")
        return cls(ms, ms)

    @classmethod
    def of_time_difference_with_no_grace(cls, difference: int | timedelta) -> JoinWindows:
        return cls.of_time_difference(difference)

    @classmethod
    def of_time_difference_and_grace(
        cls, difference: int | timedelta, grace: int | timedelta
    ) -> JoinWindows:
        return cls.of_time_difference(difference).grace(grace)

    def before(self, difference: int | timedelta) -> JoinWindows:
        """How far a right record may lie before the left one (negative: must lie after)."""
        return dataclasses.replace(self, before_ms=_signed_ms(difference))

    def after(self, difference: int | timedelta) -> JoinWindows:
        """How far a right record may lie after the left one (negative: must lie before)."""
        return dataclasses.replace(self, after_ms=_signed_ms(difference))

    def grace(self, grace: int | timedelta) -> JoinWindows:
        """How long past a window's end records still pair with it."""
        return dataclasses.replace(self, grace_ms=to_ms(grace, "grace"))

    # -- used by the join ---------------------------------------------------------------

    def reach(self, left: bool) -> int:
        """How far after a record of that side its window ends."""
        return self.after_ms if left else self.before_ms

    def close_time(self, timestamp: int, left: bool) -> int:
        """Stream time beyond which the window of a record at ``timestamp`` is closed."""
        return timestamp + self.reach(left) + self.grace_ms

    @property
    def size_ms(self) -> int:
        return self.before_ms + self.after_ms

    def required_retention(self) -> int:
        """How long a side's store must keep a record: while its window is open."""
        return max(self.before_ms, self.after_ms) + self.grace_ms + 1

    def default_retention(self) -> int:
        # A batch is joined record by record while its store expires by the task's stream
        # time, already at the batch's newest record: keep a day, as windowed stores do.
        return max(self.required_retention(), DEFAULT_MIN_RETENTION_MS)
