"""Changelogging: every write is also sent to ``context.log_change``.

The inner store is written first, then the change is logged, so a failed write is
never logged. Changes carry the task's stream time as their timestamp. Restores
bypass logging: they replay the changelog itself.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._protocols import StateStoreContext
from ._wrapper_base import KeyValueStoreWrapper, SegmentedStoreWrapper


class ChangeLoggingKeyValueStore(KeyValueStoreWrapper):
    _context: StateStoreContext

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)
        self._context = context

    def _log(self, key: bytes, value: bytes | None) -> None:
        context = self._context
        context.log_change(self.wrapped.name, key, value, context.stream_time)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.wrapped.put(key, value)
        self._log(key, value)

    def put_if_absent(self, key: bytes, value: bytes) -> bytes | None:
        existing = self.wrapped.put_if_absent(key, value)
        if existing is None:
            self._log(key, value)
        return existing

    def put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        entries = list(entries)
        self.wrapped.put_all(entries)
        context, name = self._context, self.wrapped.name
        timestamp = context.stream_time
        for key, value in entries:
            context.log_change(name, key, value, timestamp)

    def delete(self, key: bytes) -> bytes | None:
        existing = self.wrapped.delete(key)
        self._log(key, None)
        return existing


class ChangeLoggingSegmentedStore(SegmentedStoreWrapper):
    """Logs binary windowed or session keys, so a restore can put them back as they were."""

    _context: StateStoreContext

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)
        self._context = context

    def put_raw(self, binary: bytes, value: bytes | None) -> None:
        self.wrapped.put_raw(binary, value)
        context = self._context
        context.log_change(self.wrapped.name, binary, value, context.stream_time)

    def put_all_raw(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        entries = list(entries)
        self.wrapped.put_all_raw(entries)
        context, name = self._context, self.wrapped.name
        timestamp = context.stream_time
        for binary, value in entries:
            context.log_change(name, binary, value, timestamp)
