"""The processing loop of a running App: rounds of records through the tasks.

One round, step by step: read what is new on the global topics into the global stores;
poll a batch of records; hold back those of a task until each of its partitions has
records or none left to fetch (``_fetch_wait.py``); feed each partition's records to its
task; send what the tasks produced; run due wall-clock punctuations; restore a round of
changelog records if any task is restoring (a task whose restore completes starts its
processors and has its partitions resumed); apply what the standby reader fetched
(``_standby.py``); commit when the interval has passed or a task asked for it
(``_commit.py`` owns the commit), then checkpoint the global stores and the standbys.
Everything after the poll holds the App's lock, which the rebalance callbacks
(``_rebalance.py``) hold too.

A batch that fails in processing runs again record by record, each failing record going
to the processing error handler (:meth:`ProcessingLoop._replay`). Under exactly-once a
failed transaction rewinds the tasks (``_rewind.py``) and the loop goes on; any other
error ends the loop and is the App's to report.
"""

from __future__ import annotations

import asyncio
import logging
import time

from .._errors import ProcessingError
from .._record import ConsumedAt, ConsumedRecord, ProducedRecord
from ._client import TopicPartition
from ._errors import FencedError, TransactionError
from ._fetch_wait import FetchWait
from ._metrics import AppMetrics
from ._rebalance import count_tasks
from ._settings import AppSettings
from ._startup import Runtime, now_ms
from ._tasks import RuntimeTask

log = logging.getLogger("headrace.streams.runtime.app")

_ASYNC_POLL_MS = 5
_PUNCTUATE_EVERY_S = 0.05


class ProcessingLoop:
    """The rounds of one run of an App over ``rt`` (module docstring). ``consumed``
    counts the records fed to the tasks, ``produced`` the results handed to the
    producer."""

    def __init__(
        self, rt: Runtime, settings: AppSettings, metrics: AppMetrics, lock: asyncio.Lock
    ) -> None:
        self._rt = rt
        self._settings = settings
        self._metrics = metrics
        self._lock = lock
        self.consumed = 0
        self.produced = 0
        self._fetch_wait = FetchWait(rt.consumer)

    async def run(self) -> None:
        """Run rounds until ``rt.stop`` is set; an error a round cannot handle ends the
        loop and goes on to the caller."""
        rt, settings = self._rt, self._settings
        last_commit = last_punctuate = time.monotonic()
        interval = settings.commit_interval / 1000
        restorer, work, consumer, tasks = rt.restorer, rt.async_work, rt.consumer, rt.tasks
        committer = rt.committer
        # A commit that came due while the one before still ran: it starts as soon as
        # that one ends, not an interval later (under exactly-once a held result would
        # otherwise wait two intervals and a commit).
        deferred = False
        while not rt.stop.is_set():
            timeout = 0 if restorer.busy else settings.poll_timeout_ms
            if work.ready.is_set():
                timeout = 0
            elif timeout and (deferred or work.busy(tasks.running())):
                # A commit or results that finish meanwhile do not wake a poll: come
                # back soon.
                timeout = min(timeout, _ASYNC_POLL_MS)
            batches = await consumer.poll(timeout, settings.max_poll_records)
            async with self._lock:
                if rt.globals is not None:
                    await rt.globals.poll(0)
                await self._process(batches)
                now = time.monotonic()
                if now - last_punctuate >= _PUNCTUATE_EVERY_S:
                    last_punctuate = now
                    await self._punctuate()
                if restorer.busy:
                    for task in await restorer.step(50):
                        consumer.resume(task.sources)
                if rt.standbys is not None:
                    await rt.standbys.step(0)
                running = tasks.running()
                due = now - last_commit >= interval or any(
                    t.executor.commit_requested for t in running
                )
                if due and committer.busy:
                    # Commits start an interval apart (below), so this tick counts as
                    # the interval's start; the deferred commit follows when it can.
                    deferred = True
                    last_commit = now
                    self._observe_lag(running)
                elif due or (deferred and not committer.busy):
                    deferred = False
                    try:
                        await self.commit(running, closing=False)
                    except (TransactionError, FencedError) as error:
                        await self._rewind(error)
                    if rt.globals is not None:
                        await rt.globals.checkpoint()
                    if rt.standbys is not None:
                        rt.standbys.checkpoint()
                    # Commits start an interval apart, as in Kafka Streams: timed from
                    # the end, each would add its own duration to how long the next
                    # interval's results wait (under exactly-once, to their latency).
                    # A deferred commit keeps the interval its tick began.
                    if due:
                        last_commit = now
                    self._observe_lag(running)

    async def commit(self, tasks: list[RuntimeTask], closing: bool = True) -> None:
        """Commit ``tasks``; under exactly-once their async calls finish first and
        their output joins the transaction (``_async_work.py``). The loop's commits
        (not ``closing``) finish while processing goes on (``Committer.begin``)."""
        rt = self._rt
        if self._settings.exactly_once:
            out = await rt.async_work.settle(tasks)
            if out:
                self.produced += len(out)
                await rt.committer.send(out)
        if not closing:
            await rt.committer.begin(tasks)
            return
        await rt.committer.commit(tasks, closing)

    async def _rewind(self, error: TransactionError | FencedError) -> None:
        """A transaction was aborted: rewind the tasks (``_rewind.py``); a fenced
        instance that must stop raises ``FencedError`` out of the loop."""
        self._metrics.transactions_aborted.inc()
        await self._rt.rewinder.rewind(error)
        count_tasks(self._rt, self._metrics)

    async def _process(self, batches: dict[TopicPartition, list[ConsumedRecord]]) -> None:
        """Feed each task its records and send what comes out. A round that found no
        backlog (fewer records than a poll may take) also forwards what the tasks'
        caches hold, so at low load a result leaves with its record instead of at the
        commit; under backlog the caches keep folding updates until the commit. Under
        exactly-once a result is visible only at the commit anyway, so the caches wait."""
        rt = self._rt
        out: list[ProducedRecord] = []
        work = rt.async_work
        by_partition = rt.tasks.by_partition
        consumed, latency = self._metrics.records_consumed, self._metrics.process_latency
        fed: dict[str, RuntimeTask] = {}
        batches = work.with_held(batches, by_partition)
        # a task whose other partitions are fetched behind waits for them
        batches = self._fetch_wait.take(batches, by_partition)
        for tp, records in batches.items():
            task = by_partition.get(tp)
            if task is None or not task.running or not records:
                if records and task is not None:
                    # Fetched before the partition was paused for restoring: fetch them
                    # again once the task runs, or they would be skipped.
                    rt.consumer.seek(tp, records[0][ConsumedAt.OFFSET])
                elif records:
                    log.warning("dropping %d records of %s-%d: no task", len(records), *tp)
                continue
            if task.executor.has_async:
                records = work.admit(task, tp, records)
                if not records:
                    continue
            started = time.perf_counter()
            try:
                out.extend(task.process(tp, records))
            except ProcessingError as error:
                if rt.processing_errors.fails:
                    raise
                out.extend(self._replay(task, tp, records, error))
            latency.labels(task.id).observe(time.perf_counter() - started)
            consumed.labels(task.id).inc(len(records))
            self.consumed += len(records)
            fed[task.id] = task
        out.extend(work.release(rt.tasks.running()))
        if (
            fed
            and not self._settings.exactly_once
            and (sum(map(len, batches.values())) < self._settings.max_poll_records)
        ):
            for task in fed.values():
                out.extend(task.forward_cached())
        if out:
            self.produced += len(out)
            await rt.committer.send(out)

    def _replay(
        self,
        task: RuntimeTask,
        tp: TopicPartition,
        records: list[ConsumedRecord],
        first: ProcessingError,
    ) -> list[ProducedRecord]:
        """A batch failed: drop its partial output and process it record by record,
        giving each failing record to the processing handler. Store writes the failed
        batch made before the error stay (at-least-once)."""
        task.executor.drain()
        out: list[ProducedRecord] = []
        for record in records:
            try:
                out.extend(task.process(tp, [record]))
            except ProcessingError as error:
                task.executor.drain()
                task.next_offsets[tp] = record[ConsumedAt.OFFSET] + 1
                out.extend(self._rt.processing_errors.consumed(record, error.__cause__ or error))
        return out

    async def _punctuate(self) -> None:
        now = now_ms()
        started = time.perf_counter()
        ran = False
        out: list[ProducedRecord] = []
        for task in self._rt.tasks.running():
            if task.executor.punctuate_wall_clock(now):
                task.dirty = ran = True
            out.extend(task.executor.drain())
        if ran:
            self._metrics.punctuation_latency.observe(time.perf_counter() - started)
        if out:
            self.produced += len(out)
            await self._rt.committer.send(out)

    def _observe_lag(self, tasks: list[RuntimeTask]) -> None:
        """Set the consumer-lag gauge of each source partition of ``tasks``."""
        rt = self._rt
        for task in tasks:
            for tp in task.sources:
                high = rt.consumer.highwater(tp)
                position = task.next_offsets.get(tp)
                if high is not None and position is not None:
                    self._metrics.consumer_lag.labels(tp[0], str(tp[1])).set(
                        max(0, high - position)
                    )
