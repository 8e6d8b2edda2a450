"""TopologyTestDriver: run a topology with no broker and a clock the test controls.

It is a thin host of :class:`~streams.TaskExecutor`, the same executor the runtime uses:
one task per sub-topology, all on partition 0. After every pipe it settles the topology.
Global stores get one more task, ``global``, which reads their topics whole; it is
initialised first and every other task reads its stores.

Async processors (``streams/_async.py``) run on the driver's own event loop: settling
first awaits every call in flight and releases its results, so a test sees the output
of every record it piped, whatever the calls' delays; order follows the processor's
``order``. A call that fails for good raises :class:`~streams.ProcessingError` here,
as a failing synchronous operator does.

Settling, step by step: await the async calls in flight; flush every task's stores (as a commit would, so caches forward
their updates); take every task's produced records; append each to its topic's output
queue; feed those whose topic the topology reads (repartition topics, for one) back into
the task that reads it; repeat until no task produces anything.
"""

from __future__ import annotations

import asyncio
import enum
import pathlib
import shutil
import tempfile
import time
from collections import defaultdict, deque
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from headrace.base import transition_table

from .._config import StreamsConfig
from .._errors import ProcessingError, StoreAccessError, TopologyError
from .._lifecycle import Lifecycle
from .._record import ConsumedAt, ConsumedRecord, ProducedRecord, consumed_position
from .._task import TaskExecutor
from .._topology import Topology
from ._records import ChangelogEntry
from ._topics import RawInput, TestInputTopic, TestOutputTopic, to_millis


class DriverState(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"


_DRIVER_TRANSITIONS = transition_table(
    {DriverState.OPEN: {DriverState.CLOSED}, DriverState.CLOSED: set()}
)


class TopologyTestDriver:
    """Drives ``topology`` in-process; use it as a context manager so stores get closed."""

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig | Mapping[str, Any] | None = None,
        initial_wall_clock: datetime | int | None = None,
    ) -> None:
        self.config = StreamsConfig.of(config)
        # As the App at start: a sink that needs a default serde it lacks fails here.
        topology.check_sink_serdes(self.config.default_key_serde, self.config.default_value_serde)
        self._temp_dir: pathlib.Path | None = None
        state_dir = self.config.state_dir
        if state_dir is None:
            self._temp_dir = pathlib.Path(tempfile.mkdtemp(prefix="topology-test-driver-"))
            state_dir = self._temp_dir
        self._wall = (
            int(time.time() * 1000) if initial_wall_clock is None else to_millis(initial_wall_clock)
        )
        self._outputs: defaultdict[str, deque[ProducedRecord]] = defaultdict(deque)
        self._offsets: defaultdict[str, int] = defaultdict(int)
        self._changelog: defaultdict[str, list[ChangelogEntry]] = defaultdict(list)
        self._lifecycle = Lifecycle("test driver", DriverState.OPEN, _DRIVER_TRANSITIONS)
        self._tasks: list[TaskExecutor] = []
        # Made only for a topology with async processors (``_await_async``).
        self._loop: asyncio.AbstractEventLoop | None = None
        try:
            global_sub = topology.global_subtopology()
            global_stores: dict[str, Any] = {}
            if global_sub is not None:
                global_task = self._task(topology, global_sub.id, state_dir, {})
                global_stores = dict(global_task.stores)
            for sub in topology.subtopologies():
                self._task(topology, sub.id, state_dir, global_stores)
            self._settle()
        except BaseException:
            self.close()
            raise

    def _task(
        self, topology: Topology, sub: int, state_dir: pathlib.Path, global_stores: dict[str, Any]
    ) -> TaskExecutor:
        task = TaskExecutor(
            topology,
            sub,
            0,
            self.config,
            state_dir=state_dir,
            wall_clock_ms=self._wall,
            change_observer=self._observe,
            global_stores=global_stores,
        )
        self._tasks.append(task)
        task.init()
        if task.has_async:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
            task.run_async_on(self._loop)
        return task

    # -- topics -------------------------------------------------------------------------

    def create_input_topic(
        self,
        name: str,
        key_serde: Any = None,
        value_serde: Any = None,
        start_timestamp: datetime | int | None = None,
        auto_advance: timedelta | int = 0,
    ) -> TestInputTopic:
        if self._reader(name) is None:
            raise TopologyError(f"the topology does not read topic {name!r}")
        start = self._wall if start_timestamp is None else to_millis(start_timestamp)
        return TestInputTopic(
            name, key_serde, value_serde, start, to_millis(auto_advance), self._pipe
        )

    def create_output_topic(
        self, name: str, key_serde: Any = None, value_serde: Any = None
    ) -> TestOutputTopic:
        return TestOutputTopic(name, key_serde, value_serde, self._outputs[name])

    # -- clocks -------------------------------------------------------------------------

    @property
    def wall_clock_time(self) -> int:
        return self._wall

    def advance_wall_clock_time(self, delta: timedelta | int) -> None:
        """Move the wall clock on by ``delta`` and run the punctuations now due."""
        self._lifecycle.require(DriverState.OPEN)
        self._wall += to_millis(delta)
        for task in self._tasks:
            task.punctuate_wall_clock(self._wall)
        self._settle()

    # -- stores -------------------------------------------------------------------------

    def get_all_state_stores(self) -> dict[str, Any]:
        return {name: store for task in self._tasks for name, store in task.stores.items()}

    def get_state_store(self, name: str) -> Any:
        stores = self.get_all_state_stores()
        if name not in stores:
            raise StoreAccessError(f"no state store named {name!r}; known: {sorted(stores)}")
        return stores[name]

    def get_key_value_store(self, name: str) -> Any:
        return self._store_of_kind(name, "key-value", ("get", "put", "range"), ("fetch",))

    def get_window_store(self, name: str) -> Any:
        return self._store_of_kind(name, "window", ("fetch", "fetch_all"), ("find_sessions",))

    def get_session_store(self, name: str) -> Any:
        return self._store_of_kind(name, "session", ("find_sessions",), ())

    def get_changelog(self, store_name: str) -> list[ChangelogEntry]:
        """The writes store ``store_name`` logged, oldest first."""
        return list(self._changelog.get(store_name, ()))

    def _store_of_kind(
        self, name: str, kind: str, has: tuple[str, ...], lacks: tuple[str, ...]
    ) -> Any:
        store = self.get_state_store(name)
        if not all(hasattr(store, a) for a in has) or any(hasattr(store, a) for a in lacks):
            raise StoreAccessError(
                f"state store {name!r} is not a {kind} store: {type(store).__name__}"
            )
        return store

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Close every task (flushing and closing stores), then drop a temporary state dir."""
        if self._lifecycle.state is DriverState.CLOSED:
            return
        self._lifecycle.move(DriverState.CLOSED)
        try:
            for task in reversed(self._tasks):  # the global task, first, closes last
                task.close()
        finally:
            self._cancel_calls()
            if self._temp_dir is not None:
                shutil.rmtree(self._temp_dir, ignore_errors=True)

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------------------

    def _reader(self, topic: str) -> TaskExecutor | None:
        for task in self._tasks:
            if task.reads(topic):
                return task
        return None

    def _observe(self, store: str, key: bytes, value: bytes | None, timestamp: int) -> None:
        self._changelog[store].append(ChangelogEntry(key, value, timestamp))

    def _consumed(self, topic: str, records: list[RawInput]) -> list[ConsumedRecord]:
        offset = self._offsets[topic]
        self._offsets[topic] = offset + len(records)
        return [(topic, 0, offset + i, ts, k, v, h) for i, (k, v, ts, h) in enumerate(records)]

    def _pipe(self, topic: str, records: list[RawInput]) -> None:
        self._lifecycle.require(DriverState.OPEN)
        task = self._reader(topic)
        if task is None:
            raise TopologyError(f"the topology does not read topic {topic!r}")
        task.process_partition(topic, 0, self._consumed(topic, records))
        self._settle()

    def _cancel_calls(self) -> None:
        """Let cancelled calls finish cancelling, then close the loop."""
        loop = self._loop
        if loop is None:
            return
        pending = asyncio.all_tasks(loop)
        if pending:
            loop.run_until_complete(asyncio.wait(pending))
        loop.close()

    def _await_async(self, task: TaskExecutor) -> None:
        loop = self._loop
        if loop is None or not task.has_async:
            return
        if loop.is_running():
            raise RuntimeError(
                "the test driver runs async processors on its own event loop; "
                "use it from synchronous code (not inside a running loop)"
            )
        loop.run_until_complete(task.settle())
        for raw, error, node in task.take_failures():
            raise ProcessingError(
                f"{node} failed on {consumed_position(raw)}: {error!r}",
                node=node,
                topic=raw[ConsumedAt.TOPIC],
                partition=raw[ConsumedAt.PARTITION],
            ) from error

    def _settle(self) -> None:
        while True:
            produced: list[ProducedRecord] = []
            for task in self._tasks:
                self._await_async(task)
                task.flush()
                produced.extend(task.drain())
            if not produced:
                return
            feed: dict[str, list[RawInput]] = {}
            for record in produced:
                topic, key, value, ts, headers, _partition = record
                self._outputs[topic].append(record)
                if self._reader(topic) is not None:
                    feed.setdefault(topic, []).append((key, value, ts, headers))
            for topic, raw in feed.items():
                reader = self._reader(topic)
                assert reader is not None
                reader.process_partition(topic, 0, self._consumed(topic, raw))
