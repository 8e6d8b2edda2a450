"""When the processing loop commits: an interval apart, and a commit that came due while
the one before was still waiting for the broker starts as soon as that one ends.

The loop runs against a real ``Committer`` and task; the consumer (nothing to poll) and
the producer (whose flush waits until the test says the broker acknowledged) are the
unit's edges."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from runtime_apps import count_topology

from headrace.streams import StreamsConfig, TaskExecutor
from headrace.streams.runtime._client import FlushMark, FlushResult, TopicPartition
from headrace.streams.runtime._commit import Committer
from headrace.streams.runtime._handlers import ErrorHandler
from headrace.streams.runtime._metrics import AppMetrics
from headrace.streams.runtime._processing import ProcessingLoop
from headrace.streams.runtime._tasks import RuntimeTask

INTERVAL_MS = 300
SOURCE = ("rt-input", 0)


class HeldProducer:
    """A producer whose flush returns once ``acknowledged`` is set; notes when each
    flush began."""

    def __init__(self) -> None:
        self.acknowledged = asyncio.Event()
        self.flushes: list[float] = []

    async def send(self, records: object) -> None: ...

    def mark(self) -> FlushMark:
        return {}

    async def flush(self, upto: FlushMark | None = None) -> FlushResult:
        self.flushes.append(time.monotonic())
        await self.acknowledged.wait()
        return FlushResult(next_offsets={})


class Offsets:
    transactional = False

    async def commit(self, offsets: object) -> None: ...


class IdleConsumer:
    """Nothing to poll: a poll waits out its timeout."""

    async def poll(self, timeout_ms: int, max_records: int) -> dict[TopicPartition, list[Any]]:
        await asyncio.sleep(timeout_ms / 1000)
        return {}

    def highwater(self, tp: TopicPartition) -> int | None:
        return None


class NoAsyncWork:
    ready = asyncio.Event()

    def busy(self, tasks: object) -> bool:
        return False

    def with_held(self, batches: dict[TopicPartition, Any], by_partition: object) -> Any:
        return batches

    def release(self, tasks: object) -> list[Any]:
        return []


def _task(tmp_path: Path) -> RuntimeTask:
    config = StreamsConfig(application_id="app", state_dir=tmp_path)
    executor = TaskExecutor(count_topology(), 0, 0, config, state_dir=tmp_path)
    executor.open_stores()
    task = RuntimeTask("0_0", executor, (SOURCE,), {}, tmp_path / "app" / "0_0", {})
    task.restored({})
    return task


async def test_a_commit_due_while_the_last_one_runs_starts_when_it_ends(tmp_path: Path) -> None:
    task = _task(tmp_path)
    metrics = AppMetrics("app")
    producer = HeldProducer()
    handler = ErrorHandler("production", "fail", "dead", metrics)
    committer = Committer(producer, Offsets(), handler, metrics)  # type: ignore[arg-type]
    tasks = SimpleNamespace(running=lambda: [task], by_partition={})
    rt = SimpleNamespace(
        stop=asyncio.Event(),
        restorer=SimpleNamespace(busy=False),
        async_work=NoAsyncWork(),
        consumer=IdleConsumer(),
        tasks=tasks,
        globals=None,
        standbys=None,
        committer=committer,
    )
    settings = SimpleNamespace(
        commit_interval=INTERVAL_MS, poll_timeout_ms=10, max_poll_records=500, exactly_once=False
    )
    loop = ProcessingLoop(rt, settings, metrics, asyncio.Lock())  # type: ignore[arg-type]
    running = asyncio.create_task(loop.run())
    try:
        # The first commit begins after one interval and waits for the broker through
        # the second interval's tick.
        await asyncio.sleep(INTERVAL_MS * 2.5 / 1000)
        assert len(producer.flushes) == 1
        acknowledged = time.monotonic()
        producer.acknowledged.set()
        await asyncio.sleep(INTERVAL_MS * 0.25 / 1000)
        # The commit skipped at the tick ran once the first one ended, not a whole
        # interval later at the next tick.
        assert len(producer.flushes) == 2, producer.flushes
        assert producer.flushes[1] - acknowledged < INTERVAL_MS * 0.25 / 1000
        # The cadence stays the ticks': the next commit comes at the third tick.
        await asyncio.sleep(INTERVAL_MS * 0.5 / 1000)
        assert len(producer.flushes) == 3, producer.flushes
        third_tick = producer.flushes[0] + 2 * INTERVAL_MS / 1000
        assert abs(producer.flushes[2] - third_tick) < INTERVAL_MS * 0.25 / 1000
    finally:
        rt.stop.set()
        await running
        task.close()
