"""Time-segmented bytes stores: the storage under window and session stores.

Binary keys (see ``_key_schema``) are spread over segments by their segment time:
segment ``s`` holds times in ``[s * interval, (s + 1) * interval)`` and is one
backend table (a RocksDB column family). Retention drops whole tables, so expiry
costs nothing per key.

Stream time is the larger of the task's stream time and the greatest segment time
ever written. A time ``t`` is live while ``t > stream_time - retention``; writes of
expired times are dropped and counted in ``expired_writes``, and reads never
return them even before their segment is gone.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from operator import itemgetter
from typing import Protocol

from ._backend_store import BackendStore
from ._errors import StoreConfigError
from ._key_schema import KeySchema
from ._lifecycle import StoreState
from ._protocols import ChangeRecord, CheckpointableStore, FlushListener, StateStoreContext
from ._tables import Backend, Table, iterate

_OPEN = StoreState.OPEN
_PREFIX = "segment-"
MAX_TIME = (1 << 63) - 1
_first = itemgetter(0)


class SegmentedBytesStore(CheckpointableStore, Protocol):
    """The binary-key interface that window and session stores and their wrappers share."""

    @property
    def name(self) -> str: ...

    @property
    def persistent(self) -> bool: ...

    schema: KeySchema

    def init(self, context: StateStoreContext) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def put_raw(self, binary: bytes, value: bytes | None) -> None: ...

    def put_all_raw(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None: ...

    def get_raw(self, binary: bytes) -> bytes | None: ...

    def get_many_raw(self, binaries: list[bytes]) -> list[bytes | None]:
        """``get_raw`` of each binary key, in order; a cache in the stack answers what it
        holds and does not keep what was read below it (see ``get_many``)."""
        ...

    def scan_raw(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> Iterator[tuple[bytes, bytes]]:
        """Entries with key in ``[key_from, key_to]`` and segment time in
        ``[time_from, time_to]``, in binary key order."""
        ...

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None: ...

    def release_through(self, time: int) -> None:
        """The caller will write no entry with segment time at or before ``time`` again
        (its windows closed). A cache in the stack drops its clean copies of them; the
        stored entries stay until retention drops their segment."""
        ...

    def dropped_through(self) -> int:
        """Entries with segment time at or before this are gone: retention dropped
        their segments (-1 until it first does). A cache in the stack checks it after
        writing down, and drops its copies of them."""
        ...

    def set_flush_listener(
        self, listener: FlushListener, send_old_values: bool = False
    ) -> bool: ...


def default_segment_interval(retention: int) -> int:
    """Kafka Streams' choice: half the retention, at least a minute."""
    return max(retention // 2, 60_000)


class SegmentedStore(BackendStore):
    """A ``SegmentedBytesStore`` on a backend, one table per live segment."""

    def __init__(
        self,
        name: str,
        backend: Backend,
        schema: KeySchema,
        retention: int,
        segment_interval: int | None = None,
    ) -> None:
        if retention <= 0:
            raise StoreConfigError(f"retention must be positive, got {retention}")
        interval = (
            default_segment_interval(retention) if segment_interval is None else segment_interval
        )
        if interval <= 0:
            raise StoreConfigError(f"segment interval must be positive, got {interval}")
        super().__init__(name, backend)
        self.schema = schema
        self._time_slice = schema.time_slice
        self.retention = retention
        self.segment_interval = interval
        self._segments: dict[int, Table] = {}
        self._context: StateStoreContext | None = None
        self._observed = -1
        self._min_live_segment = 0
        self._dropped_through = -1
        self.expired_writes = 0

    def _adopt_tables(self) -> None:
        self._segments = {}
        for table_name in self._backend.table_names():
            if table_name.startswith(_PREFIX):
                segment = int(table_name[len(_PREFIX) :])
                self._segments[segment] = self._backend.table(table_name)

    def _release_tables(self) -> None:
        self._segments = {}

    def init(self, context: StateStoreContext) -> None:
        """Open the backend and adopt the segments it already holds, then catch up
        with the task's stream time (which may drop segments out of retention)."""
        super().init(context)
        self._context = context
        self._observed = -1
        self._min_live_segment = 0
        self._advance(context.stream_time)

    # -- time and segments ------------------------------------------------------------

    def _advance(self, time: int) -> None:
        """Move observed stream time forward and drop segments that fell out of retention."""
        if time <= self._observed:
            return
        self._observed = time
        min_live = (time - self.retention + 1) // self.segment_interval
        if min_live > self._min_live_segment:
            self._min_live_segment = min_live
            for segment in [s for s in self._segments if s < min_live]:
                del self._segments[segment]
                self._backend.drop_table(f"{_PREFIX}{segment}")
                self._dropped_through = max(
                    self._dropped_through, (segment + 1) * self.segment_interval - 1
                )

    def min_live_time(self) -> int:
        return max(self._observed - self.retention + 1, 0)

    def _writable(self, time: int) -> Table | None:
        """The segment for a write at ``time`` (created on demand), None when expired."""
        if self._lifecycle.state is not _OPEN:
            self._lifecycle.check_open()
        stream_time = self._context.stream_time  # type: ignore[union-attr]
        self._advance(time if time > stream_time else stream_time)
        if time <= self._observed - self.retention:
            self.expired_writes += 1
            return None
        return self._segment(time // self.segment_interval)

    def _time_span(self, binaries: list[bytes]) -> tuple[int, int]:
        """The earliest and latest segment time of the keys. A batch usually holds a few
        distinct times (one per window), so the time bytes are sliced out and made
        distinct without a Python call per key, and only those are decoded."""
        stamps = {
            int.from_bytes(t, "big") for t in set(map(itemgetter(self._time_slice), binaries))
        }
        return min(stamps), max(stamps)

    def _segment(self, segment: int) -> Table:
        """The table of a live segment, created on first use."""
        table = self._segments.get(segment)
        if table is None:
            table = self._segments[segment] = self._backend.table(f"{_PREFIX}{segment}")
        return table

    # -- reads and writes ---------------------------------------------------------------

    def put_raw(self, binary: bytes, value: bytes | None) -> None:
        table = self._writable(self.schema.segment_time(binary))
        if table is None:
            return
        if value is None:
            table.delete(binary)
        else:
            table.put(binary, value)

    def put_all_raw(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Advance stream time to the batch's latest time once, then write each live
        segment's share of the batch as one write batch."""
        if self._lifecycle.state is not _OPEN:
            self._lifecycle.check_open()
        entries = entries if isinstance(entries, list) else list(entries)
        if not entries:
            return
        keys = list(map(_first, entries))
        earliest, latest = self._time_span(keys)
        stream_time = self._context.stream_time  # type: ignore[union-attr]
        self._advance(latest if latest > stream_time else stream_time)
        horizon = self._observed - self.retention
        interval = self.segment_interval
        if earliest > horizon and earliest // interval == latest // interval:
            # The usual flush: every entry live and in one segment, written as it came.
            self._segment(earliest // interval).write(entries)
            return
        times = map(self.schema.segment_time, keys)
        groups: dict[int, list[tuple[bytes, bytes | None]]] = {}
        for time, entry in zip(times, entries, strict=True):
            if time <= horizon:
                self.expired_writes += 1
                continue
            group = groups.get(time // interval)
            if group is None:
                group = groups[time // interval] = []
            group.append(entry)
        for segment, group in groups.items():
            self._segment(segment).write(group)

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None:
        self.put_all_raw(records)

    def get_raw(self, binary: bytes) -> bytes | None:
        if self._lifecycle.state is not _OPEN:
            self._lifecycle.check_open()
        time = self.schema.segment_time(binary)
        if time <= self._observed - self.retention:
            return None
        table = self._segments.get(time // self.segment_interval)
        return None if table is None else table.get(binary)

    def get_many_raw(self, binaries: list[bytes]) -> list[bytes | None]:
        """One multi-get per segment the keys fall in; expired or missing segments
        answer None."""
        if self._lifecycle.state is not _OPEN:
            self._lifecycle.check_open()
        found: list[bytes | None] = [None] * len(binaries)
        if not binaries:
            return found
        interval = self.segment_interval
        horizon = self._observed - self.retention
        earliest, latest = self._time_span(binaries)
        if earliest > horizon and earliest // interval == latest // interval:
            # The usual batch: every key live and in one segment, read as it came.
            table = self._segments.get(earliest // interval)
            return found if table is None else table.get_many(binaries)
        by_segment: dict[int, list[int]] = {}
        for i, time in enumerate(map(self.schema.segment_time, binaries)):
            if time > horizon:
                by_segment.setdefault(time // interval, []).append(i)
        for segment, positions in by_segment.items():
            table = self._segments.get(segment)
            if table is None:
                continue
            values = table.get_many([binaries[i] for i in positions])
            for i, value in zip(positions, values, strict=True):
                found[i] = value
        return found

    def scan_raw(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> Iterator[tuple[bytes, bytes]]:
        self._lifecycle.check_open()
        time_from = max(time_from, self.min_live_time())
        if time_to < time_from or (
            key_from is not None and key_to is not None and key_from > key_to
        ):
            return iter(())
        first, last = time_from // self.segment_interval, time_to // self.segment_interval
        tables = [self._segments[s] for s in sorted(self._segments) if first <= s <= last]
        lo, hi = self.schema.bounds(key_from, key_to, time_from, time_to)
        matches = self.schema.matches
        streams = [
            (e for e in iterate(t, lo, hi) if matches(e[0], key_from, key_to, time_from, time_to))
            for t in tables
        ]
        if len(streams) == 1:
            return streams[0]
        return heapq.merge(*streams, key=_first)

    def set_flush_listener(self, listener: FlushListener, send_old_values: bool = False) -> bool:
        return False

    def release_through(self, time: int) -> None:
        """Nothing is held here beyond what retention keeps."""

    def dropped_through(self) -> int:
        return self._dropped_through

    def segment_ids(self) -> list[int]:
        """The live segments, oldest first (for tests and diagnostics)."""
        return sorted(self._segments)
