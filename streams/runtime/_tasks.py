"""Tasks as the runtime hosts them, and the manager that opens and closes them.

A :class:`RuntimeTask` wraps one :class:`~streams.TaskExecutor` with what the runtime
tracks for it: the next offset to commit per source partition, the changelog offsets its
flushed state covers, and its checkpoint file. Its lifecycle, as Kafka Streams' task
states (CREATED -> RESTORING -> RUNNING)::

    RESTORING --restored()--> RUNNING --close()--> CLOSED
        └──────────────close()──────────────────────┘

A task opens RESTORING with its executor's stores open and no processor built
(``TaskExecutor.open_stores``). While RESTORING its source partitions stay paused and
nothing of the runtime touches it but the restorer: it is not processed, punctuated,
committed, checkpointed or snapshotted, its stores are neither measured nor answered
over HTTP, and a close closes its stores only. :meth:`RuntimeTask.restored` is the one
way out: once every changelog partition reached its end, it starts the executor
(``TaskExecutor.start``), so the processors ``init`` on the restored stores and rebuild
from them what they keep (``streams/_lifecycle.py`` lists what), with the wall clock of
that moment; then the task is RUNNING and its partitions are resumed.

Opening a task, step by step: read its checkpoint; if there is none, or it cannot be
read, wipe the task's state directory, because local state without a checkpoint may hold
writes the changelog never got; build the executor and open its stores; note, per
logged store, the changelog offset to restore from (the checkpointed one, or the
beginning; always the beginning for an in-memory store, which starts empty). A standby
taken over (``_standby.py``) brings its open stores instead, and restores from where it
got to.

Under exactly-once the checkpoint exists only after a clean close; it is deleted as the
task opens, since the live stores run ahead of it from the first record on. Without one,
the newest snapshot (``_snapshots.py``) replaces the live stores and its offsets are
where restoring starts; without a snapshot, the stores are rebuilt from the beginning.
``_commit.py`` argues why each of these states matches the committed changelog; since
processors start only after the restore, what they rebuild matches it too.
"""

from __future__ import annotations

import enum
import logging
import pathlib
import shutil
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from headrace.state import CHECKPOINT_FILE, CheckpointError, StoreIOError, TaskCheckpoint

from .._config import StreamsConfig
from .._errors import IllegalStateTransition
from .._lifecycle import Lifecycle, TaskState
from .._record import ConsumedRecord, ProducedRecord
from .._task import TaskExecutor
from .._topology import Topology
from ._client import TopicPartition
from ._partition_groups import parse_task_id
from ._snapshots import TaskSnapshots
from ._standby import StandbyTask, describe_offsets

log = logging.getLogger("headrace.streams.runtime.tasks")


class RuntimeTaskState(enum.Enum):
    RESTORING = "restoring"
    RUNNING = "running"
    CLOSED = "closed"


RUNTIME_TASK_TRANSITIONS: Mapping[RuntimeTaskState, frozenset[RuntimeTaskState]] = {
    RuntimeTaskState.RESTORING: frozenset({RuntimeTaskState.RUNNING, RuntimeTaskState.CLOSED}),
    RuntimeTaskState.RUNNING: frozenset({RuntimeTaskState.CLOSED}),
    RuntimeTaskState.CLOSED: frozenset(),
}


class RuntimeTask:
    def __init__(
        self,
        task_id: str,
        executor: TaskExecutor,
        sources: tuple[TopicPartition, ...],
        changelogs: Mapping[str, TopicPartition],
        state_dir: pathlib.Path,
        restore_from: Mapping[TopicPartition, int | None],
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        if executor.state is not TaskState.RESTORING:
            # Its processors start in ``restored``, on the restored stores, and not before.
            raise IllegalStateTransition(
                f"task {task_id}: its executor is {executor.state.name}, must be RESTORING "
                "(stores open, processors not started)"
            )
        self.id = task_id
        self._clock_ms = clock_ms
        self.executor = executor
        self.sources = sources
        self.changelogs = dict(changelogs)  # store -> changelog partition
        self.state_dir = state_dir
        self.restore_from = dict(restore_from)
        self.next_offsets: dict[TopicPartition, int] = {}
        self.committed: dict[TopicPartition, int] = {}
        self.changelog_offsets: dict[TopicPartition, int] = {
            tp: o for tp, o in restore_from.items() if o is not None
        }
        # What the checkpoint on disk names (``_checkpoints.py`` counts from there).
        self.checkpointed = dict(self.changelog_offsets)
        self.restored_records = 0
        # Exactly-once: snapshots of the stores, and whether anything was processed
        # since the last commit (a clean close may checkpoint only a clean task).
        self.snapshots: TaskSnapshots | None = None
        self.last_snapshot = 0.0
        self.dirty = False
        self._lifecycle = Lifecycle(
            f"task {task_id}", RuntimeTaskState.RESTORING, RUNTIME_TASK_TRANSITIONS
        )

    @property
    def state(self) -> RuntimeTaskState:
        return self._lifecycle.state

    @property
    def running(self) -> bool:
        return self._lifecycle.state is RuntimeTaskState.RUNNING

    def restored(self, end_offsets: Mapping[TopicPartition, int]) -> None:
        """RESTORING -> RUNNING: every store holds its changelog up to ``end_offsets``;
        start the processors on them (the executor's RESTORING -> RUNNING). A processor
        whose ``init`` fails leaves the task RESTORING, to be closed."""
        self._lifecycle.require(RuntimeTaskState.RESTORING)
        self.executor.start(None if self._clock_ms is None else self._clock_ms())
        self.changelog_offsets.update(end_offsets)
        self._lifecycle.move(RuntimeTaskState.RUNNING)

    def process(self, tp: TopicPartition, records: list[ConsumedRecord]) -> list[ProducedRecord]:
        """Feed one partition's records; return what the task produced."""
        executor = self.executor
        self.dirty = True
        executor.process_partition(tp[0], tp[1], records)
        self.next_offsets[tp] = records[-1][2] + 1
        return executor.drain()

    def forward_cached(self) -> list[ProducedRecord]:
        """What the task's caches held, forwarded now (``TaskExecutor.flush_caches``)."""
        self.executor.flush_caches()
        return self.executor.drain()

    def offsets_to_commit(self) -> dict[TopicPartition, int]:
        """The next offset per source partition, held back to the lowest record still
        in an async stage (``streams/_async.py``), where it moved since the last commit."""
        position = self.executor.commit_offset
        out: dict[TopicPartition, int] = {}
        for tp, o in self.next_offsets.items():
            o = position(tp[0], tp[1], o)
            if self.committed.get(tp) != o:
                out[tp] = o
        return out

    def write_checkpoint(self) -> None:
        if self.changelog_offsets:
            TaskCheckpoint(self.state_dir).write_checkpoint(self.changelog_offsets)
            self.checkpointed = dict(self.changelog_offsets)

    def close(self) -> None:
        """Close the executor. Under exactly-once a task with nothing processed since
        its last commit is clean: its stores hold exactly the committed changelog, so a
        checkpoint is written after the stores are closed and the next open trusts them."""
        if self._lifecycle.state is RuntimeTaskState.CLOSED:
            return
        running = self.running
        clean = self.snapshots is not None and running and not self.dirty
        if clean:
            # Commits do not sync the stores under exactly-once; the checkpoint below
            # trusts them, so they reach the disk first.
            self.executor.flush()
        self._lifecycle.move(RuntimeTaskState.CLOSED)
        self.executor.close()
        if clean:
            self.write_checkpoint()


class TaskManager:
    """Opens the tasks of assigned partitions and closes those of revoked ones."""

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig,
        state_dir: pathlib.Path,
        sources: Mapping[int, tuple[str, ...]],
        changelogs: Mapping[int, Mapping[str, str]],
        partitions_for: Callable[[str], int],
        clock_ms: Callable[[], int],
        exactly_once: bool = False,
        global_stores: Mapping[str, Any] | None = None,
        wake: Callable[[], None] | None = None,
    ) -> None:
        self._exactly_once = exactly_once
        self._wake = wake  # a task's async results are ready (``_async_work.py``)
        # Read by every task, owned by the instance's global task (``_global.py``).
        self._global_stores = dict(global_stores or {})
        self._topology = topology
        self._config = config
        self._root = state_dir
        self._sources = sources
        self._changelogs = changelogs
        self._partitions_for = partitions_for
        self._clock_ms = clock_ms
        self.tasks: dict[str, RuntimeTask] = {}
        self.by_partition: dict[TopicPartition, RuntimeTask] = {}

    def task_dir(self, task_id: str) -> pathlib.Path:
        return self._root / self._config.application_id / task_id

    def local_state(self) -> dict[str, int]:
        """Per task with state on this machine (a checkpoint, or open here), the sum of
        the changelog offsets that state covers: the assignor prefers the most caught up."""
        sums: dict[str, int] = {}
        app_dir = self._root / self._config.application_id
        if app_dir.is_dir():
            for d in app_dir.iterdir():
                if "_" not in d.name or not (d / CHECKPOINT_FILE).is_file():
                    continue
                try:
                    sums[d.name] = sum(TaskCheckpoint(d).read_checkpoint().values())
                except (CheckpointError, StoreIOError):
                    continue
        for task in self.tasks.values():
            sums[task.id] = sum(task.changelog_offsets.values())
        return sums

    def task_of(self, tp: TopicPartition) -> str | None:
        for sub, topics in self._sources.items():
            if tp[0] in topics:
                return f"{sub}_{tp[1]}"
        return None

    def open(
        self, assigned: Iterable[TopicPartition], standbys: Mapping[str, StandbyTask] | None = None
    ) -> list[RuntimeTask]:
        """Open a task for every task id among ``assigned`` not open yet; a task with a
        standby among ``standbys`` takes over the standby's stores (the caller stops
        updating that standby first)."""
        wanted: dict[str, list[TopicPartition]] = {}
        for tp in assigned:
            name = self.task_of(tp)
            if name is not None:
                wanted.setdefault(name, []).append(tp)
        opened: list[RuntimeTask] = []
        for task_id, tps in sorted(wanted.items()):
            if task_id in self.tasks:
                continue
            standby = (standbys or {}).get(task_id)
            sources = tuple(sorted(tps))
            task = self._promote(standby, sources) if standby else self._open(task_id, sources)
            self.tasks[task_id] = task
            for tp in task.sources:
                self.by_partition[tp] = task
            opened.append(task)
        return opened

    def open_standby(self, task_id: str) -> StandbyTask:
        """Open the stores of ``task_id`` to be kept current from its changelogs."""
        executor, changelogs, positions, _origin = self._open_stores(task_id, standby=True)
        return StandbyTask(task_id, executor, changelogs, self.task_dir(task_id), positions)

    def _open(self, task_id: str, sources: tuple[TopicPartition, ...]) -> RuntimeTask:
        executor, changelogs, restore_from, origin = self._open_stores(task_id)
        log.info(
            "task %s opened; restoring %s%s",
            task_id,
            describe_offsets(restore_from) or "nothing",
            f" (from the {origin})" if origin else "",
        )
        return self._runtime_task(task_id, executor, sources, changelogs, restore_from)

    def _promote(self, standby: StandbyTask, sources: tuple[TopicPartition, ...]) -> RuntimeTask:
        """The standby's open stores become the active task's: restoring starts where the
        standby got to. Under exactly-once its checkpoint goes first, as in ``_open``:
        the active stores run ahead of it from the first record on."""
        executor = standby.release()
        if self._exactly_once:
            TaskCheckpoint(standby.state_dir).delete_checkpoint()
        log.info(
            "task %s taken over from its standby (%d changelog records applied); restoring from %s",
            standby.id,
            standby.applied,
            describe_offsets(standby.positions),
        )
        return self._runtime_task(
            standby.id, executor, sources, standby.changelogs, standby.positions
        )

    def _runtime_task(
        self,
        task_id: str,
        executor: TaskExecutor,
        sources: tuple[TopicPartition, ...],
        changelogs: Mapping[str, TopicPartition],
        restore_from: Mapping[TopicPartition, int | None],
    ) -> RuntimeTask:
        directory = self.task_dir(task_id)
        task = RuntimeTask(
            task_id, executor, sources, changelogs, directory, restore_from, self._clock_ms
        )
        if self._exactly_once:
            snapshots = TaskSnapshots(directory)
            if snapshots.supported(executor.stores, changelogs):
                task.snapshots = snapshots
            else:
                # Stores a snapshot cannot capture: a crash means rebuilding from the changelog.
                snapshots.discard()
        return task

    def _open_stores(
        self, task_id: str, standby: bool = False
    ) -> tuple[TaskExecutor, dict[str, TopicPartition], dict[TopicPartition, int | None], str]:
        """Build the executor of ``task_id`` and open its stores on the state its
        directory holds (its processors start once restored, in
        ``RuntimeTask.restored``; a standby's never do); return it, its changelogs, the
        offset to restore each from (``None``: the beginning) and where those offsets
        came from (``""``: nowhere).

        Under exactly-once a standby keeps the checkpoint: its stores only ever take
        committed changelog records, so they never run ahead of what it names."""
        sub, partition = parse_task_id(task_id)
        directory = self.task_dir(task_id)
        try:
            checkpointed = TaskCheckpoint(directory).read_checkpoint()
        except (CheckpointError, StoreIOError) as error:
            log.warning(
                "task %s: unusable checkpoint (%s); rebuilding from changelog", task_id, error
            )
            checkpointed = {}
        origin = "checkpoint"
        if self._exactly_once:
            if not checkpointed:
                checkpointed = TaskSnapshots(directory).install()
                origin = "snapshot"
            elif not standby:
                TaskCheckpoint(directory).delete_checkpoint()
        elif not checkpointed and directory.exists():
            shutil.rmtree(directory)
        executor = TaskExecutor(
            self._topology,
            sub,
            partition,
            self._config,
            state_dir=self._root,
            wall_clock_ms=self._clock_ms(),
            partitions_for=self._partitions_for,
            global_stores=self._global_stores,
            wake=self._wake,
        )
        try:
            executor.open_stores()
        except BaseException:
            executor.close()  # the stores opened before the one that failed
            raise
        changelogs = {
            store: (topic, partition) for store, topic in self._changelogs.get(sub, {}).items()
        }
        restore_from = {
            tp: checkpointed.get(tp)
            if getattr(executor.stores.get(store), "persistent", True)
            else None
            for store, tp in changelogs.items()
        }
        return executor, changelogs, restore_from, origin if checkpointed else ""

    def revoked(self, revoked: Iterable[TopicPartition]) -> list[RuntimeTask]:
        """The open tasks that lose a partition in ``revoked`` (they are not closed here)."""
        hit = {self.by_partition[tp].id for tp in revoked if tp in self.by_partition}
        return [self.tasks[t] for t in sorted(hit)]

    def forget(self, tasks: Iterable[RuntimeTask]) -> None:
        for task in tasks:
            self.tasks.pop(task.id, None)
            for tp in task.sources:
                if self.by_partition.get(tp) is task:
                    del self.by_partition[tp]

    def running(self) -> list[RuntimeTask]:
        return [t for t in self.tasks.values() if t.running]
