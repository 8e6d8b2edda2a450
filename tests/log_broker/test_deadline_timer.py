"""DeadlineTimer: awaited passes, fixed intervals, and waking for a sooner deadline."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time

import pytest

from headrace.log_broker._deadline_timer import DeadlineTimer

log = logging.getLogger("test.deadline_timer")


def _now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


async def test_an_awaited_pass_ends_before_the_next_begins() -> None:
    running: list[int] = []
    passes: list[int] = []

    async def fire() -> None:
        running.append(1)
        assert len(running) == 1, "passes overlapped"
        await asyncio.sleep(0.05)
        running.pop()
        passes.append(1)

    # Always due: the timer fires again as soon as a pass ends, never during one.
    timer = DeadlineTimer("busy", lambda: 0, _now_ms, fire, log)
    timer.start()
    await asyncio.sleep(0.3)
    await timer.stop()
    assert 2 <= len(passes) <= 7


async def test_every_waits_the_interval_after_each_pass_ends() -> None:
    ends: list[int] = []
    third = asyncio.Event()

    async def run() -> None:
        await asyncio.sleep(0.1)
        ends.append(_now_ms())
        if len(ends) == 3:
            third.set()

    started = _now_ms()
    timer = DeadlineTimer.every("interval", 100, run, _now_ms, log)
    timer.start()
    await asyncio.wait_for(third.wait(), 10)
    await timer.stop()
    # First pass: 100 ms wait + 100 ms work; then 100 + 100 between ends.
    assert ends[0] - started >= 200
    assert all(later - earlier >= 200 for earlier, later in itertools.pairwise(ends))


async def test_a_failing_pass_is_logged_and_the_next_one_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []
    third = asyncio.Event()

    async def run() -> None:
        calls.append(1)
        if len(calls) == 3:
            third.set()
        raise OSError("disk gone")

    timer = DeadlineTimer.every("failing", 20, run, _now_ms, log)
    timer.start()
    await asyncio.wait_for(third.wait(), 10)
    await timer.stop()
    assert caplog.messages.count("failing failed") >= 2


async def test_wake_if_sooner_with_a_new_deadline_fires_on_it() -> None:
    deadlines: list[int] = []
    fired = asyncio.Event()

    def fire() -> None:
        now = _now_ms()
        if any(d <= now for d in deadlines):
            fired.set()
        deadlines[:] = [d for d in deadlines if d > now]

    timer = DeadlineTimer("sooner", lambda: min(deadlines, default=None), _now_ms, fire, log)
    deadlines.append(_now_ms() + 60_000)
    timer.start()
    await asyncio.sleep(0.05)  # asleep until a minute from now
    sooner = _now_ms() + 100
    deadlines.append(sooner)
    timer.wake_if_sooner(sooner)
    await asyncio.wait_for(fired.wait(), 10)
    assert _now_ms() - sooner < 1_000
    assert len(deadlines) == 1  # the minute-long one is still pending
    await timer.stop()
