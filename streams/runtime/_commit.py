"""The commit: the one place that makes processed input count as done.

:meth:`Committer.commit`, step by step, and why in this order:

1. **Flush the caches** of every task (``TaskExecutor.flush(durable=False)``): they
   write their pending updates down and forward them downstream, which adds changelog
   and output records to the task's output; send all of it to the producer. Nothing a
   task did may be left only in memory once its input counts as consumed. Take the
   producer's mark and the consumed offsets now: steps 2 and 3 cover exactly these.
   (The stores are not synced to disk here; only a checkpoint needs that, step 4.)
2. **Flush the producer up to the mark**: wait until the broker acknowledged every
   record sent before it (``_send_ledger.py``).
   Failed sends go to the production handler (which may fail the instance, skip them,
   or dead-letter them; dead letters are flushed too before going on). After this step
   every changelog record describing the flushed state is durable, and the producer
   reports the changelog offset each task's state now covers.
3. **Commit the consumed offsets** (next offset per source partition). Only now does
   the group move past the input: if the instance dies before this, the input is
   processed again, so every input record is reflected in the output at least once.
4. **Write each task's checkpoint**, when one is due (``_checkpoints.py``: every
   10,000 changelog records, and when the task may close), with the changelog offsets
   from step 2, after syncing its stores, so a restart restores from there instead of
   from zero. Written after the offsets, as Kafka
   Streams does in ``postCommit``: a checkpoint may only name changelog offsets whose
   records are committed. Under exactly-once the changelog records of an interval
   belong to its transaction, and until the commit they may still be aborted; a
   checkpoint written first could survive a crash and make a restart trust state the
   changelog no longer holds. Under at-least-once either order is safe (the changelog
   is durable after step 2); one order for both keeps the exactly-once swap local. A
   crash between 3 and 4 leaves the previous checkpoint, so the next start restores a
   little more of the changelog than it had to; it never loses state. When the offset
   commit fails because a rebalance is under way, no checkpoint is written either.

**A commit that does not stall** (at-least-once, :meth:`Committer.begin`): the loop
runs step 1 and returns to processing; steps 2 and 3 run beside it, waiting for the
broker, while later records are processed and sent. The offsets committed are those
taken in step 1 and the flush waits for the output sent before them, so an offset is
still committed only after every output of the records before it is acknowledged;
what is processed meanwhile belongs to the next commit. One commit at a time: the next
one, a rebalance or a shutdown first waits for it (``settle``), and what it raised
(a production error) is raised there. Its step 4 runs at the start of the next commit,
from the loop: a due checkpoint names the offsets of the commit just finished, and the
stores, synced then, hold at least what it names. A crash while it runs leaves the
previous committed offsets: the input since is processed again (at-least-once).

Exactly-once (``exactly_once_v2``) plugs in here and nowhere else, through the
:class:`OffsetSink` seam and the transactional producer (``_aiokafka_txn.py``).

**The transaction.** One transactional producer per instance; its ``transactional_id``
is ``<application id>-<instance id>``, the instance id kept in the state directory (or
set), so a restarted instance takes over its predecessor's id and InitProducerId aborts
whatever transaction the predecessor left open. The first send of an interval begins a
transaction; outputs and changelog writes of every task go into it. Step 3 becomes
:class:`TransactionSink`: check that this consumer is still in the group's current
generation, ``send_offsets(offsets, group_id)``, ``commit_transaction``. The offsets
are sent while step 2 still waits for the output's acknowledgements (nothing of the
transaction shows before it ends, so neither needs the other; each is a durable write
at the broker, so side by side they cost one wait, not two); the transaction ends once
both are done.
Output, changelog records and consumed offsets become visible to read_committed readers
together, or not at all. Input and changelogs are read read_committed, so nothing of an
aborted transaction is ever processed or restored.

**Local state.** The live RocksDB stores are written as records are processed, ahead of
the transaction that logs the writes; after a crash they may hold aborted writes, so
they are never trusted after a crash. What is trusted, and why it matches exactly:

1. *A checkpoint next to the live stores* exists only after a clean close of a task
   that processed nothing since its last commit (``RuntimeTask.close``): every write in
   the stores was logged in a committed transaction, and the checkpoint names the
   changelog offsets just past them. It is deleted when the task opens again, before
   the first record is processed, so it never survives a crash next to dirty stores.
2. *A snapshot* (``_snapshots.py``) is taken in step 4, after ``commit_transaction``
   returned and before anything new is processed (the commit holds the runtime's lock):
   step 1 flushed every cache into the stores and every write went to the changelog in
   the transaction that just committed, so the stores equal the committed changelog up
   to the offsets of step 2, which are written inside the snapshot. Snapshots are taken
   at most every ``snapshot_interval_ms`` (RocksDB checkpoints flush the memtable; at
   every 100 ms commit that would be too many small files).
3. *Neither*: the stores are rebuilt from the beginning of the changelog.

On open without a clean checkpoint, the snapshot replaces the live stores and restoring
reads the changelog from the snapshot's offsets, read_committed: only the committed
tail since the snapshot, never the whole changelog (Kafka Streams wipes and re-reads
all of it). The restored state then equals the committed changelog, whose end is
exactly what the committed input offsets produced, because both committed in one
transaction: processing resumes from those offsets with state that matches them.
A snapshot is never ahead of the committed offsets (it is taken after the commit) and
being behind only costs a longer tail. A crash while a snapshot is being taken leaves
the previous one (rename, see ``_snapshots.py``).

**Failures.** Anything failing inside a transaction (a send, the offsets, the commit)
raises :class:`TransactionError`: the committer aborts the transaction and the
application rewinds every task: closes it without a checkpoint, reopens it from its
snapshot and seeks its input back to the committed offsets. A producer fenced by a
newer instance with its id raises :class:`FencedError`: nothing of ours can commit any
more; the application rewinds once with a new producer (a broker that timed the
transaction out fences the same way), and stops cleanly if fenced again soon after.

**Zombies.** aiokafka sends TxnOffsetCommit version 0, which carries no generation, so
no broker can fence our offset commits by group generation (the built-in broker does,
as Kafka does, for version 3 and later, which librdkafka and kafka-python send); only
the producer epoch fences them. A member the group removed (its session timed out) is
caught here instead: :class:`TransactionSink` refuses to commit unless the
consumer's generation is valid, and the transaction timeout (half the session timeout
by default) makes the broker abort a dead instance's open transaction before the group
hands its partitions to another instance.

The commit interval drops to 100 ms under exactly-once (``AppSettings.commit_interval``):
a read_committed reader sees output only when its transaction commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import Protocol

from ._checkpoints import CheckpointPolicy
from ._client import (
    FlushMark,
    GroupConsumer,
    RecordProducer,
    TopicPartition,
    TransactionalProducer,
)
from ._errors import (
    ClientError,
    FencedError,
    ProductionError,
    SourceTopicDeletedError,
    TransactionAbortedError,
    TransactionError,
)
from ._handlers import ErrorHandler
from ._metrics import AppMetrics
from ._tasks import RuntimeTask

log = logging.getLogger("headrace.streams.runtime.commit")


class OffsetSink(Protocol):
    """Where step 3 sends consumed offsets: the group (at-least-once) or a transaction."""

    transactional: bool

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None: ...


class GroupOffsetSink:
    """At-least-once: commit offsets to the group coordinator."""

    transactional = False

    def __init__(self, consumer: GroupConsumer) -> None:
        self._consumer = consumer

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        if offsets:
            await self._consumer.commit(offsets)


class TransactionSink:
    """Exactly-once: the offsets join the producer's transaction, which then commits."""

    transactional = True

    def __init__(
        self, producer: TransactionalProducer, consumer: GroupConsumer, group_id: str
    ) -> None:
        self.producer = producer
        self._consumer = consumer
        self._group_id = group_id

    async def stage(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Add ``offsets`` to the open transaction ahead of :meth:`commit`, e.g. while
        its output is still being flushed: nothing of it shows before it commits."""
        if offsets:
            self._check_generation()
            await self._consumer.while_sources_exist(
                self.producer.send_offsets(offsets, self._group_id)
            )

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        if not offsets and not self.producer.in_transaction:
            return
        self._check_generation()
        await self._consumer.while_sources_exist(
            self.producer.commit_transaction(offsets, self._group_id)
        )

    def _check_generation(self) -> None:
        if not self._consumer.generation_valid():
            raise TransactionAbortedError(
                "this member left the group's current generation; its partitions may "
                "belong to another instance now, so its transaction must not commit"
            )

    async def abort(self) -> None:
        # aiokafka's abort waits for the transaction's requests to end, and one that
        # commits offsets of a deleted source topic is retried without end: watched
        # like a commit, the abort gives up (``SourceTopicDeletedError``) once the
        # topic is known gone, and the broker aborts at the transaction's timeout.
        await self._consumer.while_sources_exist(self.producer.abort_transaction())


class Committer:
    def __init__(
        self,
        producer: RecordProducer,
        offsets: OffsetSink,
        production_errors: ErrorHandler,
        metrics: AppMetrics,
        snapshot_interval_ms: int = 0,
        checkpoints: CheckpointPolicy | None = None,
    ) -> None:
        self._producer = producer
        self._offsets = offsets
        self._production_errors = production_errors
        self._metrics = metrics
        self._snapshot_interval = snapshot_interval_ms / 1000
        self._checkpoints = checkpoints or CheckpointPolicy()
        # At-least-once: steps 2-3 of the commit begun last, while processing goes on,
        # and what they raised if nobody was there to hear it.
        self._in_flight: asyncio.Task[bool | None] | None = None
        self._error: BaseException | None = None
        # An abort that failed leaves the producer unusable: the rewind replaces it.
        self.broken = False

    @property
    def producer(self) -> RecordProducer:
        return self._producer

    def replace_producer(self, producer: TransactionalProducer) -> None:
        """After a fence: a new producer (new epoch) for the same transactional id."""
        self._producer = producer
        self.broken = False
        if isinstance(self._offsets, TransactionSink):
            self._offsets.producer = producer

    async def send(
        self, records: Sequence[tuple[str, bytes | None, bytes | None, int, object, int | None]]
    ) -> None:
        if records:
            await self._producer.send(records)  # type: ignore[arg-type]

    async def begin(self, tasks: Sequence[RuntimeTask]) -> None:
        """From the processing loop: step 1 now, then steps 2 and 3 run while
        processing goes on ("A commit that does not stall", module docstring). The
        commit begun before finishes first, and what it raised is raised here. Under
        exactly-once, a commit that takes a snapshot runs whole instead.

        While the commit begun before is still waiting for the broker (:attr:`busy`),
        this one is skipped: one commit runs at a time, and processing does not wait
        for it. The processing loop begins the skipped one as soon as that one ends."""
        if self.busy:
            log.debug("commit skipped: the one begun before is still running", extra={"skipped": 1})
            return
        if not self._offsets.transactional:
            await self.settle()
            started = time.perf_counter()
            mark, offsets = await self._prepare(tasks)
            for task in tasks:
                if self._checkpoints.due(task):
                    self._checkpoints.write(task)
                    await self.send(task.executor.drain())
            self._in_flight = asyncio.ensure_future(self._finish(tasks, mark, offsets, started))
            return
        now = time.monotonic()
        if self.broken or any(self._snapshot_due(task, now) for task in tasks):
            await self.commit(tasks)
            return
        await self._transaction(self._begin_transactional(tasks))

    async def _begin_transactional(self, tasks: Sequence[RuntimeTask]) -> None:
        await self.settle()
        started = time.perf_counter()
        mark, offsets = await self._prepare(tasks)
        assert isinstance(self._offsets, TransactionSink)
        self._offsets.producer.hold()
        self._in_flight = asyncio.ensure_future(self._commit_held(tasks, mark, offsets, started))

    async def _commit_held(
        self,
        tasks: Sequence[RuntimeTask],
        mark: FlushMark,
        offsets: dict[TopicPartition, int],
        started: float,
    ) -> bool | None:
        """Steps 2 and 3 of a transaction while later output is held; then the next
        transaction begins with it. On failure the held output stays held: the abort
        that follows discards it."""
        done = await self._finish(tasks, mark, offsets, started)
        assert isinstance(self._offsets, TransactionSink)
        await self._offsets.producer.release()
        return done

    def _snapshot_due(self, task: RuntimeTask, now: float) -> bool:
        return (
            task.snapshots is not None
            and bool(task.changelogs)
            and now - task.last_snapshot >= self._snapshot_interval
        )

    @property
    def busy(self) -> bool:
        """Whether the commit :meth:`begin` started is still waiting for the broker
        (so a :meth:`begin` now would be skipped)."""
        return self._in_flight is not None and not self._in_flight.done()

    @property
    def in_flight(self) -> bool:
        """Whether a commit begun by :meth:`begin` has not been settled yet."""
        return self._in_flight is not None

    async def settle(self, keep_error: bool = False) -> None:
        """Wait for the commit :meth:`begin` started, and raise what it raised (or,
        with ``keep_error``, keep it for the next ``settle``)."""
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            try:
                await in_flight
            except Exception as failed:
                if not keep_error:
                    raise
                self._error = failed
                return
        kept, self._error = self._error, None
        if kept is not None and not keep_error:
            raise kept
        self._error = kept

    async def commit(self, tasks: Sequence[RuntimeTask], closing: bool = False) -> None:
        """Run steps 1-4 of the module docstring for ``tasks`` (RUNNING ones), after the
        commit begun before, if any. ``closing``: the tasks may close after this (a
        rebalance, a shutdown), so at-least-once checkpoints every one that changed.

        Under exactly-once a failure in steps 1-3 aborts the transaction (best effort)
        and raises :class:`TransactionError` (or :class:`FencedError`); the caller
        rewinds the tasks."""
        if not self._offsets.transactional:
            await self.settle()
            await self._commit(tasks, closing)
            return
        await self._transaction(self._settle_and_commit(tasks, closing))

    async def _settle_and_commit(self, tasks: Sequence[RuntimeTask], closing: bool) -> None:
        await self.settle()
        await self._commit(tasks, closing)

    async def _transaction(self, work: Awaitable[None]) -> None:
        """Run ``work`` (a commit's steps); what breaks the transaction aborts it."""
        try:
            await work
        except FencedError:
            raise
        except SourceTopicDeletedError:
            # The producer still retries the offsets of the deleted topic and would not
            # finish an abort; the application stops, and the broker aborts the open
            # transaction at its timeout.
            self.broken = True
            raise
        except (TransactionError, ClientError, ProductionError) as error:
            await self.abort()
            if isinstance(error, TransactionError):
                raise
            raise TransactionAbortedError(f"transaction aborted: {error}") from error

    async def abort(self) -> None:
        """Give up the commit under way: a commit begun in the background is dropped
        (its offsets are not committed; the input is processed again). Abort the open
        transaction; a failed abort is logged (the next InitProducerId or the
        transaction timeout aborts it at the broker). A broken producer is not asked
        again."""
        in_flight, self._in_flight, self._error = self._in_flight, None, None
        if in_flight is not None:
            # Awaited even when done: a failure it ended with is taken, not left for
            # asyncio to report as never retrieved.
            in_flight.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await in_flight
        if isinstance(self._offsets, TransactionSink) and not self.broken:
            try:
                await self._offsets.abort()
            except (TransactionError, FencedError, ClientError) as error:
                self.broken = True
                log.warning("aborting the transaction failed (%s); the broker will abort it", error)

    async def _commit(self, tasks: Sequence[RuntimeTask], closing: bool) -> None:
        started = time.perf_counter()
        mark, offsets = await self._prepare(tasks)
        if await self._finish(tasks, mark, offsets, started) is None:
            return
        # 4. checkpoint the changelog offsets the flushed (and now committed) state
        # covers; under exactly-once, snapshot the stores now and then instead
        now = time.monotonic()
        transactional = self._offsets.transactional
        for task in tasks:
            if not transactional:
                if self._checkpoints.due(task, closing):
                    self._checkpoints.write(task)
                continue
            task.dirty = False
            if self._snapshot_due(task, now):
                assert task.snapshots is not None
                task.snapshots.take(task.executor.stores, task.changelog_offsets)
                task.last_snapshot = now

    async def _prepare(
        self, tasks: Sequence[RuntimeTask]
    ) -> tuple[FlushMark, dict[TopicPartition, int]]:
        """Step 1, and what steps 2 and 3 will cover: the producer's mark and the
        consumed offsets, both taken now."""
        # 1. caches forward (stores sync only for a checkpoint); their output joins the rest
        for task in tasks:
            task.executor.flush(durable=False)
            produced = task.executor.drain()
            if produced:
                await self._producer.send(produced)
        offsets: dict[TopicPartition, int] = {}
        for task in tasks:
            offsets.update(task.offsets_to_commit())
        return self._producer.mark(), offsets

    async def _finish(
        self,
        tasks: Sequence[RuntimeTask],
        mark: FlushMark,
        offsets: dict[TopicPartition, int],
        started: float,
    ) -> bool | None:
        """Steps 2 and 3; ``None`` when a rebalance refused the offsets."""
        transactional = self._offsets.transactional
        # 2. wait for the output up to the mark; hand failures to the production handler.
        # Under exactly-once the offsets join the transaction meanwhile: both need only
        # be done before it ends, and each costs the broker a durable write.
        if isinstance(self._offsets, TransactionSink):
            next_offsets = await self._flush_and_stage(self._offsets, mark, offsets)
            flushed = time.perf_counter()
            offsets_left: Mapping[TopicPartition, int] = {}
        else:
            next_offsets = await self._flush_producer(mark)
            flushed = time.perf_counter()
            offsets_left = offsets
        for task in tasks:
            for tp in task.changelogs.values():
                if tp in next_offsets:
                    task.changelog_offsets[tp] = next_offsets[tp]
        # 3. commit consumed offsets (under exactly-once: with the transaction)
        if offsets or transactional:
            try:
                await self._offsets.commit(offsets_left)
            except ClientError as error:
                if not error.retriable or transactional:
                    raise
                # A rebalance is under way; the new owner replays from the last commit.
                log.warning(
                    "offset commit failed (%s); input since the last commit will be replayed", error
                )
                return None
            for task in tasks:
                task.committed.update({tp: o for tp, o in offsets.items() if tp in task.sources})
        self._metrics.commits.inc()
        ended = time.perf_counter()
        self._metrics.commit_latency.observe(ended - started)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "commit took %.1f ms: flush%s %.1f ms, %s %.1f ms",
                (ended - started) * 1000,
                " and offsets" if transactional else "",
                (flushed - started) * 1000,
                "end of transaction" if transactional else "offsets",
                (ended - flushed) * 1000,
                extra={
                    "commit_ms": (ended - started) * 1000,
                    "ended_ms": (ended - flushed) * 1000,
                    "offsets": len(offsets),
                },
            )
        return True

    async def _flush_and_stage(
        self, sink: TransactionSink, mark: FlushMark, offsets: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int]:
        """Step 2 beside the offsets' staging in the transaction; a failure is raised
        once both are over (the abort that follows must not race either), a fence
        first: nothing of this producer can abort or commit any more."""
        flushed, staged = await asyncio.gather(
            self._flush_producer(mark), sink.stage(offsets), return_exceptions=True
        )
        failures = [o for o in (flushed, staged) if isinstance(o, BaseException)]
        for failure in sorted(failures, key=lambda f: not isinstance(f, FencedError)):
            raise failure
        assert isinstance(flushed, dict)
        return flushed

    async def _flush_producer(self, mark: FlushMark) -> dict[TopicPartition, int]:
        result = await self._producer.flush(mark)
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
            letters = handler.produced(
                failure.topic, failure.partition, failure.records, failure.error
            )
            if letters:
                await self._producer.send(letters)
                again = await self._producer.flush(self._producer.mark())
                if again.failures:
                    first = again.failures[0]
                    raise ProductionError(
                        f"cannot produce dead letters to {first.topic}: {first.error!r}",
                        topic=first.topic,
                        partition=first.partition,
                    ) from first.error
                next_offsets.update(again.next_offsets)
        return next_offsets
