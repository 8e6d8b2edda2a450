"""Restoring stores from their changelogs before a task may process.

One changelog reader (a consumer outside the group) serves every restoring task.

Adding a task, step by step: read the end offset of each of its changelog partitions;
a partition whose restore offset (the checkpointed one) is already at the end needs
nothing; the others are assigned to the reader and positioned at the checkpointed
offset, or at the beginning when there is no checkpoint. A task with nothing left to
read is restored at once. A checkpointed offset beyond the reported end is trusted (with
a warning): some brokers report the end as the last batch's base offset plus one, and
the checkpoint came from the broker's own produce acknowledgements.

Records are applied by whole fetched batches, even past the end offset noted when the
task was added: they are changelog entries all the same, and that way a broker whose
reported end lies inside its last batch still restores the whole batch.

Each :meth:`Restorer.step` reads one round of records, hands them to their stores'
``restore_batch`` and reports the tasks whose every changelog partition reached the end
offset noted when the task was added. Each of those is started on the way out
(``RuntimeTask.restored``): its processors ``init`` only now, on stores that hold the
whole changelog, so what they rebuild from them (pending final-result windows, stream
time) is what the last commit left; the caller then resumes its partitions.

Progress is the reader's position, not the last record's offset plus one: under
exactly-once the reader is read_committed, the end is the last stable offset, and the
offsets of transaction markers and aborted records never come out as records. A
changelog ending in a commit marker would otherwise never count as restored.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ._client import ChangelogReader, TopicPartition
from ._metrics import AppMetrics
from ._standby import apply_changelog
from ._tasks import RuntimeTask

log = logging.getLogger("headrace.streams.runtime.restore")


@dataclass
class _Progress:
    task: RuntimeTask
    store: str
    position: int  # next offset to read; -1 while at "the beginning"
    end: int


class Restorer:
    def __init__(self, reader: ChangelogReader, metrics: AppMetrics, max_records: int) -> None:
        self._reader = reader
        self._metrics = metrics
        self._max = max_records
        self._pending: dict[TopicPartition, _Progress] = {}
        self._ends: dict[str, dict[TopicPartition, int]] = {}
        self._reached: dict[str, dict[TopicPartition, int]] = {}
        self._last_report = 0.0

    @property
    def busy(self) -> bool:
        return bool(self._pending)

    def remaining(self) -> int:
        return sum(max(0, p.end - max(p.position, 0)) for p in self._pending.values())

    async def add(self, task: RuntimeTask) -> bool:
        """Start restoring ``task``; ``True`` when it needed nothing and is now RUNNING
        (its processors started)."""
        ends = await self._reader.end_offsets(list(task.changelogs.values()))
        self._ends[task.id] = ends
        todo: dict[TopicPartition, _Progress] = {}
        for store, tp in task.changelogs.items():
            end = ends.get(tp, 0)
            start = task.restore_from.get(tp)
            if start is not None and start > end:
                log.warning(
                    "task %s: checkpoint %d of %s-%d is past the reported end %d",
                    task.id,
                    start,
                    tp[0],
                    tp[1],
                    end,
                )
            if start is not None and start >= end:
                continue
            if start is None and end == 0:
                continue
            todo[tp] = _Progress(task, store, -1 if start is None else start, end)
            self._metrics.restore_remaining.labels(task.id, store).set(end - (start or 0))
        if not todo:
            self._finish(task)
            return True
        self._pending.update(todo)
        await self._reposition()
        log.info(
            "task %s: restoring %d records from %d changelog partitions",
            task.id,
            self.remaining(),
            len(todo),
        )
        return False

    def drop(self, task: RuntimeTask) -> None:
        """Stop restoring ``task`` (its partitions were revoked)."""
        for tp in [tp for tp, p in self._pending.items() if p.task is task]:
            del self._pending[tp]
        self._ends.pop(task.id, None)
        self._reached.pop(task.id, None)
        self._reader.assign(list(self._pending))

    async def _reposition(self) -> None:
        # assign() replaces the reader's whole assignment and forgets positions.
        self._reader.assign(list(self._pending))
        for tp, progress in self._pending.items():
            await self._reader.seek(tp, None if progress.position < 0 else progress.position)

    async def step(self, timeout_ms: int) -> list[RuntimeTask]:
        """Restore one round of records; return the tasks that finished restoring."""
        if not self._pending:
            return []
        fetched = await self._reader.poll(timeout_ms, self._max)
        touched: set[str] = set()
        for tp, records in fetched.items():
            progress = self._pending.get(tp)
            if progress is None or not records:
                continue
            task = progress.task
            apply_changelog(
                task.executor.stores.get(progress.store), progress.store, task.id, records
            )
            progress.position = records[-1][0] + 1
            progress.task.restored_records += len(records)
            self._metrics.restored_records.labels(progress.task.id, progress.store).inc(
                len(records)
            )
            self._metrics.restore_remaining.labels(progress.task.id, progress.store).set(
                max(0, progress.end - progress.position)
            )
            touched.add(progress.task.id)
        for tp, progress in self._pending.items():
            position = await self._reader.position(tp)
            if position is not None and position > progress.position:
                progress.position = position
        done_tps = [tp for tp, p in self._pending.items() if p.position >= p.end]
        finished: dict[str, RuntimeTask] = {}
        for tp in done_tps:
            progress = self._pending.pop(tp)
            finished[progress.task.id] = progress.task
            self._reached.setdefault(progress.task.id, {})[tp] = progress.position
        still = {p.task.id for p in self._pending.values()}
        done = [t for tid, t in finished.items() if tid not in still]
        for task in done:
            self._finish(task, self._reached.pop(task.id, {}))
        if done_tps:
            self._reader.assign(list(self._pending))
            await self._reposition()
        now = time.monotonic()
        if self._pending and touched and now - self._last_report >= 1.0:
            self._last_report = now
            log.info("restoring: %d changelog records to go", self.remaining())
        return done

    def _finish(self, task: RuntimeTask, reached: dict[TopicPartition, int] | None = None) -> None:
        ends = self._ends.pop(task.id, {})
        # The checkpoint may stand beyond a reported end; never move a task's offsets back.
        merged = {
            tp: max(o, task.changelog_offsets.get(tp, 0), (reached or {}).get(tp, 0))
            for tp, o in ends.items()
        }
        task.restored(merged)
        log.info("task %s restored %d records; running", task.id, task.restored_records)
