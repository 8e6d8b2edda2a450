"""How a faust-style agent runs inside a task: as an async processor (``streams/_async.py``).

An agent is an async generator function over a stream: ``async for key, value in
stream: ... yield result``. Per task the processor keeps ``concurrency`` instances of
it, each an :class:`AgentStream` and the generator iterating it. A record's call hands
the record to an idle instance and runs the generator until it asks the stream for the
next record; what it yielded meanwhile are that record's results. So every result
belongs to the record it came from, and the async stage's rules carry over unchanged:
results keep their order, an offset is committed only once its results are out, and
under exactly-once they commit in the same transaction as the offset.

Tables (``_agent_tables.py``) are found through :data:`CURRENT_STORES`, a context
variable each call sets to its task's stores, so one ``Table`` object declared at module
level reads and writes the store of whichever task the code runs for.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from headrace.streams import AsyncOptions, AsyncProcessor, KeyValue, ProcessorContext, Rec
from headrace.streams import PunctuationType as _Punctuation

CURRENT_STORES: contextvars.ContextVar[Mapping[str, Any]] = contextvars.ContextVar(
    "headrace_agent_stores"
)

AgentFn = Callable[["AgentStream"], Any]
"""An async generator function of the stream, or an ``async def`` that yields nothing."""


class AgentStream:
    """What an agent iterates: ``(key, value)`` per record, one record at a time.

    ``async for key, value in stream`` and ``async for key, value in stream.items()``
    are the same; ``stream.values()`` gives values alone (faust's ``async for value in
    stream``).
    """

    def __init__(self) -> None:
        self._item: tuple[Any, Any] | None = None
        self._next: asyncio.Future[tuple[Any, Any]] | None = None
        self.asked: asyncio.Future[None] | None = None

    def __aiter__(self) -> AgentStream:
        return self

    async def __anext__(self) -> tuple[Any, Any]:
        item = self._item
        if item is not None:
            self._item = None
            return item
        # The record before is done: say so, then wait for the next one.
        loop = asyncio.get_running_loop()
        self._next = loop.create_future()
        if self.asked is not None and not self.asked.done():
            self.asked.set_result(None)
        return await self._next

    def offer(self, item: tuple[Any, Any]) -> asyncio.Future[None]:
        """Hand the agent its next record; the future is done when it asks for another."""
        self.asked = asyncio.get_running_loop().create_future()
        if self._next is not None and not self._next.done():
            self._next.set_result(item)
            self._next = None
        else:
            self._item = item
        return self.asked

    async def items(self) -> AsyncIterator[tuple[Any, Any]]:
        async for item in self:
            yield item

    async def values(self) -> AsyncIterator[Any]:
        async for _key, value in self:
            yield value


class _Instance:
    """One running copy of an agent: its stream, its generator, the step in progress."""

    def __init__(self, fn: AgentFn) -> None:
        self._fn = fn
        self._restart()

    def _restart(self) -> None:
        self.stream = AgentStream()
        made = self._fn(self.stream)
        # An agent with nothing to yield may be a plain coroutine, as in faust.
        self.generator = made if hasattr(made, "__anext__") else _yielding_nothing(made)
        self.step: asyncio.Future[Any] | None = None
        self.ended = False

    async def run(self, key: Any, value: Any) -> list[Any]:
        """Feed one record; return what the agent yielded before asking for the next."""
        if self.ended:
            return []
        asked = self.stream.offer((key, value))
        results: list[Any] = []
        while True:
            if self.step is None:
                self.step = asyncio.ensure_future(self.generator.__anext__())
            await asyncio.wait({self.step, asked}, return_when=asyncio.FIRST_COMPLETED)
            if not self.step.done():
                return results  # waiting for the next record: this one is done
            step, self.step = self.step, None
            try:
                results.append(step.result())
            except StopAsyncIteration:
                self.ended = True
                return results
            except Exception:
                # The generator is finished by its exception; as faust does, a fresh
                # copy takes the next record. This one goes to the error handler.
                self._restart()
                raise

    def close(self) -> None:
        if self.step is not None:
            self.step.cancel()


async def _yielding_nothing(coroutine: Any) -> AsyncIterator[Any]:
    await coroutine
    nothing: tuple[Any, ...] = ()
    for item in nothing:  # never runs: the yield makes this an async generator
        yield item


def _as_records(rec: Rec, results: list[Any]) -> list[Rec]:
    """A yielded ``KeyValue`` or 2-tuple is ``(key, value)``; anything else is a value
    under the input record's key."""
    k, _v, t, h, o = rec
    out = []
    for r in results:
        if isinstance(r, tuple) and len(r) == 2:
            out.append((r[0], r[1], t, h, o))
        else:
            out.append((k, r, t, h, o))
    return out


class AgentProcessor(AsyncProcessor):
    """Runs ``fn`` for one task; see the module docstring."""

    def __init__(self, fn: AgentFn, options: AsyncOptions, stores: tuple[str, ...]) -> None:
        self._fn = fn
        self.options = options
        self._store_names = stores
        self._idle: list[_Instance] = []
        self._all: list[_Instance] = []

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._stores = {name: context.get_state_store(name) for name in self._store_names}

    def start_call(self, rec: Rec) -> Any:
        return self._run(rec)

    async def _run(self, rec: Rec) -> list[Any]:
        CURRENT_STORES.set(self._stores)
        # The stage runs at most ``concurrency`` calls, so an idle copy exists or may be made.
        instance = self._idle.pop() if self._idle else self._new()
        try:
            return await instance.run(rec[0], rec[1])
        finally:
            self._idle.append(instance)

    def _new(self) -> _Instance:
        instance = _Instance(self._fn)
        self._all.append(instance)
        return instance

    def results(self, rec: Rec, result: list[Any]) -> list[Rec]:
        return _as_records(rec, result)

    def close(self) -> None:
        for instance in self._all:
            instance.close()


class TimerProcessor(AsyncProcessor):
    """Calls ``fn()`` every ``interval_ms`` of wall-clock time, per task, as an async call
    of this processor (so what it yields, and the table writes it makes, follow the same
    commit rules). A timer that is still running when the next tick comes is not
    started twice (``concurrency=1``, ticks queue)."""

    def __init__(self, fn: Callable[[], Any], interval_ms: int, stores: tuple[str, ...]) -> None:
        self._fn = fn
        self._interval = interval_ms
        self._store_names = stores
        self.options = AsyncOptions(concurrency=1, order="partition")

    def init(self, context: ProcessorContext) -> None:
        super().init(context)
        self._stores = {name: context.get_state_store(name) for name in self._store_names}
        context.schedule(self._interval, _Punctuation.WALL_CLOCK_TIME, self._tick)

    def _tick(self, now: int) -> None:
        self.feed([(None, None, now, (), -1)])

    def start_call(self, rec: Rec) -> Any:
        return self._run()

    async def _run(self) -> list[Any]:
        CURRENT_STORES.set(self._stores)
        made = self._fn()
        if hasattr(made, "__anext__"):
            return [r async for r in made]
        result = await made
        return [] if result is None else [result]

    def results(self, rec: Rec, result: list[Any]) -> list[Rec]:
        return _as_records(rec, result)


__all__ = ["CURRENT_STORES", "AgentProcessor", "AgentStream", "KeyValue", "TimerProcessor"]
