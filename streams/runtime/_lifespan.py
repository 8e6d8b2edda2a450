"""What an App opens when it starts and closes when it stops: ``App.lifespan``.

An async operator that calls a web service wants one HTTP client session for the whole
App, not one per record: opened before the first record, closed after the last call.
A lifespan is an async generator function (or a function returning an async context
manager) that takes the App: what comes before its ``yield`` runs at start, what comes
after runs at shutdown::

    @app.lifespan
    async def http_session(app):
        async with aiohttp.ClientSession() as session:
            prices.session = session
            yield

Step by step:

1. **Start**: the lifespans are entered in the order they were registered, before the
   HTTP server and the Kafka clients start, so a record never meets a resource that is
   not open yet. If one fails, those entered before it are exited and the start fails.
2. **Shutdown**: they are exited in reverse order, after the tasks are closed (which
   cancels the async calls still in flight) and the clients are stopped, so no call uses
   a resource that is already closed. A lifespan that fails while exiting is logged; the
   others are still exited, each seeing that error at its ``yield`` as nested ``async
   with`` blocks would (so close in a ``finally`` or an ``async with``).
"""

from __future__ import annotations

import contextlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("headrace.streams.runtime.app")

Lifespan = Callable[[Any], Any]
"""A function of the App returning an async generator or an async context manager."""


class Lifespans:
    """The lifespans of one App, and those entered while it runs."""

    def __init__(self, registered: list[Lifespan] | None = None) -> None:
        self.registered: list[Lifespan] = list(registered or ())
        self._entered: contextlib.AsyncExitStack | None = None

    def add(self, fn: Lifespan) -> Lifespan:
        if not callable(fn):
            raise TypeError(f"a lifespan is a function of the App, not {fn!r}")
        self.registered.append(fn)
        return fn

    async def enter(self, app: Any) -> None:
        """Enter each lifespan in order; on a failure, exit those entered and raise."""
        stack = contextlib.AsyncExitStack()
        try:
            for fn in self.registered:
                await stack.enter_async_context(_as_context(fn, fn(app)))
        except BaseException:
            await stack.aclose()
            raise
        self._entered = stack

    async def exit(self) -> None:
        """Exit what ``enter`` entered, last first; idempotent."""
        stack, self._entered = self._entered, None
        if stack is None:
            return
        try:
            await stack.aclose()
        except Exception as error:
            log.error("a lifespan failed while closing: %s", error, exc_info=error)


def _as_context(fn: Lifespan, made: Any) -> contextlib.AbstractAsyncContextManager[Any]:
    if inspect.isasyncgen(made):
        return contextlib.asynccontextmanager(lambda: made)()
    if hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        return made  # type: ignore[no-any-return]
    raise TypeError(
        f"lifespan {getattr(fn, '__qualname__', fn)!r} must be an async generator function"
        f" or return an async context manager, not {type(made).__name__}"
    )
