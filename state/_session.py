"""Session bytes stores: values per (key, session start, session end)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from ._key_schema import SessionKeySchema
from ._protocols import ChangeRecord, CheckpointableStore, FlushListener, StateStore
from ._rocksdb import RocksDBBackend
from ._segmented import MAX_TIME, SegmentedStore
from ._segmented_facade import SegmentedFacade
from ._tables import MemoryBackend
from ._windowed import Window, Windowed

_encode = SessionKeySchema.encode


class SessionBytesStore(StateStore, CheckpointableStore, Protocol):
    """Sessions per key; a session's window is ``[start, end]`` with both ends inclusive.

    Retention follows session ends. Results come in binary key order: by key, then
    session end, then start.
    """

    def put(self, session: Windowed[bytes], value: bytes | None) -> None: ...

    def remove(self, session: Windowed[bytes]) -> None: ...

    def fetch_session(self, key: bytes, start: int, end: int) -> bytes | None: ...

    def find_sessions(
        self, key: bytes, earliest_end: int, latest_start: int
    ) -> Iterator[tuple[Windowed[bytes], bytes]]:
        """Sessions of ``key`` with ``end >= earliest_end`` and ``start <= latest_start``:
        those a record at ``t`` merges into when called with ``t - gap, t + gap``."""
        ...

    def find_sessions_range(
        self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int
    ) -> Iterator[tuple[Windowed[bytes], bytes]]: ...

    def fetch(self, key: bytes) -> Iterator[tuple[Windowed[bytes], bytes]]: ...

    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[Windowed[bytes], bytes]]: ...

    def restore_batch(self, records: Iterable[ChangeRecord]) -> None: ...

    def set_flush_listener(
        self, listener: FlushListener, send_old_values: bool = False
    ) -> bool: ...


class SegmentedSessionStore(SegmentedFacade):
    """A ``SessionBytesStore`` over a ``SegmentedBytesStore`` stack."""

    def put(self, session: Windowed[bytes], value: bytes | None) -> None:
        window = session.window
        if window.end > self._observed:
            self._observed = window.end
        self.raw.put_raw(_encode(session.key, window.start, window.end), value)

    def remove(self, session: Windowed[bytes]) -> None:
        self.put(session, None)

    def fetch_session(self, key: bytes, start: int, end: int) -> bytes | None:
        if end < self._min_live():
            return None
        return self.raw.get_raw(_encode(key, start, end))

    def find_sessions(
        self, key: bytes, earliest_end: int, latest_start: int
    ) -> Iterator[tuple[Windowed[bytes], bytes]]:
        return self.find_sessions_range(key, key, earliest_end, latest_start)

    def find_sessions_range(
        self, key_from: bytes | None, key_to: bytes | None, earliest_end: int, latest_start: int
    ) -> Iterator[tuple[Windowed[bytes], bytes]]:
        earliest_end = max(earliest_end, self._min_live())
        for binary, value in self.raw.scan_raw(key_from, key_to, earliest_end, MAX_TIME):
            start = int.from_bytes(binary[-8:], "big")
            if start <= latest_start:
                end = int.from_bytes(binary[-16:-8], "big")
                yield Windowed(binary[:-16], Window(start, end)), value

    def fetch(self, key: bytes) -> Iterator[tuple[Windowed[bytes], bytes]]:
        return self.find_sessions_range(key, key, 0, MAX_TIME)

    def fetch_range(
        self, key_from: bytes | None, key_to: bytes | None
    ) -> Iterator[tuple[Windowed[bytes], bytes]]:
        return self.find_sessions_range(key_from, key_to, 0, MAX_TIME)


class InMemorySessionStore(SegmentedSessionStore):
    def __init__(self, name: str, retention: int, segment_interval: int | None = None) -> None:
        super().__init__(
            SegmentedStore(name, MemoryBackend(), SessionKeySchema(), retention, segment_interval),
            retention,
        )


class RocksDBSessionStore(SegmentedSessionStore):
    def __init__(self, name: str, retention: int, segment_interval: int | None = None) -> None:
        super().__init__(
            SegmentedStore(name, RocksDBBackend(), SessionKeySchema(), retention, segment_interval),
            retention,
        )
