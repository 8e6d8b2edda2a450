"""Group commit: one fsync answers every produce request that arrived before it.

A request for durability joins the *next* round; a round takes all logs with waiters,
syncs each once, and wakes their waiters. While one round runs, new requests gather
for the following one, so under load every fsync covers many requests from many
connections, and with no load a request waits for one fsync only.

Where the syncs run: on a disk that syncs in a fraction of a millisecond, handing each
to a worker thread costs more than the sync itself (a thread wake-up, the GIL, a
wake-up of the event loop), and that cost lands on every acknowledged produce: at
17,000 small produces a second beside a client on two cores, the produce p99 was 27 ms
with worker threads and 16 ms with the syncs on the event loop (BENCHMARKS.md). So a
round syncs on the event loop while syncs stay quick, and in worker threads once they
are slow (a loaded or remote disk), where the loop keeps serving other requests
meanwhile. The choice follows a moving average of measured sync times, with a gap
between the two thresholds so that it does not flap.

Many partitions: a round over 1,000 logs is 1,000 fsyncs. They go to the worker threads
in a few slices (one hand-off per thread, not one per log: a hand-off per log cost the
event loop more than the produce requests themselves did), the slices running side by
side, since a disk completes concurrent flushes in about the time of one; and only a
round whose expected length fits the inline budget stays on the loop.

The GIL: ``os.fsync`` gives the GIL up for one file and must take it back after; at
1,000 partitions the fsync threads waited about three times as long for the GIL as for
the disk (BENCHMARKS.md). So a slice's files are synced by one call that gives the GIL
up once for all of them (``_fsyncs.sync_files``, in C where built), from native threads
side by side, and a round needs a few slices, not a thread per fsync. Without the C
extension each slice syncs its files one after another, so a round keeps one slice per
worker thread as before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from . import _fsyncs
from ._errors import KafkaStorageError, StorageError
from ._log import PartitionLog, SyncPlan

_Waiters = list[tuple[int, "asyncio.Future[None]"]]

# Seconds: a moving average of log syncs above the first moves them to worker threads,
# below the second back onto the event loop.
INLINE_UP_TO_S = 0.001
INLINE_AGAIN_BELOW_S = 0.0005
_WEIGHT = 0.2  # of the newest sync in the moving average
# Worker threads a round is split over when one slice's fsyncs run side by side in C:
# each takes the GIL once for its whole slice.
COMPILED_SLICES = 2


class GroupSyncer:
    """Coalesces ``PartitionLog.sync`` calls from concurrent acks=1/all producers."""

    def __init__(
        self, *, enabled: bool = True, max_workers: int = 32, slices: int | None = None
    ) -> None:
        """``max_workers``: how many fsyncs may run at once; ``slices``: how many worker
        threads share a round (by default one per fsync at once without the C
        extension, ``COMPILED_SLICES`` with it, each syncing its files side by side)."""
        self.enabled = enabled
        self.rounds = 0  # completed rounds, for tests and metrics
        self.fsyncs = 0  # log syncs actually run
        compiled = _fsyncs.compiled()
        if slices is None:
            slices = min(COMPILED_SLICES, max_workers) if compiled else max_workers
        self._slices = slices
        # Native threads per slice: the compiled sync runs a slice's files side by side.
        self._threads = -(-max_workers // slices) if compiled else 1
        self._executor: ThreadPoolExecutor | None = None
        self._pending: dict[PartitionLog, _Waiters] = {}
        self._runner: asyncio.Task[None] | None = None
        self.sync_seconds = 0.0  # moving average of one log sync
        self.syncs, self.sync_seconds_total = 0, 0.0  # for the broker's metrics
        self.inline = True  # whether rounds sync on the event loop (module docstring)

    async def sync(self, log: PartitionLog) -> None:
        """Return once an fsync of ``log`` has covered everything appended before now.

        Returns at once when fsync is disabled or the log is already flushed that far.
        A failed fsync raises ``KafkaStorageError`` to every waiter of that round.
        """
        error = (await self.sync_many((log,))).get(log)
        if error is not None:
            raise error

    async def sync_many(self, logs: Iterable[PartitionLog]) -> dict[PartitionLog, StorageError]:
        """Return once fsyncs have covered everything appended to each of ``logs``
        before now; the logs whose fsync failed, with the error each got.

        One wait for all of them: a produce request touching 1,000 partitions makes
        1,000 waiters, not 1,000 tasks.
        """
        if not self.enabled:
            return {}
        loop = asyncio.get_running_loop()
        waiting: list[tuple[PartitionLog, asyncio.Future[None]]] = []
        for log in dict.fromkeys(logs):
            target = log.log_end_offset
            if log.flushed_offset >= target:
                continue
            future: asyncio.Future[None] = loop.create_future()
            self._pending.setdefault(log, []).append((target, future))
            waiting.append((log, future))
        if not waiting:
            return {}
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._run())
        # A caller giving up must not cancel the round others are waiting on.
        outcomes = await asyncio.shield(
            asyncio.gather(*(future for _, future in waiting), return_exceptions=True)
        )
        failed: dict[PartitionLog, StorageError] = {}
        for (log, _), outcome in zip(waiting, outcomes, strict=True):
            if isinstance(outcome, StorageError):
                failed[log] = outcome
            elif isinstance(outcome, BaseException):
                raise outcome
        return failed

    async def _run(self) -> None:
        while self._pending:
            round_, self._pending = self._pending, {}
            due = [
                log
                for log, waiters in round_.items()
                if log.flushed_offset < max(target for target, _ in waiters)
            ]
            errors = await self._sync_logs(due) if due else {}
            self.fsyncs += len(due) - len(errors)
            for log, waiters in round_.items():
                error = errors.get(log)
                for _, future in waiters:
                    if future.done():
                        continue
                    if error is None:
                        future.set_result(None)
                    else:
                        future.set_exception(error)
            self.rounds += 1

    async def _sync_logs(self, logs: list[PartitionLog]) -> dict[PartitionLog, StorageError]:
        """Sync each of ``logs`` once: on the loop if the whole round is expected to be
        quick, otherwise in slices across the worker threads."""
        if self.inline and len(logs) * self.sync_seconds <= INLINE_UP_TO_S:
            return self._sync_slice(logs)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._slices, "fsync")
        loop = asyncio.get_running_loop()
        slices = min(self._slices, len(logs))
        results = await asyncio.gather(
            *(
                loop.run_in_executor(self._executor, self._sync_slice, logs[i::slices])
                for i in range(slices)
            )
        )
        return {log: error for errors in results for log, error in errors.items()}

    def _sync_slice(self, logs: list[PartitionLog]) -> dict[PartitionLog, StorageError]:
        """Sync ``logs`` with one call for all their files (one GIL release where the C
        extension is built); each log's error, if any, is its own."""
        errors: dict[PartitionLog, StorageError] = {}
        plans: list[tuple[PartitionLog, SyncPlan]] = []
        for log in logs:
            try:
                plan = log.begin_sync()
            except Exception as exc:  # waiters must never be left hanging
                errors[log] = KafkaStorageError(f"fsync of {log!r} failed: {exc}")
                continue
            if plan is not None:
                plans.append((log, plan))
        try:
            outcomes = _fsyncs.sync_files(
                [op for _, plan in plans for op in plan.ops], self._threads
            )
            failure: BaseException | None = None
        except BaseException as exc:  # each plan must still be finished, its lock freed
            outcomes, failure = [], exc
        at = 0
        for log, plan in plans:
            mine, at = outcomes[at : at + len(plan.ops)], at + len(plan.ops)
            error = failure or next((o.error for o in mine if o.error is not None), None)
            try:
                log.finish_sync(plan, error)
            except StorageError as exc:
                errors[log] = exc
            except Exception as exc:  # waiters must never be left hanging
                errors[log] = KafkaStorageError(f"fsync of {log!r} failed: {exc}")
            if mine:
                self._note_sync(mine[0].started, sum(o.seconds for o in mine))
        return errors

    def _note_sync(self, started: float, took: float) -> None:
        """Fold one log sync's duration (its files' fsyncs) into the average that picks
        where the next rounds sync (plain float updates: a worker thread may make them);
        ``started`` is on ``time.monotonic``'s clock."""
        self.syncs += 1
        self.sync_seconds_total += took
        average = self.sync_seconds = self.sync_seconds + _WEIGHT * (took - self.sync_seconds)
        if self.inline and average > INLINE_UP_TO_S:
            self.inline = False
        elif not self.inline and average < INLINE_AGAIN_BELOW_S:
            self.inline = True

    async def drain(self) -> None:
        """Wait until no round is running or pending."""
        while self._runner is not None and not self._runner.done():
            await asyncio.shield(self._runner)

    def close(self) -> None:
        """Release the worker threads (waits for an fsync in progress)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
