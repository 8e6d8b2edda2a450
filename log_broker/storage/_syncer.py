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
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from ._errors import KafkaStorageError, StorageError
from ._log import PartitionLog

_Waiters = list[tuple[int, "asyncio.Future[None]"]]

# Seconds: a moving average of log syncs above the first moves them to worker threads,
# below the second back onto the event loop.
INLINE_UP_TO_S = 0.001
INLINE_AGAIN_BELOW_S = 0.0005
_WEIGHT = 0.2  # of the newest sync in the moving average


class GroupSyncer:
    """Coalesces ``PartitionLog.sync`` calls from concurrent acks=1/all producers."""

    def __init__(self, *, enabled: bool = True, max_workers: int = 4) -> None:
        self.enabled = enabled
        self.rounds = 0  # completed rounds, for tests and metrics
        self.fsyncs = 0  # log syncs actually run
        self._max_workers = max_workers
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
        if not self.enabled:
            return
        target = log.log_end_offset
        if log.flushed_offset >= target:
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._pending.setdefault(log, []).append((target, future))
        if self._runner is None or self._runner.done():
            self._runner = loop.create_task(self._run())
        # A caller giving up must not cancel the round others are waiting on.
        await asyncio.shield(future)

    async def _run(self) -> None:
        while self._pending:
            round_, self._pending = self._pending, {}
            await asyncio.gather(*(self._sync_log(log, waiters) for log, waiters in round_.items()))
            self.rounds += 1

    async def _sync_log(self, log: PartitionLog, waiters: _Waiters) -> None:
        error: StorageError | None = None
        if log.flushed_offset < max(target for target, _ in waiters):
            try:
                if self.inline:
                    self._timed_sync(log)
                else:
                    if self._executor is None:
                        self._executor = ThreadPoolExecutor(self._max_workers, "fsync")
                    await asyncio.get_running_loop().run_in_executor(
                        self._executor, self._timed_sync, log
                    )
                self.fsyncs += 1
            except StorageError as exc:
                error = exc
            except Exception as exc:  # waiters must never be left hanging
                error = KafkaStorageError(f"fsync of {log!r} failed: {exc}")
        for _, future in waiters:
            if future.done():
                continue
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)

    def _timed_sync(self, log: PartitionLog) -> None:
        """``log.sync()``, its duration folded into the average that picks where the
        next rounds sync (plain float updates: a worker thread may make them)."""
        started = time.perf_counter()
        try:
            log.sync()
        finally:
            took = time.perf_counter() - started
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
