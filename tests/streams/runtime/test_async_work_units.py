"""The runtime's back-pressure for async stages (``_async_work.py``), on a real task and a
recording consumer (the consumer is the unit's edge)."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Collection, Sequence

from headrace.streams import AsyncOptions, AsyncProcessor, Record, TaskExecutor, Topology
from headrace.streams.runtime._async_work import AsyncWork
from headrace.streams.runtime._handlers import ErrorHandler
from headrace.streams.runtime._metrics import AppMetrics
from headrace.streams.runtime._tasks import RuntimeTask

TP = ("in", 0)


class RecordingConsumer:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[tuple[str, int]]]] = []

    def pause(self, partitions: Collection[tuple[str, int]]) -> None:
        self.calls.append(("pause", sorted(partitions)))

    def resume(self, partitions: Collection[tuple[str, int]]) -> None:
        self.calls.append(("resume", sorted(partitions)))


def _task(
    tmp_path: pathlib.Path, loop: asyncio.AbstractEventLoop, gate: asyncio.Event
) -> RuntimeTask:
    class Gated(AsyncProcessor):
        options = AsyncOptions(concurrency=4)

        async def process(self, record: Record) -> Record:
            await gate.wait()
            return record

    topology = (
        Topology().add_source("s", "in").add_processor("g", Gated, "s").add_sink("o", "out", "g")
    )
    executor = TaskExecutor(
        topology, 0, 0, {"application_id": "app"}, state_dir=tmp_path, loop=loop
    )
    executor.open_stores()
    task = RuntimeTask("0_0", executor, (TP,), {}, tmp_path, {})
    task.restored({})
    return task


def _records(
    start: int, n: int
) -> list[tuple[str, int, int, int, bytes | None, bytes | None, Sequence[tuple[str, bytes]]]]:
    return [("in", 0, o, 0, b"k", b"v", ()) for o in range(start, start + n)]


def test_surplus_is_held_fetching_paused_and_resumed_once_drained(tmp_path: pathlib.Path) -> None:
    loop = asyncio.new_event_loop()
    gate = asyncio.Event()
    consumer = RecordingConsumer()
    work = AsyncWork(
        consumer,  # type: ignore[arg-type]  # records calls in the consumer's place
        ErrorHandler("processing", "fail", "dlq", AppMetrics("app")),
    )
    task = _task(tmp_path, loop, gate)
    try:
        batches = work.with_held({TP: _records(0, 100)}, {TP: task})
        admitted = work.admit(task, TP, batches[TP])
        assert [r[2] for r in admitted] == list(range(16))  # room for four times the concurrency
        task.process(TP, admitted)
        assert consumer.calls == [("pause", [TP])]
        assert task.offsets_to_commit() == {TP: 0}  # nothing is out yet
        # The next round: held records come first, then what was fetched meanwhile.
        merged = work.with_held({TP: _records(100, 5)}, {TP: task})
        assert [r[2] for r in merged[TP]] == list(range(16, 105))
        assert work.admit(task, TP, merged[TP]) == []  # no room yet: all held again
        gate.set()
        loop.run_until_complete(task.executor.settle())
        out = work.release([task])
        assert len(out) == 16 and task.offsets_to_commit() == {TP: 16}
        assert consumer.calls == [("pause", [TP])]  # still holding: stays paused
        rest = work.with_held({}, {TP: task})[TP]
        while rest:
            admitted = work.admit(task, TP, rest)
            task.process(TP, admitted)
            loop.run_until_complete(task.executor.settle())
            work.release([task])
            rest = work.with_held({}, {TP: task}).get(TP, [])
        assert task.offsets_to_commit() == {TP: 105}
        assert consumer.calls == [("pause", [TP]), ("resume", [TP])]
    finally:
        task.close()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()


def test_records_held_for_a_task_that_closed_are_dropped(tmp_path: pathlib.Path) -> None:
    loop = asyncio.new_event_loop()
    work = AsyncWork(
        RecordingConsumer(),  # type: ignore[arg-type]  # records calls in the consumer's place
        ErrorHandler("processing", "fail", "dlq", AppMetrics("app2")),
    )
    old = _task(tmp_path / "old", loop, asyncio.Event())
    new = _task(tmp_path / "new", loop, asyncio.Event())
    try:
        work.admit(old, TP, _records(0, 50))
        # The partition's task was closed and opened again (a rebalance): its consumer
        # position was reset to the commit, so what the old one held must not be fed.
        assert work.with_held({TP: _records(0, 3)}, {TP: new}) == {TP: _records(0, 3)}
    finally:
        old.close()
        new.close()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()
