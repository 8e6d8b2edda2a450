"""Global stores in the runtime: every instance keeps the whole of each global topic.

One :class:`GlobalStores` per instance runs the topology's global sub-topology (task
``global``, ``TaskExecutor`` with sub-topology id ``-1``) over every partition of the
global topics, read by a consumer outside the group (read_committed under
exactly-once). The topic is the stores' changelog: they log nothing, and what this
instance read of the topic is recorded in a checkpoint under
``<state_dir>/<application id>/global/``. Its lifecycle::

    CREATED --bootstrap()--> BOOTSTRAPPING --> RUNNING --close()--> CLOSED
       └─────────────────────────┴──────────────close()──────────────┘

:meth:`GlobalStores.bootstrap`, step by step, and why in this order:

1. Read the checkpoint. Without one (or an unreadable one), wipe the directory: stores
   without a checkpoint cannot say how much of the topic they hold.
2. Build the executor and start it at once (``TaskExecutor.init``: stores, then
   processors). Unlike a stream task's, the global task has no changelog to restore
   before its processors start: its topic is its input, read through those processors
   in step 4, which only put each record in its store and keep nothing else. An
   in-memory store starts empty, so with one the whole topic is read again whatever
   the checkpoint says.
3. Assign every partition of the global topics; seek each to its checkpointed offset,
   or to the beginning.
4. Note the end offsets, then read and process until every partition's position
   reached its end. Progress is the reader's position, not the last record's offset
   plus one, so that a topic ending in a transaction marker counts as read.
5. Flush the stores and write the checkpoint.

The application bootstraps before it joins its group, so no stream task opens (or
reads a global store) before the global stores hold the topics up to their ends.
Afterwards :meth:`poll` runs in every round of the processing loop, so updates reach
every instance while it runs; :meth:`checkpoint` runs after each commit.

Re-reading a stretch of the topic twice is harmless: a global store applies each record
as an upsert of the record's key. So a checkpoint may lag the stores (a crash after
processing, before the checkpoint) but never lead them: it is written after the flush.
Under exactly-once the stores only ever see committed records (the reader is
read_committed), so their checkpoint needs no transaction.
"""

from __future__ import annotations

import enum
import logging
import pathlib
import shutil
import time
from collections.abc import Mapping
from typing import Any

from headrace.base import TransitionTable, transition_table
from headrace.state import CheckpointError, StoreIOError, TaskCheckpoint

from .._config import StreamsConfig
from .._lifecycle import Lifecycle
from .._task import GLOBAL, TaskExecutor
from .._topology import Topology
from ._client import GlobalReader, TopicPartition

log = logging.getLogger("headrace.streams.runtime.global")


class GlobalState(enum.Enum):
    CREATED = "created"
    BOOTSTRAPPING = "bootstrapping"
    RUNNING = "running"
    CLOSED = "closed"


_G = GlobalState
GLOBAL_TRANSITIONS: TransitionTable[GlobalState] = transition_table(
    {
        _G.CREATED: {_G.BOOTSTRAPPING, _G.CLOSED},
        _G.BOOTSTRAPPING: {_G.RUNNING, _G.CLOSED},
        _G.RUNNING: {_G.CLOSED},
        _G.CLOSED: set(),
    }
)


def global_topics(topology: Topology, application_id: str) -> tuple[str, ...]:
    """Broker-side names of the topics the global stores read (none without global stores)."""
    sub = topology.global_subtopology()
    if sub is None:
        return ()
    return tuple(topology.topic_name(t, application_id) for t in sub.source_topics)


class GlobalStores:
    """The global task of one instance; see the module docstring for the steps."""

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig,
        state_dir: pathlib.Path,
        reader: GlobalReader,
        partition_counts: Mapping[str, int],
        max_records: int,
        clock_ms: int,
    ) -> None:
        app = config.application_id
        self._topology = topology
        self._config = config
        self._root = state_dir
        self._reader = reader
        self._max = max_records
        self._clock_ms = clock_ms
        self.directory = state_dir / app / "global"
        self.partitions: tuple[TopicPartition, ...] = tuple(
            (t, p) for t in global_topics(topology, app) for p in range(partition_counts[t])
        )
        self.offsets: dict[TopicPartition, int] = {}
        self._checkpointed: dict[TopicPartition, int] = {}
        self.executor: TaskExecutor | None = None
        self.bootstrapped_records = 0
        self.records = 0
        self._lifecycle = Lifecycle("global stores", GlobalState.CREATED, GLOBAL_TRANSITIONS)

    @property
    def state(self) -> GlobalState:
        return self._lifecycle.state

    @property
    def stores(self) -> dict[str, Any]:
        """The global stores by name, for every stream task's ``global_stores``."""
        return dict(self.executor.stores) if self.executor is not None else {}

    async def bootstrap(self) -> None:
        """Steps 1-5 of the module docstring: return once the stores hold the topics
        up to the end offsets read at the start."""
        self._lifecycle.move(GlobalState.BOOTSTRAPPING)
        started = time.monotonic()
        try:
            checkpointed = TaskCheckpoint(self.directory).read_checkpoint()
        except (CheckpointError, StoreIOError) as error:
            log.warning("global stores: unusable checkpoint (%s); reading the topics again", error)
            checkpointed = {}
        if not checkpointed and self.directory.exists():
            shutil.rmtree(self.directory)
        executor = self.executor = TaskExecutor(
            self._topology,
            GLOBAL,
            0,
            self._config,
            state_dir=self._root,
            wall_clock_ms=self._clock_ms,
        )
        executor.init()
        if not all(getattr(s, "persistent", True) for s in executor.stores.values()):
            checkpointed = {}  # an in-memory store starts empty
        reader = self._reader
        reader.assign(self.partitions)
        for tp in self.partitions:
            start = checkpointed.get(tp)
            await reader.seek(tp, start)
            if start is not None:
                self.offsets[tp] = start
        self._checkpointed = {tp: o for tp, o in self.offsets.items()}
        ends = await reader.end_offsets(self.partitions)
        log.info(
            "global stores: reading %s up to %s",
            {f"{t}-{p}": self.offsets.get((t, p), "beginning") for t, p in self.partitions},
            {f"{t}-{p}": o for (t, p), o in sorted(ends.items())},
        )
        while any(self.offsets.get(tp, 0) < end for tp, end in ends.items()):
            self.bootstrapped_records += await self.poll(100)
            await self._advance_positions()
        await self.checkpoint()
        self._lifecycle.move(GlobalState.RUNNING)
        log.info(
            "global stores bootstrapped: %d records from %s in %.2fs",
            self.bootstrapped_records,
            "the checkpoint" if checkpointed else "the beginning",
            time.monotonic() - started,
        )

    async def poll(self, timeout_ms: int) -> int:
        """Read one round of the global topics into the stores; return how many records."""
        executor = self.executor
        assert executor is not None
        fetched = await self._reader.poll(timeout_ms, self._max)
        n = 0
        for tp, records in fetched.items():
            if not records:
                continue
            executor.process_partition(tp[0], tp[1], records)
            self.offsets[tp] = records[-1][2] + 1
            n += len(records)
        # A global sub-topology has no sinks; anything it emitted has nowhere to go.
        executor.drain()
        self.records += n
        return n

    async def _advance_positions(self) -> None:
        """Move past what never comes out as a record (transaction markers, aborted
        records): the reader's position says how far the topic was read."""
        for tp in self.partitions:
            position = await self._reader.position(tp)
            if position is not None and position > self.offsets.get(tp, 0):
                self.offsets[tp] = position

    async def checkpoint(self) -> None:
        """Flush the stores, then write the offsets they cover (only when they moved)."""
        if self.executor is None:
            return
        await self._advance_positions()
        if self.offsets == self._checkpointed:
            return
        self.executor.flush()
        self.executor.drain()
        TaskCheckpoint(self.directory).write_checkpoint(self.offsets)
        self._checkpointed = dict(self.offsets)

    async def close(self, clean: bool = True) -> None:
        """Checkpoint (when ``clean``) and close the stores; idempotent. Called after the
        stream tasks closed, since they read the global stores until then."""
        if self._lifecycle.state is GlobalState.CLOSED:
            return
        running = self._lifecycle.state is GlobalState.RUNNING
        self._lifecycle.move(GlobalState.CLOSED)
        if self.executor is None:
            return
        try:
            if clean and running:
                await self.checkpoint()
        finally:
            self.executor.close()
