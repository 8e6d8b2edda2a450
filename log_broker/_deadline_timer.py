"""A coordinator's timer: one task on the event loop that sleeps until the next deadline
(or until woken, when a deadline may have moved earlier) and then fires, until stopped.

The group and share-group services keep their expiries (sessions, rebalance timeouts,
record locks) as deadlines in their coordinators, which do no I/O, and so does the
transaction coordinator (transaction timeouts); this is the one place that turns those
deadlines into wake-ups. Work that is due at a fixed interval instead (the broker's
retention, compaction and recovery checkpoint; transactions' snapshots and expiry of
idle ids) runs on the same timer through :meth:`DeadlineTimer.every`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable


class DeadlineTimer:
    """Calls ``fire`` once ``next_deadline()`` (a time of ``now_ms``; ``None``: none
    pending) has passed, or once :meth:`wake` was called, over and over between
    :meth:`start` and :meth:`stop`. An error ``fire`` raises is logged to ``log`` as
    ``"<name> failed"`` and the timer goes on: one bad expiry must not stop the others.
    ``fire`` may return an awaitable (a coroutine function's call): the timer awaits it
    before it looks at the next deadline, so passes of one timer never overlap.
    """

    def __init__(
        self,
        name: str,
        next_deadline: Callable[[], int | None],
        now_ms: Callable[[], int],
        fire: Callable[[], Awaitable[None] | None],
        log: logging.Logger,
    ) -> None:
        self._name = name
        self._next_deadline = next_deadline
        self._now_ms = now_ms
        self._fire = fire
        self._log = log
        self._woken = asyncio.Event()
        self._sleeping_until: int | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the timer's task on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    @classmethod
    def every(
        cls,
        name: str,
        interval_ms: int,
        run: Callable[[], Awaitable[None]],
        now_ms: Callable[[], int],
        log: logging.Logger,
    ) -> DeadlineTimer:
        """A timer that awaits ``run`` ``interval_ms`` after :meth:`start`, then again
        ``interval_ms`` after each pass has ended (a slow pass delays the next one
        rather than piling up behind it)."""
        interval = _Interval(interval_ms, run, now_ms)
        return cls(name, interval.due, now_ms, interval.fire, log)

    async def stop(self) -> None:
        """Cancel the timer's task and wait for it to end; a synchronous ``fire`` in
        progress has finished by then, an awaited one is cancelled."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def wake(self) -> None:
        """Look at the next deadline again now (and fire)."""
        self._woken.set()

    def wake_if_sooner(self, deadline: int | None = None) -> None:
        """Wake only when the next deadline is earlier than the one the timer sleeps to:
        ``deadline``, one just added (saves asking ``next_deadline()``), or else the
        next one."""
        if deadline is None:
            deadline = self._next_deadline()
        if deadline is not None and (
            self._sleeping_until is None or deadline < self._sleeping_until
        ):
            self._woken.set()

    async def _run(self) -> None:
        while True:
            deadline = self._next_deadline()
            self._sleeping_until = deadline
            self._woken.clear()
            timeout = None if deadline is None else max(deadline - self._now_ms(), 0) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._woken.wait(), timeout)
            try:
                fired = self._fire()
                if fired is not None:
                    await fired
            except Exception:
                self._log.exception("%s failed", self._name)


class _Interval:
    """The deadline of :meth:`DeadlineTimer.every`: due ``interval_ms`` after the start,
    and after each pass has ended."""

    def __init__(
        self, interval_ms: int, run: Callable[[], Awaitable[None]], now_ms: Callable[[], int]
    ) -> None:
        self._interval_ms = interval_ms
        self._run = run
        self._now_ms = now_ms
        self._due: int | None = None

    def due(self) -> int:
        if self._due is None:  # first asked when the timer starts
            self._due = self._now_ms() + self._interval_ms
        return self._due

    async def fire(self) -> None:
        if self._now_ms() < self.due():
            return  # woken before the interval ran out: nothing is due yet
        try:
            await self._run()
        finally:
            self._due = self._now_ms() + self._interval_ms
