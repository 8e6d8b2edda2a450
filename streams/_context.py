"""The contexts a task hands to its processors and to its state stores.

One :class:`TaskShared` per task holds what every node of the task sees alike: the
topic and partition of the batch in flight, stream time, wall-clock time, the built
stores. Each processor gets its own :class:`ProcessorContext` on top of it, which knows
the processor's children and the stores it is connected to.
"""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from headrace.base.millis import duration_millis

from ._async import Failure, InFlight
from ._errors import ProcessingError, StoreAccessError, StreamsError, TopologyError
from ._processor import Cancellable, PunctuationType, Punctuator
from ._punctuation import PunctuationQueue
from ._record import NO_HEADERS, Headers, ProducedRecord, Rec, Record, RecordMetadata

Push = Callable[[list[Rec]], None]
ChangeObserver = Callable[[str, bytes, "bytes | None", int], None]


def _nothing() -> None:
    pass


class TaskShared:
    """State common to all nodes of one task; the executor updates it per batch."""

    def __init__(
        self,
        application_id: str,
        task_id: str,
        partition: int,
        state_dir: pathlib.Path,
        wall_clock: int,
        produced: list[ProducedRecord],
        observer: ChangeObserver | None,
    ) -> None:
        self.application_id = application_id
        self.task_id = task_id
        self.task_partition = partition
        self.state_dir = state_dir
        self.topic: str | None = None
        self.partition = -1
        self.stream_time = -1
        self.wall_clock = wall_clock
        self.stores: dict[str, Any] = {}
        self.global_stores: dict[str, Any] = {}  # owned by the global executor, read here
        self.stream_punctuations = PunctuationQueue()
        self.wall_punctuations = PunctuationQueue()
        self.commit_requested = False
        self.produced = produced
        self.observer = observer
        # Each caching store's "forward what you hold" (``TaskExecutor.flush_caches``).
        self.caches: list[Callable[[], None]] = []
        # Async stages (``_async.py``): records in flight per source partition, calls
        # that failed for good, the loop their calls run on (``None``: the running
        # one) and what to call when a result becomes ready to release.
        self.in_flight = InFlight()
        self.async_failures: list[Failure] = []
        self.loop: asyncio.AbstractEventLoop | None = None
        self.wake: Callable[[], None] = _nothing


class TaskStoreContext:
    """The :class:`~streams.StateStoreContext` given to every store of one task.

    ``log_change`` appends a record for ``<application_id>-<store>-changelog`` on the
    task's partition to the task's output, so the changelog travels with the task's other
    output (and inside the same transaction under exactly-once), and tells the observer,
    if any (the test driver keeps the entries per store).
    """

    def __init__(self, shared: TaskShared) -> None:
        self._shared = shared
        self._topics: dict[str, str] = {}  # changelog topic per store, named once

    @property
    def application_id(self) -> str:
        return self._shared.application_id

    @property
    def task_id(self) -> str:
        return self._shared.task_id

    @property
    def state_dir(self) -> pathlib.Path:
        return self._shared.state_dir

    @property
    def stream_time(self) -> int:
        return self._shared.stream_time

    @property
    def wall_clock_time(self) -> int:
        return self._shared.wall_clock

    def changelog_topic(self, store_name: str) -> str:
        topic = self._topics.get(store_name)
        if topic is None:
            topic = self._topics[store_name] = (
                f"{self._shared.application_id}-{store_name}-changelog"
            )
        return topic

    def register_cache(self, flush: Callable[[], None]) -> None:
        """A caching store hands over the call that writes its pending updates down and
        forwards them, so the task can do so between commits."""
        self._shared.caches.append(flush)

    def log_change(self, store_name: str, key: bytes, value: bytes | None, timestamp: int) -> None:
        shared = self._shared
        shared.produced.append(
            (
                self.changelog_topic(store_name),
                key,
                value,
                timestamp,
                NO_HEADERS,
                shared.task_partition,
            )
        )
        if shared.observer is not None:
            shared.observer(store_name, key, value, timestamp)

    def log_changes(
        self, store_name: str, entries: list[tuple[bytes, bytes | None]], timestamp: int
    ) -> None:
        """``log_change`` of each entry, in order: what a cache flush logs in one call."""
        shared = self._shared
        topic, partition = self.changelog_topic(store_name), shared.task_partition
        shared.produced.extend(
            [(topic, key, value, timestamp, NO_HEADERS, partition) for key, value in entries]
        )
        observer = shared.observer
        if observer is not None:
            for key, value in entries:
                observer(store_name, key, value, timestamp)


class ProcessorContext:
    """What a processor sees of its task: the current record, its children, clocks, stores.

    Forwarding: :meth:`forward` queues a record for the children and the task delivers
    the queue when the processor returns from ``process``/``process_batch`` or from a
    punctuation; :meth:`forward_batch` delivers a whole list at once (after anything
    already queued, so order is kept).
    """

    def __init__(
        self,
        shared: TaskShared,
        node_name: str,
        children: dict[str, Push],
        store_names: tuple[str, ...],
    ) -> None:
        self._shared = shared
        self.node_name = node_name
        self._children = children
        self._all_children = tuple(children.values())
        self._store_names = frozenset(store_names)
        self._pending: dict[str, list[Rec]] = {}
        # Set per record by the executor for record-at-a-time processors.
        self.offset = -1
        self.timestamp = -1
        self.headers: Headers = NO_HEADERS

    # -- about the task and the record --------------------------------------------------

    @property
    def application_id(self) -> str:
        return self._shared.application_id

    @property
    def task_id(self) -> str:
        return self._shared.task_id

    @property
    def topic(self) -> str | None:
        """The topic of the record being processed; ``None`` inside a punctuation."""
        return self._shared.topic

    @property
    def partition(self) -> int:
        return self._shared.partition

    def record_metadata(self) -> RecordMetadata | None:
        """Topic, partition and offset of the current record; ``None`` in a punctuation."""
        topic = self._shared.topic
        if topic is None:
            return None
        return RecordMetadata(topic, self._shared.partition, self.offset)

    def current_stream_time_ms(self) -> int:
        return self._shared.stream_time

    def current_system_time_ms(self) -> int:
        return self._shared.wall_clock

    @property
    def child_names(self) -> tuple[str, ...]:
        """The children this processor forwards to, in the order they were added; a
        processor with none may skip building records nobody reads."""
        return tuple(self._children)

    def commit(self) -> None:
        """Ask the runtime to commit soon (after the current batch)."""
        self._shared.commit_requested = True

    # -- forwarding ---------------------------------------------------------------------

    def forward(self, record: Record, to: str | None = None) -> None:
        """Queue ``record`` for every child, or only for the child named ``to``."""
        rec = (record[0], record[1], record[2], record[3], self.offset)
        if to is None:
            for name in self._children:
                self._pending.setdefault(name, []).append(rec)
        else:
            self._check_child(to)
            self._pending.setdefault(to, []).append(rec)

    def forward_batch(self, batch: list[Rec], to: str | None = None) -> None:
        """Deliver ``batch`` now to every child, or only to the child named ``to``."""
        if self._pending:
            self.flush()
        if not batch:
            return
        if to is None:
            for push in self._all_children:
                push(batch)
        else:
            self._check_child(to)
            self._children[to](batch)

    def flush(self) -> None:
        """Deliver queued records, child by child in the order children were added."""
        pending = self._pending
        while pending:
            self._pending = {}
            for name, push in self._children.items():
                batch = pending.get(name)
                if batch:
                    push(batch)
            pending = self._pending

    def discard_pending(self) -> None:
        """Drop what was queued and not delivered: the batch that queued it failed and
        is run again (record by record), which queues it again."""
        self._pending = {}

    def _check_child(self, name: str) -> None:
        if name not in self._children:
            raise TopologyError(
                f"{self.node_name} has no child named {name!r}; children: {sorted(self._children)}"
            )

    # -- punctuation and stores ---------------------------------------------------------

    def schedule(
        self, interval: timedelta | int, type: PunctuationType, punctuator: Punctuator
    ) -> Cancellable:
        """Call ``punctuator(now)`` every ``interval`` (ms or timedelta) of the given clock."""
        ms = duration_millis(interval) if isinstance(interval, timedelta) else interval
        if ms <= 0:
            raise ValueError(f"punctuation interval must be positive, got {interval!r}")
        shared = self._shared
        if type is PunctuationType.STREAM_TIME:
            return shared.stream_punctuations.schedule(0, ms, punctuator, self._punctuate)
        return shared.wall_punctuations.schedule(
            shared.wall_clock + ms, ms, punctuator, self._punctuate
        )

    def _punctuate(self, punctuator: Punctuator, now: int) -> None:
        """Run one punctuation with no current record, then deliver what it forwarded."""
        shared = self._shared
        saved = (shared.topic, shared.partition)
        shared.topic, shared.partition = None, -1
        self.offset, self.timestamp, self.headers = -1, now, NO_HEADERS
        try:
            punctuator(now)
        except StreamsError:
            raise
        except Exception as exc:
            raise ProcessingError(
                f"punctuation of {self.node_name} at {now} failed: {exc!r}",
                node=self.node_name,
                topic=None,
                partition=-1,
            ) from exc
        finally:
            shared.topic, shared.partition = saved
        self.flush()

    def get_state_store(self, name: str) -> Any:
        """The store instance named ``name``, if this processor is connected to it."""
        if name not in self._store_names:
            raise StoreAccessError(
                f"processor {self.node_name} has no access to state store {name!r}: "
                "connect it when adding the store or the processor"
            )
        store = self._shared.stores.get(name)
        return self._shared.global_stores[name] if store is None else store
