"""Asynchronous processors: user coroutines inside a task, with order, bounds and commit points.

An :class:`AsyncProcessor` node does not run its records through the task's chain of
calls the way other nodes do. The executor compiles it into an :class:`AsyncStage`,
which takes a batch, starts one call per record as an asyncio task (at most
``concurrency`` at a time; the rest wait in a queue), and hands results on later, when
:meth:`TaskExecutor.release` is called. Releasing pushes the results through the rest
of the topology exactly as a synchronous operator would have, with each record's
timestamp, headers, source offset and source partition, so everything downstream
(sinks, stores, joins) sees nothing different.

A record's life in a stage, step by step:

1. **Submitted**: counted in flight for its source partition (:class:`InFlight`) and
   queued; if a call slot is free, its call starts at once.
2. **Called**: the user's coroutine runs, under ``timeout`` (seconds) per attempt;
   a failed attempt is retried up to ``retries`` times after ``backoff * 2**attempt``
   seconds. Cancelled calls are not retried.
3. **Done**: it joins the stage's ready list in its release order: ``"key"`` holds a
   result back until every earlier record with the same key is done, ``"partition"``
   until every earlier record is done, ``"none"`` holds nothing back. A freed slot
   starts the next queued call right away, without waiting for the runtime.
4. **Released** (by the executor, between batches): the result goes downstream; a call
   that failed for good is handed to the task's failure list (the runtime gives it to
   the processing error handler, the test driver raises it). Only then does the record
   stop being in flight: its output is in the task's produced list.

The commit point of a source partition is the lowest offset still in flight there
(:meth:`InFlight.lowest`), so no offset is committed before its record's results, and
every earlier record's, are out. The raw consumed records in flight are kept
(:meth:`InFlight.retain`), so a failing one can go to the dead-letter topic as it came.
"""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ._errors import ProcessingError, TopologyError
from ._record import ConsumedAt, ConsumedRecord, Rec, RecAt, Record

if TYPE_CHECKING:
    from ._context import ProcessorContext, Push, TaskShared

ORDERS = ("key", "partition", "none")
MAX_CONCURRENCY = 4096
"""The most calls one stage may have in flight: each holds a task and a record."""


@dataclass(frozen=True)
class AsyncOptions:
    """How an async processor runs its calls; see the module docstring."""

    concurrency: int = 16
    order: str = "key"
    timeout: float | None = None
    retries: int = 0
    backoff: float = 0.1

    def __post_init__(self) -> None:
        if not isinstance(self.concurrency, int) or not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise TopologyError(
                f"concurrency must be an int from 1 to {MAX_CONCURRENCY}, got {self.concurrency!r}"
            )
        if self.order not in ORDERS:
            raise TopologyError(f"order must be one of {ORDERS}, got {self.order!r}")
        if self.timeout is not None and not self.timeout > 0:
            raise TopologyError(f"timeout must be positive seconds or None, got {self.timeout!r}")
        if not isinstance(self.retries, int) or self.retries < 0:
            raise TopologyError(f"retries must be a non-negative int, got {self.retries!r}")
        if not self.backoff >= 0:
            raise TopologyError(f"backoff must be non-negative seconds, got {self.backoff!r}")


def require_coroutine_function(fn: Callable[..., Any], what: str) -> None:
    """Fail at build time, not at the first record, when ``fn`` is not ``async def``."""
    call = getattr(fn, "__call__", None)  # noqa: B004 - an async __call__ counts too
    if not (inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)):
        raise TopologyError(f"{what} needs an async function (async def), got {fn!r}")


class AsyncProcessor:
    """A processor whose ``process`` is a coroutine, run concurrently per task.

    Subclass it, set ``options`` (an :class:`AsyncOptions`) and override
    :meth:`process`, which returns what to forward: ``None``, one
    :class:`~streams.Record`, or an iterable of them. Results are forwarded in the
    order ``options.order`` says. ``process`` must not use the context's current-record
    fields (``offset``, ``record_metadata``): other records run meanwhile. The record it
    receives carries all a call needs.
    """

    options: AsyncOptions = AsyncOptions()
    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    async def process(self, record: Record) -> Record | Iterable[Record] | None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`init` acquired."""

    def feed(self, records: list[Rec]) -> None:
        """Submit ``(key, value, timestamp, headers, -1)`` records to this processor's
        own calls, from a punctuation: its results are forwarded as any others. The
        task binds this when it compiles the processor."""
        raise TopologyError(f"{type(self).__name__} is not running in a task")

    # The two halves the stage calls; the DSL's operators override them to skip
    # building a Record per call.
    def start_call(self, rec: Rec) -> Any:
        return self.process(Record(rec[0], rec[1], rec[2], rec[3]))

    def results(self, rec: Rec, result: Any) -> list[Rec]:
        # A Record is (key, value, timestamp, headers): a Rec without its source offset.
        o = rec[RecAt.SOURCE_OFFSET]
        if result is None:
            return []
        if isinstance(result, Record):
            return [(result[0], result[1], result[2], result[3], o)]
        return [(r[0], r[1], r[2], r[3], o) for r in result]


TP = tuple[str, int]


class InFlight:
    """Per source partition: how many pending results each offset still has, and the raw
    consumed record of every offset in flight (for the dead-letter topic)."""

    def __init__(self) -> None:
        self._counts: dict[TP, dict[int, int]] = {}
        self._raw: dict[TP, dict[int, ConsumedRecord]] = {}

    def add(self, tp: TP, offset: int) -> None:
        if offset < 0:
            return  # forwarded by a punctuation: no input offset waits on it
        counts = self._counts.setdefault(tp, {})
        counts[offset] = counts.get(offset, 0) + 1

    def done(self, tp: TP, offset: int) -> None:
        counts = self._counts.get(tp)
        if counts is None or offset not in counts:
            return
        left = counts[offset] - 1
        if left:
            counts[offset] = left
            return
        del counts[offset]
        raw = self._raw.get(tp)
        if raw is not None:
            raw.pop(offset, None)

    def retain(self, tp: TP, records: Iterable[ConsumedRecord]) -> None:
        """Keep the raw records of ``records`` that are in flight after their batch."""
        counts = self._counts.get(tp)
        if not counts:
            return
        raw = self._raw.setdefault(tp, {})
        for r in records:
            offset = r[ConsumedAt.OFFSET]
            if offset in counts:
                raw[offset] = r

    def raw(self, tp: TP, offset: int) -> ConsumedRecord | None:
        return self._raw.get(tp, {}).get(offset)

    def lowest(self, tp: TP) -> int | None:
        """The lowest offset of ``tp`` still in flight (the commit point), if any."""
        counts = self._counts.get(tp)
        return min(counts) if counts else None

    def __len__(self) -> int:
        return sum(map(len, self._counts.values()))

    def clear(self) -> None:
        self._counts.clear()
        self._raw.clear()


class _Call:
    __slots__ = ("done", "error", "key", "partition", "rec", "result", "topic")

    def __init__(self, rec: Rec, topic: str | None, partition: int, key: Any) -> None:
        self.rec = rec
        self.topic = topic
        self.partition = partition
        self.key = key
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None


async def _raising(error: Exception) -> Any:
    raise error


def _order_key(key: Any) -> Any:
    try:
        hash(key)
    except TypeError:
        return repr(key)  # an unhashable key (a dict) still orders by its content
    return key


Failure = tuple[ConsumedRecord, BaseException, str]
"""A record whose call failed for good: the raw record, the error, the node's name."""


class AsyncStage:
    """The runtime half of one :class:`AsyncProcessor` in one task."""

    def __init__(
        self, node: str, processor: AsyncProcessor, children: tuple[Push, ...], shared: TaskShared
    ) -> None:
        self.node = node
        options = processor.options
        self._options = options
        self._concurrency = options.concurrency
        self._start_call = processor.start_call
        processor.feed = self.submit  # type: ignore[method-assign,assignment]
        self._results = processor.results
        self._children = children
        self._shared = shared
        self._queued: deque[_Call] = deque()
        self._running: set[asyncio.Task[Any]] = set()
        self._in_order: deque[_Call] = deque()  # order="partition"
        self._by_key: dict[Any, deque[_Call]] = {}  # order="key"
        self._ready: list[_Call] = []
        self._unreleased = 0  # submitted, not yet released
        self._closed = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._plain = options.timeout is None and options.retries == 0

    # -- what the executor asks -----------------------------------------------------

    @property
    def busy(self) -> bool:
        """Whether any record is still in this stage."""
        return self._unreleased > 0

    @property
    def saturated(self) -> bool:
        """Whether every call slot is taken (more input would only queue)."""
        return len(self._running) + len(self._queued) >= self._concurrency

    @property
    def room(self) -> int:
        """How many more records the stage takes: up to four times its concurrency,
        running and queued. The runtime feeds no more than this (it holds the rest), so
        an exactly-once commit, which waits for all of it, waits about four calls' time,
        while the queue is deep enough not to run dry during a commit."""
        return max(0, 4 * self._concurrency - len(self._running) - len(self._queued))

    @property
    def has_ready(self) -> bool:
        return bool(self._ready)

    def running_calls(self) -> set[asyncio.Task[Any]]:
        return self._running

    def submit(self, batch: list[Rec]) -> None:
        """Step 1: count each record in flight, queue it, start what the slots allow."""
        shared = self._shared
        topic, partition = shared.topic, shared.partition
        tp = (topic or "", partition)
        add = shared.in_flight.add
        order = self._options.order
        for rec in batch:
            key = _order_key(rec[RecAt.KEY]) if order == "key" else None
            call = _Call(rec, topic, partition, key)
            add(tp, rec[RecAt.SOURCE_OFFSET])
            self._queued.append(call)
            if order == "partition":
                self._in_order.append(call)
            elif order == "key":
                queue = self._by_key.get(key)
                if queue is None:
                    self._by_key[key] = queue = deque()
                queue.append(call)
        self._unreleased += len(batch)
        self._start()

    def release(self) -> bool:
        """Step 4: push the ready results downstream, runs of one source partition at a
        time; return whether anything was released."""
        ready = self._ready
        if not ready:
            return False
        self._ready = []
        shared = self._shared
        saved = (shared.topic, shared.partition)
        run: list[_Call] = []
        try:
            for call in ready:
                if run and (call.topic != run[0].topic or call.partition != run[0].partition):
                    self._push(run)
                    run = []
                if call.error is None:
                    run.append(call)
                    continue
                self._push(run)
                run = []
                self._fail(call, call.error)
            self._push(run)
        finally:
            shared.topic, shared.partition = saved
            self._unreleased -= len(ready)
        return True

    def _fail(self, call: _Call, error: BaseException) -> None:
        """Hand ``call``'s record to the failure list, as consumed (or as it was, when
        it came from a punctuation); it is no longer in flight."""
        in_flight = self._shared.in_flight
        tp = (call.topic or "", call.partition)
        rec = call.rec
        offset = rec[RecAt.SOURCE_OFFSET]
        # As consumed: (topic, partition, offset, timestamp, key, value, headers).
        raw = in_flight.raw(tp, offset) or (
            tp[0],
            tp[1],
            offset,
            rec[RecAt.TIMESTAMP],
            None,
            None,
            rec[RecAt.HEADERS],
        )
        self._shared.async_failures.append((raw, error, self.node))
        in_flight.done(tp, offset)

    def _push(self, run: list[_Call]) -> None:
        """Deliver ``run``; when turning a result into records or an operator downstream
        fails, drop what the run produced and deliver its calls one by one, so only the
        failing ones go to the failure list (as ``ProcessingLoop._replay`` does for a batch)."""
        if not run:
            return
        produced = self._shared.produced
        mark = len(produced)
        try:
            self._deliver(run)
        except Exception as error:
            del produced[mark:]
            if len(run) > 1:
                for call in run:
                    self._push([call])
                return
            cause = error.__cause__ if isinstance(error, ProcessingError) else None
            self._fail(run[0], cause or error)

    def _deliver(self, run: list[_Call]) -> None:
        shared = self._shared
        first = run[0]
        shared.topic, shared.partition = first.topic, first.partition
        results = self._results
        out: list[Rec] = []
        for call in run:
            out.extend(results(call.rec, call.result))
        if out:
            for push in self._children:
                push(out)
        tp = (first.topic or "", first.partition)
        done = shared.in_flight.done
        for call in run:
            done(tp, call.rec[4])

    def close(self) -> None:
        """Cancel every call; nothing more is released (the task is going away)."""
        self._closed = True
        for task in self._running:
            task.cancel()
        self._running.clear()
        self._queued.clear()
        self._in_order.clear()
        self._by_key.clear()
        self._ready = []

    # -- steps 2 and 3 ----------------------------------------------------------------

    def _start(self) -> None:
        if self._closed:
            return
        queued, running = self._queued, self._running
        if not queued or len(running) >= self._concurrency:
            return
        loop = self._loop
        if loop is None:
            loop = self._loop = self._shared.loop or asyncio.get_running_loop()
        plain = self._plain
        finished = self._finished
        while queued and len(running) < self._concurrency:
            call = queued.popleft()
            # Without a timeout or retries the user's coroutine is the task itself.
            try:
                made = self._start_call(call.rec) if plain else None
            except Exception as error:  # a bad call fails its record, not the loop
                made = _raising(error)
            coro = made if asyncio.iscoroutine(made) else self._call(call.rec, made)
            task = loop.create_task(coro)
            running.add(task)
            task.add_done_callback(partial(finished, call))

    async def _call(self, rec: Rec, first: Any = None) -> Any:
        options = self._options
        attempt = 0
        while True:
            try:
                pending = self._start_call(rec) if first is None else first
                first = None
                if options.timeout is None:
                    return await pending
                return await asyncio.wait_for(pending, options.timeout)
            except Exception:
                if attempt >= options.retries:
                    raise
            await asyncio.sleep(options.backoff * 2**attempt)
            attempt += 1

    def _finished(self, call: _Call, task: asyncio.Task[Any]) -> None:
        if self._closed:
            return
        self._running.discard(task)
        call.done = True
        if task.cancelled():
            call.error = asyncio.CancelledError("the call was cancelled")
        else:
            call.error = task.exception()
            if call.error is None:
                call.result = task.result()
        order = self._options.order
        ready = self._ready
        was_empty = not ready
        if order == "none":
            ready.append(call)
        elif order == "partition":
            in_order = self._in_order
            while in_order and in_order[0].done:
                ready.append(in_order.popleft())
        else:
            queue = self._by_key[call.key]
            while queue and queue[0].done:
                ready.append(queue.popleft())
            if not queue:
                del self._by_key[call.key]
        self._start()
        if was_empty and ready:
            self._shared.wake()
