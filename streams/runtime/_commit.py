"""The commit: the one place that makes processed input count as done.

:meth:`Committer.commit`, step by step, and why in this order:

1. **Flush the stores** of every task (``TaskExecutor.flush``): caches write their
   pending updates down and forward them downstream, which adds changelog and output
   records to the task's output; send all of it to the producer. Nothing a task did may
   be left only in memory once its input counts as consumed.
2. **Flush the producer**: wait until the broker acknowledged every record sent so far.
   Failed sends go to the production handler (which may fail the instance, skip them,
   or dead-letter them; dead letters are flushed too before going on). After this step
   every changelog record describing the flushed state is durable, and the producer
   reports the changelog offset each task's state now covers.
3. **Commit the consumed offsets** (next offset per source partition). Only now does
   the group move past the input: if the instance dies before this, the input is
   processed again, so every input record is reflected in the output at least once.
4. **Write each task's checkpoint** with the changelog offsets from step 2, so a restart
   restores from there instead of from zero. Written after the offsets, as Kafka
   Streams does in ``postCommit``: a checkpoint may only name changelog offsets whose
   records are committed. Under exactly-once the changelog records of an interval
   belong to its transaction, and until the commit they may still be aborted; a
   checkpoint written first could survive a crash and make a restart trust state the
   changelog no longer holds. Under at-least-once either order is safe (the changelog
   is durable after step 2); one order for both keeps the exactly-once swap local. A
   crash between 3 and 4 leaves the previous checkpoint, so the next start restores a
   little more of the changelog than it had to; it never loses state. When the offset
   commit fails because a rebalance is under way, no checkpoint is written either.

Exactly-once (``exactly_once_v2``) plugs in here and nowhere else, through the
:class:`OffsetSink` seam:

- one transactional producer per instance (``transactional_id`` derived from the
  application id and the instance), begun before the first send of each interval;
- step 3 becomes ``send_offsets_to_transaction(offsets, group_metadata)`` followed by
  ``commit_transaction``, so output, changelog and offsets commit atomically; the
  checkpoint (step 4) is deleted when a task opens, so a crash before the first
  commit rebuilds stores from the committed changelog;
- the commit interval drops to 100 ms (``AppSettings.commit_interval``);
- a failed commit aborts the transaction and rewinds the tasks to committed offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from ._client import GroupConsumer, RecordProducer, TopicPartition
from ._errors import ClientError, ProductionError
from ._handlers import ErrorHandler
from ._metrics import AppMetrics
from ._tasks import RuntimeTask

log = logging.getLogger("streams.runtime.commit")


class OffsetSink(Protocol):
    """Where step 4 sends consumed offsets: the group (at-least-once) or a transaction."""

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None: ...


class GroupOffsetSink:
    """At-least-once: commit offsets to the group coordinator."""

    def __init__(self, consumer: GroupConsumer) -> None:
        self._consumer = consumer

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        await self._consumer.commit(offsets)


class Committer:
    def __init__(
        self,
        producer: RecordProducer,
        offsets: OffsetSink,
        production_errors: ErrorHandler,
        metrics: AppMetrics,
    ) -> None:
        self._producer = producer
        self._offsets = offsets
        self._production_errors = production_errors
        self._metrics = metrics

    async def send(self, records: Sequence[tuple[str, bytes | None, bytes | None, int, object, int | None]]) -> None:
        if records:
            await self._producer.send(records)  # type: ignore[arg-type]

    async def commit(self, tasks: Sequence[RuntimeTask]) -> None:
        """Run steps 1-4 of the module docstring for ``tasks`` (RUNNING ones)."""
        started = time.perf_counter()
        # 1. flush stores; what they forward joins the output
        for task in tasks:
            task.executor.flush()
            produced = task.executor.drain()
            if produced:
                await self._producer.send(produced)
        # 2. flush the producer; hand failures to the production handler
        next_offsets = await self._flush_producer()
        for task in tasks:
            for tp in task.changelogs.values():
                if tp in next_offsets:
                    task.changelog_offsets[tp] = next_offsets[tp]
        # 3. commit consumed offsets
        offsets: dict[TopicPartition, int] = {}
        for task in tasks:
            offsets.update(task.offsets_to_commit())
        if offsets:
            try:
                await self._offsets.commit(offsets)
            except ClientError as error:
                if not error.retriable:
                    raise
                # A rebalance is under way; the new owner replays from the last commit.
                log.warning("offset commit failed (%s); input since the last commit will be replayed", error)
                return
            for task in tasks:
                task.committed.update(task.offsets_to_commit())
        # 4. checkpoint the changelog offsets the flushed (and now committed) state covers
        for task in tasks:
            task.write_checkpoint()
        self._metrics.commits.inc()
        self._metrics.commit_latency.observe(time.perf_counter() - started)

    async def _flush_producer(self) -> dict[TopicPartition, int]:
        result = await self._producer.flush()
        next_offsets = dict(result.next_offsets)
        handler = self._production_errors
        for failure in result.failures:
            if handler.fails:
                raise ProductionError(
                    f"cannot produce {len(failure.records)} records to "
                    f"{failure.topic}-{failure.partition}: {failure.error!r}",
                    topic=failure.topic,
                    partition=failure.partition,
                ) from failure.error
            letters = handler.produced(failure.topic, failure.partition, failure.records, failure.error)
            if letters:
                await self._producer.send(letters)
                again = await self._producer.flush()
                if again.failures:
                    first = again.failures[0]
                    raise ProductionError(
                        f"cannot produce dead letters to {first.topic}: {first.error!r}",
                        topic=first.topic,
                        partition=first.partition,
                    ) from first.error
                next_offsets.update(again.next_offsets)
        return next_offsets
