"""A coordinator's timer: one task on the event loop that sleeps until the next deadline
(or until woken, when a deadline may have moved earlier) and then fires, until stopped.

The group and share-group services both keep their expiries (sessions, rebalance
timeouts, record locks) as deadlines in their coordinators, which do no I/O; this is
the one place that turns those deadlines into wake-ups.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable


class DeadlineTimer:
    """Calls ``fire`` once ``next_deadline()`` (a time of ``now_ms``; ``None``: none
    pending) has passed, or once :meth:`wake` was called, over and over between
    :meth:`start` and :meth:`stop`. An error ``fire`` raises is logged to ``log`` as
    ``"<name> failed"`` and the timer goes on: one bad expiry must not stop the others.
    """

    def __init__(
        self,
        name: str,
        next_deadline: Callable[[], int | None],
        now_ms: Callable[[], int],
        fire: Callable[[], None],
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

    async def stop(self) -> None:
        """Cancel the timer's task and wait for it to end; a ``fire`` in progress (it is
        synchronous) has finished by then."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def wake(self) -> None:
        """Look at the next deadline again now (and fire)."""
        self._woken.set()

    def wake_if_sooner(self) -> None:
        """Wake only when the next deadline is earlier than the one the timer sleeps to."""
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
                self._fire()
            except Exception:
                self._log.exception("%s failed", self._name)
