"""Standby replicas: warm copies of other instances' stateful tasks.

A :class:`StandbyTask` holds the stores of a task that runs elsewhere and keeps them
current by applying the task's changelogs, as restoring does, but without end: it never
processes input and never writes. When the group hands the task to this instance, the
task manager turns the standby into the active task with its stores as they are
(``TaskManager.open``): only the changelog written since the standby's last fetch is left
to restore, instead of all of it. Assignment prefers members whose local state is most
caught up (``_assignor.py``), so a dead instance's tasks land where their standbys are.

A standby's executor stays RESTORING (``TaskExecutor.open_stores``) for as long as it
is a standby: its stores are open and take changelog records, and no processor is ever
built, so nothing runs on state that is not the active task's committed one. Promoted,
it restores what is left like any opening task, and only then starts its processors
(``RuntimeTask.restored``), which rebuild what they keep from the caught-up stores.

One :class:`StandbyUpdater` serves every standby of an instance with a changelog reader
of its own, apart from the restorer's: a standby never waits behind a restore, and a
restore never waits behind standbys. Under exactly-once the reader is read_committed, so
a standby's stores only ever hold committed changelog records.

**Checkpoints.** A standby writes its task's checkpoint (flush the stores, then the
offsets it applied up to) at most once per ``checkpoint_interval`` and when it closes, so
a restart, or the assignor through the offset sums it reports, finds the standby's state
trusted. Stores may run ahead of their checkpoint after a crash; that is safe because
applying a changelog is idempotent: every record puts the latest value of its key, so
applying again from the checkpointed offset ends in the same state.
"""

from __future__ import annotations

import logging
import pathlib
import time
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any

from headrace.state import TaskCheckpoint

from .._task import TaskExecutor
from ._client import ChangelogReader, TopicPartition
from ._errors import RestoreError
from ._metrics import AppMetrics

log = logging.getLogger("headrace.streams.runtime.standby")

# (key, value) or (key, value, timestamp) of an (offset, key, value, timestamp) record,
# cut without a Python call per record.
_KEY_VALUE = itemgetter(1, 2)
_KEY_VALUE_TIMESTAMP = itemgetter(1, 2, 3)


def apply_changelog(
    store: object, store_name: str, task_id: str, records: Sequence[tuple[Any, ...]]
) -> None:
    """Write changelog ``(offset, key, value, timestamp)`` records into ``store``, as
    restoring and standbys both do. Most stores take ``(key, value)``; a store whose
    versions start at their record's timestamp (``restores_with_timestamps``, a
    versioned store) takes ``(key, value, timestamp)``."""
    restore = getattr(store, "restore_batch", None)
    if restore is None:
        raise RestoreError(f"store {store_name} of task {task_id} cannot restore")
    fields = (
        _KEY_VALUE_TIMESTAMP if getattr(store, "restores_with_timestamps", False) else _KEY_VALUE
    )
    restore(list(map(fields, records)))


def describe_offsets(offsets: Mapping[TopicPartition, int | None]) -> dict[str, int | str]:
    """``{"topic-partition": offset}`` for logs, ``"beginning"`` for ``None``."""
    return {f"{t}-{p}": ("beginning" if o is None else o) for (t, p), o in offsets.items()}


class StandbyTask:
    """The stores of task ``task_id`` and, per changelog partition, the next offset to
    apply (``None``: from the beginning, nothing applied yet)."""

    def __init__(
        self,
        task_id: str,
        executor: TaskExecutor,
        changelogs: Mapping[str, TopicPartition],
        state_dir: pathlib.Path,
        positions: Mapping[TopicPartition, int | None],
    ) -> None:
        self.id = task_id
        self.executor = executor
        self.changelogs = dict(changelogs)  # store -> changelog partition
        self.store_of = {tp: store for store, tp in self.changelogs.items()}
        self.state_dir = state_dir
        self.positions: dict[TopicPartition, int | None] = dict(positions)
        self.applied = 0
        self._checkpointed = self._known()
        self.closed = False

    def _known(self) -> dict[TopicPartition, int]:
        return {tp: o for tp, o in self.positions.items() if o is not None}

    def apply(
        self, tp: TopicPartition, records: list[tuple[int, bytes, bytes | None, int]]
    ) -> None:
        name = self.store_of[tp]
        apply_changelog(self.executor.stores.get(name), name, self.id, records)
        self.positions[tp] = records[-1][0] + 1
        self.applied += len(records)

    def offset_sum(self) -> int:
        return sum(self._known().values())

    def checkpoint(self) -> None:
        """Flush the stores, then record the offsets they cover (if they moved)."""
        offsets = self._known()
        if offsets == self._checkpointed:
            return
        for store in self.executor.stores.values():
            store.flush()
        TaskCheckpoint(self.state_dir).write_checkpoint(offsets)
        self._checkpointed = offsets

    def close(self) -> None:
        """Checkpoint, then close the stores; idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            self.checkpoint()
        finally:
            self.executor.close()

    def release(self) -> TaskExecutor:
        """Hand the open stores to the active task that replaces this standby; the
        executor is still RESTORING, its processors not built."""
        self.closed = True
        return self.executor


class StandbyUpdater:
    """Keeps every standby of the instance current; see the module docstring."""

    def __init__(
        self,
        reader: ChangelogReader,
        metrics: AppMetrics,
        max_records: int,
        checkpoint_interval: float = 1.0,
    ) -> None:
        self._reader = reader
        self._metrics = metrics
        self._max = max_records
        self._interval = checkpoint_interval
        self._last_checkpoint = self._last_position = 0.0
        self.tasks: dict[str, StandbyTask] = {}
        self._by_tp: dict[TopicPartition, StandbyTask] = {}

    async def add(self, task: StandbyTask) -> None:
        self.tasks[task.id] = task
        self._by_tp.update({tp: task for tp in task.changelogs.values()})
        await self._reposition()
        log.info("standby %s: updating from %s", task.id, describe_offsets(task.positions))

    async def remove(self, task_id: str) -> StandbyTask | None:
        """Stop updating ``task_id``; the caller closes or promotes the task returned."""
        task = self.tasks.pop(task_id, None)
        if task is None:
            return None
        for tp in task.changelogs.values():
            self._by_tp.pop(tp, None)
        await self._reposition()
        return task

    async def _reposition(self) -> None:
        # assign() replaces the reader's whole assignment and forgets every position.
        self._reader.assign(list(self._by_tp))
        for tp, task in self._by_tp.items():
            await self._reader.seek(tp, task.positions.get(tp))

    async def step(self, timeout_ms: int = 0) -> int:
        """Apply what the reader has fetched; return how many records were applied."""
        if not self.tasks:
            return 0
        fetched = await self._reader.poll(timeout_ms, self._max)
        applied = 0
        for tp, records in fetched.items():
            task = self._by_tp.get(tp)
            if task is None or not records:
                continue
            task.apply(tp, records)
            applied += len(records)
            self._metrics.standby_records.labels(task.id, task.store_of[tp]).inc(len(records))
        now = time.monotonic()
        if applied or now - self._last_position >= 0.5:
            # Past transaction markers and aborted records, which never come out as
            # records: without this a changelog ending in a marker never looks caught up.
            self._last_position = now
            for tp, task in self._by_tp.items():
                position = await self._reader.position(tp)
                current = task.positions.get(tp)
                if position is not None and (current is None or position > current):
                    task.positions[tp] = position
        return applied

    def checkpoint(self, force: bool = False) -> None:
        """Checkpoint every standby, at most once per interval unless ``force``."""
        now = time.monotonic()
        if not force and now - self._last_checkpoint < self._interval:
            return
        self._last_checkpoint = now
        for task in self.tasks.values():
            task.checkpoint()

    def offset_sums(self) -> dict[str, int]:
        return {task_id: task.offset_sum() for task_id, task in self.tasks.items()}

    def close_all(self) -> None:
        for task in list(self.tasks.values()):
            try:
                task.close()
            except Exception as error:
                log.error("closing standby %s failed: %s", task.id, error)
        self.tasks.clear()
        self._by_tp.clear()
