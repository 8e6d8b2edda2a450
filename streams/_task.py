"""The task executor: one sub-topology instantiated for one partition.

The runtime and the test driver both drive a topology through this class and nothing
else. They feed it consumed records and take back produced records; the executor never
does I/O beyond creating the task's state directory.

A task opens in two steps, as Kafka Streams' tasks do (``_lifecycle.py`` has the
lifecycle and what processors rebuild at start): :meth:`TaskExecutor.open_stores` opens
the stores, which the runtime then restores from their changelogs, and
:meth:`TaskExecutor.start` compiles the nodes and ``init``-s the processors on the
restored stores. :meth:`TaskExecutor.init` does both, for callers with nothing to
restore.

Compilation happens once, in :meth:`TaskExecutor.start`: every node becomes a
``push(batch)`` closure bound to its children's closures, so processing a batch is a
chain of direct calls with no graph lookups. Batches move breadth-first: a node handles
its whole batch, then hands its output to its children. Each node still sees its own
input in order, so per-key results match record-at-a-time processing.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any

from ._async import AsyncProcessor, AsyncStage, Failure
from ._config import StreamsConfig
from ._context import ChangeObserver, ProcessorContext, Push, TaskShared, TaskStoreContext
from ._errors import IllegalStateTransition, ProcessingError, StreamsError, TopologyError
from ._lifecycle import TASK_TRANSITIONS, Lifecycle, TaskState
from ._nodes import Node, SinkNode, SourceNode
from ._ordering import WaveBuffer
from ._processor import AnyProcessor
from ._punctuation import NEVER
from ._record import ConsumedRecord, ProducedRecord, Rec, Record
from ._sink import compile_sink
from ._source import Decoder, compile_decoder
from ._topology import Topology

GLOBAL = -1
"""The sub-topology id that runs a topology's global stores (``Topology.global_subtopology``)."""

_topic_partition = itemgetter(0, 1)
_timestamp = itemgetter(2)
_new_tuple = tuple.__new__


class TaskExecutor:
    """Runs sub-topology ``subtopology_id`` of ``topology`` for ``partition``.

    Lifecycle: CREATED --open_stores()--> RESTORING --start()--> RUNNING --close()-->
    CLOSED; ``init()`` is the first two steps at once (``_lifecycle.py``).

    With ``subtopology_id=-1`` (``topology.global_subtopology().id``) it runs the global
    stores instead, as task ``global``: fed every partition of the global topics, it keeps the stores whole. A
    task whose processors read global stores needs them passed in ``global_stores``
    (the global executor's ``stores``); it reads them and never flushes or closes them.
    """

    def __init__(
        self,
        topology: Topology,
        subtopology_id: int,
        partition: int,
        config: StreamsConfig | Mapping[str, Any] | None = None,
        *,
        state_dir: pathlib.Path,
        wall_clock_ms: int = 0,
        change_observer: ChangeObserver | None = None,
        partitions_for: Callable[[str], int] = lambda topic: 1,
        global_stores: Mapping[str, Any] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        wake: Callable[[], None] | None = None,
    ) -> None:
        self.config = StreamsConfig.of(config)
        if subtopology_id == GLOBAL:
            sub = topology.global_subtopology()
            if sub is None:
                raise TopologyError("topology has no global stores")
            self._sub = sub
            self.task_id = "global"
        else:
            subs = topology.subtopologies()
            if not 0 <= subtopology_id < len(subs):
                raise TopologyError(f"topology has no sub-topology {subtopology_id}")
            self._sub = subs[subtopology_id]
            self.task_id = f"{subtopology_id}_{partition}"
        self._topology = topology
        self.partition = partition
        app = self.config.application_id
        self._produced: list[ProducedRecord] = []
        self._shared = TaskShared(
            app,
            self.task_id,
            partition,
            state_dir / app / self.task_id,
            wall_clock_ms,
            self._produced,
            change_observer,
        )
        self._shared.global_stores.update(global_stores or {})
        self._shared.loop = loop
        if wake is not None:
            self._shared.wake = wake
        self._stages: list[AsyncStage] = []  # upstream first
        self._partitions_for = partitions_for
        self._lifecycle = Lifecycle(f"task {self.task_id}", TaskState.CREATED, TASK_TRANSITIONS)
        self._processors: list[tuple[str, AnyProcessor, ProcessorContext]] = []
        self._started: list[AnyProcessor] = []  # init-ed, in init order
        self._start_failed = False
        self._entries: dict[tuple[str, str], Push] = {}
        self._source_pushes: dict[str, Push] = {}
        self._buffers: list[WaveBuffer] = []
        self._routes: dict[str, tuple[Decoder, Push] | None] = {}
        self.source_topics = tuple(topology.topic_name(t, app) for t in self._sub.source_topics)
        self.source_patterns = self._sub.source_patterns

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def state(self) -> TaskState:
        return self._lifecycle.state

    def init(self) -> None:
        """Make the task runnable at once: :meth:`open_stores`, then :meth:`start`. For
        callers whose stores need no restoring (the test driver, the global stores)."""
        self.open_stores()
        self.start()

    def open_stores(self) -> None:
        """CREATED -> RESTORING: open the stores, build no processor.

        Steps, in order: check that every global store the task reads was passed in;
        create the task's state directory; build every store of the sub-topology and
        ``init`` it with the task's store context. The stores may now take changelog
        records (``restore_batch``); everything else waits for :meth:`start`.
        """
        self._lifecycle.require(TaskState.CREATED)
        shared = self._shared
        wanted = set(self._topology.global_stores) - set(self._sub.stores)
        missing = sorted(
            store
            for node in self._sub.nodes
            for store in self._topology.stores_of(node)
            if store in wanted and store not in shared.global_stores
        )
        if missing:
            raise TopologyError(
                f"task {self.task_id} reads global stores {missing}: run the global "
                "sub-topology (sub-topology id -1) and pass its stores as global_stores"
            )
        shared.state_dir.mkdir(parents=True, exist_ok=True)
        store_context = TaskStoreContext(shared)
        self._lifecycle.move(TaskState.RESTORING)
        for name in self._sub.stores:
            store = self._topology.store_builder(name).build()
            store.init(store_context)
            shared.stores[name] = store

    def start(self, wall_clock_ms: int | None = None) -> None:
        """RESTORING -> RUNNING, once every store holds its changelog: the processors
        start on the restored state (``_lifecycle.py`` says what they rebuild).

        Steps, in order: move the wall clock to ``wall_clock_ms`` (the time of the
        start; a wall-clock punctuation scheduled in ``init`` counts from it); compile
        the nodes into closures, children before parents; ``init`` the processors,
        parents first, so a processor may look up its stores and schedule
        punctuations in ``init``. A processor whose ``init`` fails leaves the task in
        RESTORING, to be closed (the processors started before it are closed then).
        """
        self._lifecycle.require(TaskState.RESTORING)
        if self._start_failed:
            raise IllegalStateTransition(
                f"task {self.task_id}: its start failed; it can only be closed"
            )
        self._start_failed = True  # until the last processor is started
        shared = self._shared
        if wall_clock_ms is not None and wall_clock_ms > shared.wall_clock:
            shared.wall_clock = wall_clock_ms
        self._compile_all([self._topology.nodes[n] for n in self._sub.nodes])
        self._processors.reverse()  # parents first
        for node_name, processor, context in self._processors:
            try:
                processor.init(context)
            except StreamsError:
                raise
            except Exception as exc:
                raise ProcessingError(
                    f"init of {node_name} failed: {exc!r}", node=node_name, topic=None, partition=-1
                ) from exc
            self._started.append(processor)
        self._start_failed = False
        self._lifecycle.move(TaskState.RUNNING)

    def close(self) -> None:
        """Close the processors that were started (parents first), then flush and close
        the stores; a task closed in RESTORING closes its stores only. Idempotent."""
        if self._lifecycle.state is TaskState.CLOSED:
            return
        self._lifecycle.move(TaskState.CLOSED)
        for stage in self._stages:
            stage.close()
        self._shared.in_flight.clear()
        for processor in self._started:
            processor.close()
        self._started.clear()
        for store in self._shared.stores.values():
            store.flush()
            store.close()

    # -- processing ---------------------------------------------------------------------

    def process(self, records: Iterable[ConsumedRecord]) -> None:
        """Process consumed records of any partitions, in the order given."""
        self._lifecycle.require(TaskState.RUNNING)
        for (topic, partition), run in groupby(records, key=_topic_partition):
            self.process_partition(topic, partition, list(run))

    def process_partition(
        self, topic: str, partition: int, records: Sequence[ConsumedRecord]
    ) -> None:
        """Process consumed records that all come from ``topic``-``partition``.

        Steps: decode the batch (deserialize, handle bad records, extract timestamps);
        advance stream time; push the batch into the source's children. When stream-time
        punctuations exist, the batch is cut after each record that makes one due, and
        the punctuations run there, as they would between records.
        """
        self._lifecycle.require(TaskState.RUNNING)
        route = self._route(topic)
        if route is None:
            raise TopologyError(f"task {self.task_id} does not read topic {topic!r}")
        decode, push = route
        shared = self._shared
        shared.topic = topic
        shared.partition = partition
        batch = decode(records)
        if not batch:
            return
        if self._stages:
            try:
                self._process_decoded(batch, push)
            finally:
                shared.in_flight.retain((topic, partition), records)
            return
        self._process_decoded(batch, push)

    def _process_decoded(self, batch: list[Rec], push: Push) -> None:
        shared = self._shared
        topic, partition = shared.topic, shared.partition
        queue = shared.stream_punctuations
        due = queue.next_due()
        if due == NEVER:
            newest = max(map(_timestamp, batch))
            if newest > shared.stream_time:
                shared.stream_time = newest
            push(batch)
            if self._buffers:
                self._end_wave()
            return
        start = 0
        now = shared.stream_time
        for i, rec in enumerate(batch):
            ts = rec[2]
            if ts > now:
                now = ts
                if now >= due:
                    shared.stream_time = now
                    push(batch[start : i + 1])
                    self._end_wave()
                    start = i + 1
                    queue.fire(now)
                    self._end_wave()
                    shared.topic, shared.partition = topic, partition
                    due = queue.next_due()
        shared.stream_time = now
        if start < len(batch):
            push(batch[start:] if start else batch)
            self._end_wave()

    def punctuate_wall_clock(self, now_ms: int) -> bool:
        """Set the wall clock to ``now_ms`` and run the wall-clock punctuations now due."""
        self._lifecycle.require(TaskState.RUNNING)
        shared = self._shared
        shared.wall_clock = max(shared.wall_clock, now_ms)
        fired = shared.wall_punctuations.fire(shared.wall_clock)
        self._end_wave()
        return fired

    def drain(self) -> list[ProducedRecord]:
        """Take the records produced since the last drain, in production order."""
        out = self._produced[:]
        self._produced.clear()
        return out

    def flush_caches(self) -> None:
        """Forward what the caching stores hold (written down to their stores and
        changelogs, and passed downstream), without making any store durable: the
        output of recent records leaves now instead of at the commit."""
        self._lifecycle.require(TaskState.RUNNING)
        for flush in self._shared.caches:
            flush()
        self._end_wave()

    def flush(self, durable: bool = True) -> None:
        """Flush every store (a caching store forwards its pending updates here). With
        ``durable=False`` only the caches write down and forward, and no store syncs
        its files: a commit that writes no checkpoint needs the output, not the sync."""
        self._lifecycle.require(TaskState.RUNNING)
        if durable:
            for store in self._shared.stores.values():
                store.flush()
        else:
            for flush in self._shared.caches:
                flush()
        self._end_wave()
        self._shared.commit_requested = False

    # -- async stages (``_async.py``) ------------------------------------------------------

    @property
    def has_async(self) -> bool:
        """Whether the task has async processors at all."""
        return bool(self._stages)

    @property
    def async_busy(self) -> bool:
        """Whether any record is in an async stage, queued, running or ready."""
        return any(stage.busy for stage in self._stages)

    @property
    def async_saturated(self) -> bool:
        """Whether some async stage has every call slot taken: more input would only
        queue, so the runtime stops fetching for the task (back-pressure)."""
        return any(stage.saturated for stage in self._stages)

    def run_async_on(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run async calls on ``loop`` (the test driver's own) instead of the running one."""
        self._shared.loop = loop

    @property
    def async_room(self) -> int:
        """How many more input records the async stages take now (``AsyncStage.room``)."""
        return min(stage.room for stage in self._stages)

    def release(self) -> bool:
        """Push the results of finished async calls downstream (step 4 of ``_async.py``),
        upstream stages first, so a result that feeds a later stage is submitted to it in
        the same pass; return whether anything was released."""
        self._lifecycle.require(TaskState.RUNNING)
        released = False
        for stage in self._stages:
            if stage.has_ready:
                released = stage.release() or released
        if released:
            self._end_wave()
        return released

    async def settle(self) -> None:
        """Wait until no record is left in any async stage, releasing results as they
        finish: under exactly-once the transaction commits only after this."""
        while self._lifecycle.state is TaskState.RUNNING and self.async_busy:
            running = set().union(*(stage.running_calls() for stage in self._stages))
            if running:
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            elif not any(stage.has_ready for stage in self._stages):
                await asyncio.sleep(0)
            self.release()

    def commit_offset(self, topic: str, partition: int, next_offset: int) -> int:
        """The offset of ``topic``-``partition`` that may be committed when the next one
        to read is ``next_offset``: the lowest still in flight, if that is lower."""
        lowest = self._shared.in_flight.lowest((topic, partition))
        return next_offset if lowest is None or lowest >= next_offset else lowest

    def take_failures(self) -> list[Failure]:
        """The async calls that failed for good since the last call, released in order."""
        failures = self._shared.async_failures
        if not failures:
            return []
        out = failures[:]
        failures.clear()
        return out

    # -- inspection ---------------------------------------------------------------------

    @property
    def stream_time(self) -> int:
        return self._shared.stream_time

    @property
    def wall_clock(self) -> int:
        return self._shared.wall_clock

    @property
    def commit_requested(self) -> bool:
        return self._shared.commit_requested

    @property
    def stores(self) -> Mapping[str, Any]:
        return self._shared.stores

    def reads(self, topic: str) -> bool:
        """Whether this task consumes ``topic`` (by name or by pattern)."""
        return topic in self.source_topics or any(
            p.fullmatch(topic) is not None for p in self.source_patterns
        )

    # -- compilation --------------------------------------------------------------------

    def _route(self, topic: str) -> tuple[Decoder, Push] | None:
        if topic in self._routes:
            return self._routes[topic]
        app = self.config.application_id
        found = None
        for name in self._sub.nodes:
            node = self._topology.nodes[name]
            if not isinstance(node, SourceNode):
                continue
            names = {self._topology.topic_name(t, app) for t in node.topics}
            if topic in names or (node.pattern is not None and node.pattern.fullmatch(topic)):
                decode = compile_decoder(node, topic, self.config, self._produced.append)
                found = (decode, self._source_pushes[name])
                break
        self._routes[topic] = found
        return found

    def _end_wave(self) -> None:
        """Deliver what the meeting points collected, upstream ones first."""
        buffers = self._buffers
        while any(b.pending() for b in buffers):
            for b in buffers:
                b.flush()

    def _children(self, name: str) -> dict[str, Push]:
        return {child: self._entries[(child, name)] for child in self._topology.children(name)}

    def _compile_all(self, nodes: list[Node]) -> None:
        """Compile nodes into closures, children first, with wave buffers at meeting points.

        Steps: compile every sink; put one buffer in front of the sinks that share a
        topic (all sinks, if one chooses its topic per record); then compile the other
        nodes from the last to the first, each bound to its children's entries; finally
        put a buffer in front of every node with more than one parent.
        """
        sinks = [n for n in nodes if isinstance(n, SinkNode)]
        inlet: dict[str, Push] = {n.name: self._compile(n) for n in sinks}
        groups: dict[str | None, list[str]] = {}
        if any(n.topic is None for n in sinks):
            groups[None] = [n.name for n in sinks]
        else:
            for n in sinks:
                groups.setdefault(n.topic, []).append(n.name)
        sink_buffers = []
        for members in groups.values():
            if len(members) > 1:
                buffer = WaveBuffer([inlet[m] for m in members])
                sink_buffers.append(buffer)
                for i, m in enumerate(members):
                    inlet[m] = buffer.port(i)
        merge_buffers = []
        for node in reversed(nodes):
            if isinstance(node, SourceNode):
                self._source_pushes[node.name] = self._compile(node)
                continue
            entry = inlet[node.name] if isinstance(node, SinkNode) else self._compile(node)
            if len(node.parents) > 1:
                buffer = WaveBuffer([entry] * len(node.parents))
                merge_buffers.append(buffer)
                for i, parent in enumerate(node.parents):
                    self._entries[(node.name, parent)] = buffer.port(i)
            else:
                self._entries[(node.name, node.parents[0])] = entry
        self._buffers = [*reversed(merge_buffers), *sink_buffers]

    def _compile(self, node: Node) -> Push:
        if isinstance(node, SinkNode):
            topic = (
                None
                if node.topic is None
                else self._topology.topic_name(node.topic, self.config.application_id)
            )
            return _guarded(
                node.name,
                compile_sink(node, topic, self.config, self._produced, self._partitions_for),
                self._shared,
            )
        children = tuple(self._children(node.name).values())
        if isinstance(node, SourceNode):
            return _fan_out(children)
        context = ProcessorContext(
            self._shared, node.name, self._children(node.name), self._topology.stores_of(node.name)
        )
        processor = node.supplier()
        self._processors.append((node.name, processor, context))
        if isinstance(processor, AsyncProcessor):
            stage = AsyncStage(node.name, processor, children, self._shared)
            self._stages.insert(0, stage)  # compiled children first
            return stage.submit
        process_batch = getattr(processor, "process_batch", None)
        if process_batch is not None:
            return _guarded(node.name, process_batch, self._shared, context)
        return _record_at_a_time(node.name, processor, context, self._shared)


def _fan_out(children: tuple[Push, ...]) -> Push:
    if len(children) == 1:
        return children[0]

    def push(batch: list[Rec]) -> None:
        for child in children:
            child(batch)

    return push


def _wrap(node: str, shared: TaskShared, exc: Exception) -> ProcessingError:
    error = ProcessingError(
        f"{node} failed on a batch from {shared.topic}-{shared.partition}: {exc!r}",
        node=node,
        topic=shared.topic,
        partition=shared.partition,
    )
    error.__cause__ = exc
    return error


def _guarded(
    node: str, fn: Push, shared: TaskShared, context: ProcessorContext | None = None
) -> Push:
    """Wrap user errors of ``fn`` with the node's name; deliver what it queued."""

    def push(batch: list[Rec]) -> None:
        try:
            fn(batch)
        except StreamsError:
            if context is not None:
                context.discard_pending()
            raise
        except Exception as exc:
            if context is not None:
                context.discard_pending()
            raise _wrap(node, shared, exc) from exc
        if context is not None and context._pending:
            context.flush()

    return push


def _record_at_a_time(
    node: str, processor: AnyProcessor, context: ProcessorContext, shared: TaskShared
) -> Push:
    process = processor.process  # type: ignore[union-attr]

    def push(batch: list[Rec]) -> None:
        ctx = context
        try:
            for k, v, ts, h, o in batch:
                ctx.offset = o
                ctx.timestamp = ts
                ctx.headers = h
                process(_new_tuple(Record, (k, v, ts, h)))
        except StreamsError:
            ctx.discard_pending()
            raise
        except Exception as exc:
            ctx.discard_pending()
            raise _wrap(node, shared, exc) from exc
        ctx.flush()

    return push
