"""One clock protocol and one ManualClock, found under every name users import them by."""

from __future__ import annotations

import pytest

from headrace import base
from headrace.base import Clock, ManualClock, SystemClock


def test_manual_clock_moves_both_clocks_only_when_told() -> None:
    clock = ManualClock(wall_start_ms=1_000_000)
    assert (clock.monotonic_ms(), clock.wall_ms()) == (0, 1_000_000)
    clock.advance(1_500)
    assert (clock.monotonic_ms(), clock.wall_ms()) == (1_500, 1_001_500)
    with pytest.raises(ValueError, match="backwards"):
        clock.advance(-1)
    assert clock.wall_ms() == 1_001_500


def test_system_clock_gives_milliseconds_and_a_monotonic_clock_that_never_goes_back() -> None:
    import time

    clock: Clock = SystemClock()
    before = time.time_ns() // 1_000_000
    assert before <= clock.wall_ms() <= time.time_ns() // 1_000_000
    first = clock.monotonic_ms()
    assert clock.monotonic_ms() >= first


def test_the_coordinators_clock_names_are_base_s() -> None:
    from headrace import transactions
    from headrace.log_broker import groups

    assert transactions.Clock is groups.Clock is base.Clock
    assert transactions.ManualClock is groups.ManualClock is base.ManualClock
    assert transactions.SystemClock is groups.SystemClock is base.SystemClock
