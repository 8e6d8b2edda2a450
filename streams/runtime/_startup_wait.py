"""Start-up's calls to the cluster, retried while the cluster is not ready, within a bound.

A cluster with a broker down (a restart, an outage) answers an instance's start-up with
errors that go away by themselves: no connection, a node not ready, a leader not elected
yet, a coordinator still loading. Kafka's clients retry such calls until their
``default.api.timeout.ms``; start-up does the same with its admin calls, within one
bound for the whole start-up (``startup_timeout_ms``, counted from its beginning):

1. run the call, cut off when the bound is reached;
2. a retriable error (``ClientError.retriable``, which mirrors the client's own flag)
   is tried again after a backoff that doubles from 0.1 s up to 2 s; one log line says
   what start-up waits for when the waiting begins, one more every 10 s it lasts, and
   one when the cluster answers, not one per attempt;
3. any other error fails at once, as it came;
4. past the bound, start-up fails with one line naming what it waited for and the
   last error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ._errors import ClientError

log = logging.getLogger("headrace.streams.runtime.app")

T = TypeVar("T")

FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 2.0
# While a wait lasts, a line this often says start-up still waits.
REMIND_EVERY_S = 10.0


class StartupWait:
    """The bound of one start-up: every call made through :meth:`call` shares it."""

    def __init__(self, timeout_ms: int, clock: Callable[[], float] = time.monotonic) -> None:
        self._timeout_ms = timeout_ms
        self._clock = clock
        self._deadline = clock() + timeout_ms / 1000

    def _left(self) -> float:
        return self._deadline - self._clock()

    def _give_up(self, what: str, error: BaseException | None) -> ClientError:
        last = f": {error}" if error is not None else ""
        return ClientError(
            f"start-up gave up waiting for the cluster after {self._timeout_ms / 1000:g} s "
            f"(startup_timeout_ms={self._timeout_ms}) while {what}{last}"
        )

    async def call(self, what: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()``, tried again on retriable errors until the bound; ``what`` says
        what it does ("describing topics"), for the log and the final error."""
        backoff = FIRST_BACKOFF_S
        waiting_since: float | None = None
        reminded = 0.0
        last: ClientError | None = None
        while True:
            left = self._left()
            if left <= 0:
                raise self._give_up(what, last)
            try:
                result = await asyncio.wait_for(attempt(), left)
            except TimeoutError as error:
                if self._left() <= 0:
                    raise self._give_up(what, last) from last
                failure = ClientError(f"{what}: {error!r}", retriable=True)  # the call's own
            except ClientError as error:
                if not error.retriable:
                    raise
                failure = error
            else:
                if waiting_since is not None:
                    log.info(
                        "the cluster answered after %.1f s; start-up goes on (%s)",
                        self._clock() - waiting_since,
                        what,
                    )
                return result
            last = failure
            now = self._clock()
            if waiting_since is None:
                waiting_since = reminded = now
                log.warning(
                    "start-up waits for the cluster: %s (retrying for up to %.0f s more, "
                    "startup_timeout_ms)",
                    failure,
                    max(0.0, self._left()),
                )
            elif now - reminded >= REMIND_EVERY_S:
                reminded = now
                log.warning(
                    "start-up still waits for the cluster after %.0f s: %s",
                    now - waiting_since,
                    failure,
                )
            await asyncio.sleep(max(0.0, min(backoff, self._left())))
            backoff = min(backoff * 2, MAX_BACKOFF_S)
