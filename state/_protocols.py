"""The small interfaces stores are written against and offered through.

``StateStoreContext``, ``StateStore`` and ``StoreBuilder`` are the contract with the
processor API: streams/ hands a context to ``init`` and asks builders for stores.
The bytes-level store Protocols are what wrappers (logging, caching, metrics) and
typed facades are written against, so every backend fits under every wrapper.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# A changelog record as the restore hook takes it: store-level key bytes and value
# bytes, or None for a tombstone.
ChangeRecord = tuple[bytes, bytes | None]


@runtime_checkable
class StateStoreContext(Protocol):
    """What a store needs from the task that owns it."""

    @property
    def application_id(self) -> str: ...

    @property
    def task_id(self) -> str: ...

    @property
    def state_dir(self) -> Path:
        """The task's own directory; persistent stores live under ``state_dir/"rocksdb"``."""
        ...

    @property
    def stream_time(self) -> int:
        """The task's stream time in milliseconds (drives window retention)."""
        ...

    def log_change(
        self, store_name: str, key: bytes, value: bytes | None, timestamp: int
    ) -> None: ...


@runtime_checkable
class StateStore(Protocol):
    """What the processor API manages: open, flush on commit, close."""

    @property
    def name(self) -> str: ...

    @property
    def persistent(self) -> bool: ...

    def init(self, context: StateStoreContext) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class CheckpointableStore(Protocol):
    """A store that can copy its on-disk state to another directory while open.

    Every store this package builds offers both members; wrappers (metrics, caching,
    logging, typed facades) pass them down to the store at the bottom. A store the
    processor API is handed from elsewhere may not, so test with ``isinstance``.
    """

    @property
    def supports_checkpoint(self) -> bool:
        """Whether ``checkpoint`` can work: True for RocksDB, False in memory."""
        ...

    def checkpoint(self, dest: Path) -> None:
        """Write a consistent copy of the store to ``dest``, which must not exist.

        The copy is a RocksDB checkpoint: table files are hard-linked, so it costs
        little space, and writes made afterwards never reach it. Opening a store of
        the same name on ``dest`` (``state_dir/"rocksdb"/<name>`` of its context)
        gives the data the store held. Writes still in a caching layer are not in it:
        it holds what was written down, so flush first (as a commit does).

        Raises ``CheckpointUnsupportedError`` for a store kept in memory,
        ``InvalidStoreStateError`` when the store is not open and ``StoreIOError``
        when ``dest`` exists or RocksDB fails.
        """
        ...


@runtime_checkable
class StoreBuilder(Protocol[T_co]):
    """Builds a fresh store each time a task needs one."""

    @property
    def name(self) -> str: ...

    @property
    def logging_enabled(self) -> bool: ...

    def build(self) -> T_co: ...


class Serde(Protocol[T]):
    """Turns objects into bytes and back; ``topic`` is the store's changelog topic."""

    def serialize(self, topic: str, obj: T) -> bytes | None: ...

    def deserialize(self, topic: str, data: bytes) -> T: ...


class CacheEntry(NamedTuple):
    """One coalesced update handed to a flush listener when a cache flushes."""

    key: bytes
    new_value: bytes | None
    old_value: bytes | None
    timestamp: int


FlushListener = Callable[[Sequence[CacheEntry]], None]


class KeyValueBytesStore(StateStore, CheckpointableStore, Protocol):
    """A sorted map of bytes to bytes.

    Ranges are inclusive at both ends; ``None`` leaves that end open. Iterators see
    writes made after they were created for keys they have not reached yet.
    """

    def get(self, key: bytes) -> bytes | None: ...

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        """``get`` of each key, in order. For a batch of keys the caller is about to
        write: a cache in the stack answers what it holds and does not keep what was
        read below it (the writes will)."""
        ...

    def put(self, key: bytes, value: bytes | None) -> None:
        """Store ``value``; ``None`` deletes."""
        ...

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        """Store ``value`` unless the key exists; return the existing value or None."""
        ...

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None: ...

    def delete(self, key: bytes) -> bytes | None:
        """Remove the key and return the value it had."""
        ...

    def range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]: ...

    def reverse_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]: ...

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]: ...

    def all(self) -> Iterator[tuple[bytes, bytes]]: ...

    def reverse_all(self) -> Iterator[tuple[bytes, bytes]]: ...

    def approximate_num_entries(self) -> int: ...

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        """Apply changelog records to the innermost store, bypassing cache and changelog."""
        ...

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = False) -> bool:
        """Register the callback for coalesced updates; False when no cache is present."""
        ...
