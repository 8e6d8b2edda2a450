"""The runtime's side of async processors (``streams/_async.py``).

Between polls the App asks :meth:`AsyncWork.release` for what finished: each running
task pushes its ready results downstream, and the output joins the round's. Calls that
failed for good go to the processing error handler here, as a failing synchronous
record does in ``ProcessingLoop._replay``: ``fail`` stops the instance, ``continue`` skips the
record, ``dead_letter`` sends the raw consumed record to the dead-letter topic.

Back-pressure: a task with an async stage whose call slots are all taken stops
fetching (its source partitions are paused) until a slot frees. A poll may bring more
than the stages have room for (``AsyncStage.room``: as many queued as there are slots);
the rest is held here, not fed (:meth:`AsyncWork.admit`), and fed first in the next
rounds as room frees, while fetching stays paused. So a stage never holds more than
twice its concurrency, the runtime at most one poll more, and an exactly-once commit,
which waits for all a stage holds, waits about two calls' time. Held records are not
consumed yet: no offset covers them, and they are dropped if their task goes away (its
next owner, or the rewound task, fetches them again).

Commits: under at-least-once a task's offsets stop at the lowest record still in
flight (``RuntimeTask.offsets_to_commit``), so nothing needs to wait. Under
exactly-once :meth:`settle` runs first: every call finishes (or fails to the
handler) and its output joins the transaction before the offsets are committed with
it, so a commit never covers a record whose result is not in it. On revoke and
shutdown under at-least-once the calls are cancelled when their tasks close; the next
owner starts again from the lowest record that was in flight.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping

from .._errors import ProcessingError
from .._record import ConsumedAt, ConsumedRecord, ProducedRecord, consumed_position
from ._client import GroupConsumer, TopicPartition
from ._handlers import ErrorHandler
from ._tasks import RuntimeTask


class AsyncWork:
    def __init__(self, consumer: GroupConsumer, processing_errors: ErrorHandler) -> None:
        self._consumer = consumer
        self._errors = processing_errors
        # Both keyed by the task object, not its id: a task closed and opened again
        # (a rebalance, a rewind) is a new object, its consumer positions set anew.
        self._paused: set[RuntimeTask] = set()
        self._held: dict[TopicPartition, tuple[RuntimeTask, list[ConsumedRecord]]] = {}
        self.ready = asyncio.Event()
        """Set when a call's result is ready to release: the loop stops waiting to poll."""

    def wake(self) -> None:
        self.ready.set()

    @staticmethod
    def busy(tasks: Iterable[RuntimeTask]) -> bool:
        """Whether any task has records in an async stage."""
        return any(t.executor.async_busy for t in tasks if t.executor.has_async)

    def with_held(
        self,
        batches: dict[TopicPartition, list[ConsumedRecord]],
        by_partition: Mapping[TopicPartition, RuntimeTask],
    ) -> dict[TopicPartition, list[ConsumedRecord]]:
        """``batches`` with the held records of running tasks in front of their partitions';
        records held for a task that has since closed are dropped (fetched again)."""
        if not self._held:
            return batches
        held, self._held = self._held, {}
        merged: dict[TopicPartition, list[ConsumedRecord]] = {}
        for tp, (holder, records) in held.items():
            if by_partition.get(tp) is holder and holder.running:
                merged[tp] = records + batches.get(tp, [])
        for tp, records in batches.items():
            merged.setdefault(tp, records)
        return merged

    def admit(
        self, task: RuntimeTask, tp: TopicPartition, records: list[ConsumedRecord]
    ) -> list[ConsumedRecord]:
        """The head of ``records`` the task's async stages have room for; the rest is
        held until there is room."""
        room = task.executor.async_room
        if room >= len(records):
            return records
        self._held[tp] = (task, records[room:])
        if task not in self._paused:
            self._consumer.pause(task.sources)
            self._paused.add(task)
        return records[:room]

    def release(self, tasks: list[RuntimeTask]) -> list[ProducedRecord]:
        """Release every task's ready results; return the output, dead letters included;
        then pause or resume fetching for each task as its stages fill or drain."""
        self.ready.clear()
        out: list[ProducedRecord] = []
        for task in tasks:
            executor = task.executor
            if not executor.has_async:
                continue
            if executor.release():
                task.dirty = True
            out.extend(executor.drain())
            out.extend(self._failed(task))
        self._back_pressure(tasks)
        return out

    async def settle(self, tasks: list[RuntimeTask]) -> list[ProducedRecord]:
        """Wait for every call in flight to finish and release it (exactly-once commits)."""
        out: list[ProducedRecord] = []
        for task in tasks:
            executor = task.executor
            if not executor.has_async or not executor.async_busy:
                continue
            task.dirty = True
            await executor.settle()
            out.extend(executor.drain())
            out.extend(self._failed(task))
        self._back_pressure(tasks)
        return out

    def _failed(self, task: RuntimeTask) -> list[ProducedRecord]:
        out: list[ProducedRecord] = []
        for raw, error, node in task.executor.take_failures():
            if self._errors.fails:
                raise ProcessingError(
                    f"{node} failed on {consumed_position(raw)}: {error!r}",
                    node=node,
                    topic=raw[ConsumedAt.TOPIC],
                    partition=raw[ConsumedAt.PARTITION],
                ) from error
            out.extend(self._errors.consumed(raw, error))
        return out

    def _holds(self, task: RuntimeTask) -> bool:
        return any(tp in self._held for tp in task.sources)

    def _back_pressure(self, tasks: list[RuntimeTask]) -> None:
        self._paused &= set(tasks)  # a task that closed
        for task in tasks:
            executor = task.executor
            if not executor.has_async:
                continue
            full = executor.async_saturated
            if full and task not in self._paused:
                self._consumer.pause(task.sources)
                self._paused.add(task)
            elif not full and task in self._paused and not self._holds(task):
                self._consumer.resume(task.sources)
                self._paused.discard(task)
