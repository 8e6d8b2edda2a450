"""Changelogging: every write is also sent to ``context.log_change``.

The inner store is written first, then the change is logged, so a failed write is
never logged. A plain store's changes carry the task's stream time as their
timestamp. A timestamped store's changes (``_timestamped``) are logged as Kafka Streams'
``ChangeLoggingTimestamped*BytesStore`` logs them: the value's own bytes, with the
value's timestamp as the record's, so its changelog has a plain store's layout (a
delete, having no timestamp, carries stream time). Restores bypass logging: they replay
the changelog itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ._protocols import KeyValueBytesStore, StateStoreContext
from ._segmented import SegmentedBytesStore
from ._timestamped import TIMESTAMP_SIZE
from ._wrapper_base import KeyValueStoreWrapper, SegmentedStoreWrapper, StoreWrapper, W


class _LoggingStore(StoreWrapper[W]):
    """The context and the logged batch write both logging wrappers share."""

    _context: StateStoreContext
    # The wrapped store's batch write, bound once by the subclass.
    _put_all_down: Callable[[Iterable[tuple[bytes, bytes | None]]], None]
    # The context's bulk log call, when it has one (a task's context does): a cache
    # flush logs thousands of changes at once.
    _log_changes: Callable[[str, list[tuple[bytes, bytes | None]], int], None] | None = None

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)
        self._context = context
        self._log_changes = getattr(context, "log_changes", None)

    def _logged_put_all(self, entries: Iterable[tuple[bytes, bytes | None]]) -> None:
        entries = entries if isinstance(entries, list) else list(entries)
        self._put_all_down(entries)
        self._log_all(entries)

    def _log_all(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        context, name = self._context, self.wrapped.name
        timestamp = context.stream_time
        log_changes = self._log_changes
        if log_changes is not None:
            log_changes(name, entries, timestamp)
            return
        for key, value in entries:
            context.log_change(name, key, value, timestamp)


class _TimestampedLogging(_LoggingStore[W]):
    """Logs a timestamped store's values without their timestamps, each with its own
    as the record's timestamp."""

    def _log_stamped(self, key: bytes, value: bytes | None) -> None:
        context = self._context
        if value is None:
            context.log_change(self.wrapped.name, key, None, context.stream_time)
        else:
            context.log_change(
                self.wrapped.name,
                key,
                value[TIMESTAMP_SIZE:],
                int.from_bytes(value[:TIMESTAMP_SIZE], "big", signed=True),
            )

    def _log_all(self, entries: list[tuple[bytes, bytes | None]]) -> None:
        context, name = self._context, self.wrapped.name
        log, deleted_at, from_bytes = context.log_change, context.stream_time, int.from_bytes
        for key, value in entries:
            if value is None:
                log(name, key, None, deleted_at)
            else:
                log(
                    name,
                    key,
                    value[TIMESTAMP_SIZE:],
                    from_bytes(value[:TIMESTAMP_SIZE], "big", signed=True),
                )


class ChangeLoggingKeyValueStore(_LoggingStore[KeyValueBytesStore], KeyValueStoreWrapper):
    def __init__(self, wrapped: KeyValueBytesStore) -> None:
        super().__init__(wrapped)
        self._put_all_down = wrapped.put_all

    put_all = _LoggingStore._logged_put_all

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

    def delete(self, key: bytes) -> bytes | None:
        existing = self.wrapped.delete(key)
        self._log(key, None)
        return existing


class TimestampedChangeLoggingKeyValueStore(
    _TimestampedLogging[KeyValueBytesStore], ChangeLoggingKeyValueStore
):
    """A timestamped key-value store's changelogging (Kafka Streams'
    ``ChangeLoggingTimestampedKeyValueBytesStore``)."""

    _log = _TimestampedLogging._log_stamped


class ChangeLoggingSegmentedStore(_LoggingStore[SegmentedBytesStore], SegmentedStoreWrapper):
    """Logs binary windowed or session keys, so a restore can put them back as they were."""

    def __init__(self, wrapped: SegmentedBytesStore) -> None:
        super().__init__(wrapped)
        self._put_all_down = wrapped.put_all_raw

    put_all_raw = _LoggingStore._logged_put_all

    def put_raw(self, binary: bytes, value: bytes | None) -> None:
        # Written out rather than through a shared helper: this runs for every record.
        self.wrapped.put_raw(binary, value)
        context = self._context
        context.log_change(self.wrapped.name, binary, value, context.stream_time)


class TimestampedChangeLoggingSegmentedStore(
    _TimestampedLogging[SegmentedBytesStore], ChangeLoggingSegmentedStore
):
    """A timestamped window store's changelogging (Kafka Streams'
    ``ChangeLoggingTimestampedWindowBytesStore``)."""

    def put_raw(self, binary: bytes, value: bytes | None) -> None:
        self.wrapped.put_raw(binary, value)
        self._log_stamped(binary, value)
