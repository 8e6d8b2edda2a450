"""Window bytes stores: values per (key, window start) with retention."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from ._errors import StoreConfigError
from ._key_schema import WindowKeySchema
from ._protocols import ChangeRecord, CheckpointableStore, FlushListener, StateStore
from ._rocksdb import RocksDBBackend
from ._segmented import MAX_TIME, SegmentedBytesStore, SegmentedStore
from ._segmented_facade import SegmentedFacade
from ._tables import Backend, MemoryBackend
from ._windowed import Window, Windowed

_NO_SEQ = b"\x00\x00\x00\x00"


class WindowBytesStore(StateStore, CheckpointableStore, Protocol):
    """Values per key and window start.

    Single-key fetches come back in window-start order; key-range fetches in binary
    key order (by key, then window start), merged across segments.
    """

    window_size: int
    retain_duplicates: bool

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None: ...

    def get(self, key: bytes, window_start: int) -> bytes | None: ...

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[tuple[int, bytes]]: ...

    def fetch_key_range(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> Iterator[tuple[Windowed[bytes], bytes]]: ...

    def fetch_all(
        self, time_from: int, time_to: int
    ) -> Iterator[tuple[Windowed[bytes], bytes]]: ...

    def all(self) -> Iterator[tuple[Windowed[bytes], bytes]]: ...

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None: ...

    def set_flush_listener(
        self, listener: FlushListener, send_old_values: bool = False
    ) -> bool: ...


class SegmentedWindowStore(SegmentedFacade):
    """A ``WindowBytesStore`` over a ``SegmentedBytesStore`` stack.

    With ``retain_duplicates`` every put is kept under its own sequence number (for
    stream-stream joins), ``None`` puts are ignored and ``get`` returns the oldest.
    """

    def __init__(
        self, raw: SegmentedBytesStore, retention: int, window_size: int, retain_duplicates: bool
    ) -> None:
        if window_size <= 0:
            raise StoreConfigError(f"window size must be positive, got {window_size}")
        if retention < window_size:
            raise StoreConfigError(
                f"retention {retention} ms is shorter than the window size {window_size} ms"
            )
        super().__init__(raw, retention)
        self.window_size = window_size
        self.retain_duplicates = retain_duplicates
        self._seqnum = 0

    def put(self, key: bytes, value: bytes | None, window_start: int) -> None:
        if window_start > self._observed:
            self._observed = window_start
        if self.retain_duplicates:
            if value is None:
                return
            self._seqnum = (self._seqnum + 1) & 0xFFFFFFFF
            self.raw.put_raw(WindowKeySchema.encode(key, window_start, self._seqnum), value)
        else:
            self.raw.put_raw(key + window_start.to_bytes(8, "big") + _NO_SEQ, value)

    def get(self, key: bytes, window_start: int) -> bytes | None:
        # _min_live() inlined: this is the read of every windowed aggregation update.
        context = self._context
        stream_time = (
            self._observed if context is None else max(self._observed, context.stream_time)
        )
        if window_start <= stream_time - self.retention:
            return None
        if self.retain_duplicates:
            for _, value in self.fetch(key, window_start, window_start):
                return value
            return None
        return self.raw.get_raw(key + window_start.to_bytes(8, "big") + _NO_SEQ)

    def fetch(self, key: bytes, time_from: int, time_to: int) -> Iterator[tuple[int, bytes]]:
        time_from = max(time_from, self._min_live())
        for binary, value in self.raw.scan_raw(key, key, time_from, time_to):
            yield int.from_bytes(binary[-12:-4], "big"), value

    def fetch_key_range(
        self, key_from: bytes | None, key_to: bytes | None, time_from: int, time_to: int
    ) -> Iterator[tuple[Windowed[bytes], bytes]]:
        time_from = max(time_from, self._min_live())
        size = self.window_size
        for binary, value in self.raw.scan_raw(key_from, key_to, time_from, time_to):
            start = int.from_bytes(binary[-12:-4], "big")
            yield Windowed(binary[:-12], Window(start, start + size)), value

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Windowed[bytes], bytes]]:
        return self.fetch_key_range(None, None, time_from, time_to)

    def all(self) -> Iterator[tuple[Windowed[bytes], bytes]]:
        return self.fetch_key_range(None, None, 0, MAX_TIME)


def _segmented(
    name: str, backend: Backend, retention: int, segment_interval: int | None
) -> SegmentedStore:
    return SegmentedStore(name, backend, WindowKeySchema(), retention, segment_interval)


class InMemoryWindowStore(SegmentedWindowStore):
    def __init__(
        self,
        name: str,
        retention: int,
        window_size: int,
        retain_duplicates: bool = False,
        segment_interval: int | None = None,
    ) -> None:
        raw = _segmented(name, MemoryBackend(), retention, segment_interval)
        super().__init__(raw, retention, window_size, retain_duplicates)


class RocksDBWindowStore(SegmentedWindowStore):
    def __init__(
        self,
        name: str,
        retention: int,
        window_size: int,
        retain_duplicates: bool = False,
        segment_interval: int | None = None,
    ) -> None:
        raw = _segmented(name, RocksDBBackend(), retention, segment_interval)
        super().__init__(raw, retention, window_size, retain_duplicates)
