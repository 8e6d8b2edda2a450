"""Metrics wrappers: counts and latencies of store operations.

Counts are exact. Latencies are wall-clock nanoseconds from ``time.perf_counter_ns``,
taken for one call in ``LATENCY_SAMPLE`` of the point operations (get, put): reading
the clock twice costs about as much as a cached get, so timing every call would
halve the throughput it measures. Range-like calls, flushes and restores are always
timed, from the call until the iterator is exhausted or closed (as in Kafka
Streams), so a range latency includes the caller's time between items.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import TypeVar

from ._protocols import ChangeRecord, KeyValueBytesStore
from ._segmented import SegmentedBytesStore
from ._wrapper_base import KeyValueStoreWrapper, SegmentedStoreWrapper, StoreWrapper, W

T = TypeVar("T")

LATENCY_SAMPLE = 16  # a power of two: the sampling test is a bit mask
_MASK = LATENCY_SAMPLE - 1


@dataclass(slots=True)
class OpStats:
    """``count`` calls in all; ``timed`` of them measured, adding up to ``total_ns``."""

    count: int = 0
    timed: int = 0
    total_ns: int = 0
    max_ns: int = 0

    def record(self, elapsed_ns: int) -> None:
        self.count += 1
        self.sample(elapsed_ns)

    def sample(self, elapsed_ns: int) -> None:
        self.timed += 1
        self.total_ns += elapsed_ns
        if elapsed_ns > self.max_ns:
            self.max_ns = elapsed_ns

    @property
    def mean_ns(self) -> float:
        return self.total_ns / self.timed if self.timed else 0.0


@dataclass(slots=True)
class StoreMetrics:
    """Per-store operation statistics; ``snapshot()`` gives plain numbers for export."""

    store_name: str
    put: OpStats = field(default_factory=OpStats)
    get: OpStats = field(default_factory=OpStats)
    delete: OpStats = field(default_factory=OpStats)
    put_all: OpStats = field(default_factory=OpStats)
    range: OpStats = field(default_factory=OpStats)
    flush: OpStats = field(default_factory=OpStats)
    restore: OpStats = field(default_factory=OpStats)
    restored_records: int = 0

    def snapshot(self) -> dict[str, dict[str, float]]:
        ops = ("put", "get", "delete", "put_all", "range", "flush", "restore")
        return {
            op: {
                "count": getattr(self, op).count,
                "timed": getattr(self, op).timed,
                "mean_ns": getattr(self, op).mean_ns,
                "max_ns": getattr(self, op).max_ns,
            }
            for op in ops
        }


def _timed(stats: OpStats, iterator: Iterator[T], started: int) -> Iterator[T]:
    try:
        yield from iterator
    finally:
        stats.record(perf_counter_ns() - started)


class _MeteredStore(StoreWrapper[W]):
    """Metrics, flush, batch write and restore timing both metered wrappers share.

    The sampled point operations stay written out per kind: they run for every
    record, and a direct call to the wrapped store's method is measurably cheaper
    than one through a stored bound method.
    """

    # The wrapped store's batch write, bound once by the subclass.
    _put_all_down: Callable[[Iterable[tuple[bytes, bytes | None]]], None]

    def __init__(self, wrapped: W) -> None:
        super().__init__(wrapped)
        self.metrics = StoreMetrics(wrapped.name)
        self._get, self._put = self.metrics.get, self.metrics.put

    def flush(self) -> None:
        started = perf_counter_ns()
        self.wrapped.flush()
        self.metrics.flush.record(perf_counter_ns() - started)

    def _timed_put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        started = perf_counter_ns()
        self._put_all_down(entries)
        self.metrics.put_all.record(perf_counter_ns() - started)

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        records = records if isinstance(records, list) else list(records)
        started = perf_counter_ns()
        self.wrapped.restore_batch(records)
        self.metrics.restore.record(perf_counter_ns() - started)
        self.metrics.restored_records += len(records)


class MeteredKeyValueStore(_MeteredStore[KeyValueBytesStore], KeyValueStoreWrapper):
    def __init__(self, wrapped: KeyValueBytesStore) -> None:
        super().__init__(wrapped)
        self._put_all_down = wrapped.put_all

    put_all = _MeteredStore._timed_put_all

    def get_many(self, keys: list[bytes]) -> list[bytes | None]:
        self._get.count += len(keys)  # counted, not timed: a batch is not a point read
        return self.wrapped.get_many(keys)

    def get(self, key: bytes) -> bytes | None:
        stats = self._get
        stats.count += 1
        if stats.count & _MASK:
            return self.wrapped.get(key)
        started = perf_counter_ns()
        value = self.wrapped.get(key)
        stats.sample(perf_counter_ns() - started)
        return value

    def put(self, key: bytes, value: bytes | None) -> None:
        stats = self._put
        stats.count += 1
        if stats.count & _MASK:
            self.wrapped.put(key, value)
            return
        started = perf_counter_ns()
        self.wrapped.put(key, value)
        stats.sample(perf_counter_ns() - started)

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        started = perf_counter_ns()
        existing = self.wrapped.put_if_absent(key, value)
        self.metrics.put.record(perf_counter_ns() - started)
        return existing

    def delete(self, key: bytes) -> bytes | None:
        started = perf_counter_ns()
        existing = self.wrapped.delete(key)
        self.metrics.delete.record(perf_counter_ns() - started)
        return existing

    def range(self, key_from: bytes | None, key_to: bytes | None) -> Iterator[tuple[bytes, bytes]]:
        started = perf_counter_ns()
        return _timed(self.metrics.range, self.wrapped.range(key_from, key_to), started)

    def reverse_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[bytes, bytes]]:
        started = perf_counter_ns()
        return _timed(self.metrics.range, self.wrapped.reverse_range(key_from, key_to), started)

    def prefix_scan(self, prefix: bytes) -> Iterator[tuple[bytes, bytes]]:
        started = perf_counter_ns()
        return _timed(self.metrics.range, self.wrapped.prefix_scan(prefix), started)

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        started = perf_counter_ns()
        return _timed(self.metrics.range, self.wrapped.all(), started)

    def reverse_all(self) -> Iterator[tuple[bytes, bytes]]:
        started = perf_counter_ns()
        return _timed(self.metrics.range, self.wrapped.reverse_all(), started)


class MeteredSegmentedStore(_MeteredStore[SegmentedBytesStore], SegmentedStoreWrapper):
    def __init__(self, wrapped: SegmentedBytesStore) -> None:
        super().__init__(wrapped)
        self._put_all_down = wrapped.put_all_raw

    put_all_raw = _MeteredStore._timed_put_all

    def get_many_raw(self, binaries: list[bytes]) -> list[bytes | None]:
        self._get.count += len(binaries)  # counted, not timed: a batch is not a point read
        return self.wrapped.get_many_raw(binaries)

    def get_raw(self, binary: bytes) -> bytes | None:
        stats = self._get
        stats.count += 1
        if stats.count & _MASK:
            return self.wrapped.get_raw(binary)
        started = perf_counter_ns()
        value = self.wrapped.get_raw(binary)
        stats.sample(perf_counter_ns() - started)
        return value

    def put_raw(self, binary: bytes, value: bytes | None) -> None:
        stats = self._put
        stats.count += 1
        if stats.count & _MASK:
            self.wrapped.put_raw(binary, value)
            return
        started = perf_counter_ns()
        self.wrapped.put_raw(binary, value)
        stats.sample(perf_counter_ns() - started)

    def scan_raw(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> Iterator[tuple[bytes, bytes]]:
        started = perf_counter_ns()
        inner = self.wrapped.scan_raw(key_from, key_to, time_from, time_to)
        return _timed(self.metrics.range, inner, started)
