"""Store builders for the processor API.

A builder is an immutable description; each ``with_...`` returns a new builder and
``build()`` returns a fresh, not yet initialised store composed as Kafka Streams
composes it: typed(metered(caching(logging(inner)))). Logging is on and caching off
unless changed. Window stores that retain duplicates are never cached, because the
cache would coalesce the duplicates they exist to keep.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Self, TypeVar, cast

from ._cache import DEFAULT_MAX_ENTRIES
from ._caching import CachingKeyValueStore, CachingSegmentedStore
from ._errors import StoreConfigError
from ._key_schema import KeySchema, SessionKeySchema, WindowKeySchema
from ._kv import InMemoryKeyValueStore, RocksDBKeyValueStore
from ._logging import (
    ChangeLoggingKeyValueStore,
    ChangeLoggingSegmentedStore,
    TimestampedChangeLoggingKeyValueStore,
    TimestampedChangeLoggingSegmentedStore,
)
from ._metered import MeteredKeyValueStore, MeteredSegmentedStore
from ._protocols import KeyValueBytesStore, Serde
from ._rocksdb import RocksDBBackend
from ._segmented import SegmentedBytesStore, SegmentedStore
from ._session import SegmentedSessionStore
from ._tables import Backend, MemoryBackend
from ._typed import (
    BytesSerde,
    KeyValueStore,
    SessionStore,
    TimestampedKeyValueStore,
    TimestampedWindowStore,
    WindowStore,
)
from ._versioned_stack import VersionedKeyValueStoreBuilder
from ._window import SegmentedWindowStore

K = TypeVar("K")
_B = TypeVar("_B")
V = TypeVar("V")
K2 = TypeVar("K2")
V2 = TypeVar("V2")


@dataclass(frozen=True)
class _Builder(Generic[K, V]):
    name: str
    persistent: bool = True
    logging_enabled: bool = True
    logging_config: Mapping[str, str] = field(default_factory=dict)
    caching_enabled: bool = False
    cache_max_entries: int = DEFAULT_MAX_ENTRIES
    key_serde: Serde[Any] = field(default_factory=BytesSerde)
    value_serde: Serde[Any] = field(default_factory=BytesSerde)
    # Values carry the timestamp of what they were made from (``_timestamped``).
    timestamped: bool = False

    def __post_init__(self) -> None:
        if not self.name:
            raise StoreConfigError("a store needs a name")

    def with_caching_enabled(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> Self:
        if max_entries <= 0:
            raise StoreConfigError(f"cache size must be positive, got {max_entries}")
        return dataclasses.replace(self, caching_enabled=True, cache_max_entries=max_entries)

    def with_caching_disabled(self) -> Self:
        return dataclasses.replace(self, caching_enabled=False)

    def with_logging_enabled(self, configs: Mapping[str, str] | None = None) -> Self:
        """``configs`` are topic configs for the changelog topic the runtime creates."""
        return dataclasses.replace(self, logging_enabled=True, logging_config=dict(configs or {}))

    def with_logging_disabled(self) -> Self:
        return dataclasses.replace(self, logging_enabled=False, logging_config={})

    def _stamped_as(self, kind: type[_B]) -> _B:
        """This builder as ``kind``, a timestamped kind of it (see ``with_timestamps``)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return kind(**{**values, "timestamped": True})

    def _with_serdes(
        self, key_serde: Serde[Any] | None = None, value_serde: Serde[Any] | None = None
    ) -> Any:
        """A copy with other serdes, typed by each kind of builder's ``with_*_serde``."""
        return dataclasses.replace(
            self,
            key_serde=self.key_serde if key_serde is None else key_serde,
            value_serde=self.value_serde if value_serde is None else value_serde,
        )

    def _backend(self) -> Backend:
        return RocksDBBackend() if self.persistent else MemoryBackend()


@dataclass(frozen=True)
class KeyValueStoreBuilder(_Builder[K, V]):
    # A serde changes what the built store reads and writes, so the builder comes back
    # typed by it: with_key_serde(Utf8()) makes a KeyValueStoreBuilder[str, V].
    def with_key_serde(self, serde: Serde[K2]) -> KeyValueStoreBuilder[K2, V]:
        return cast("KeyValueStoreBuilder[K2, V]", self._with_serdes(key_serde=serde))

    def with_value_serde(self, serde: Serde[V2]) -> KeyValueStoreBuilder[K, V2]:
        return cast("KeyValueStoreBuilder[K, V2]", self._with_serdes(value_serde=serde))

    def with_timestamps(self) -> TimestampedKeyValueStoreBuilder[K, V]:
        """Keep a timestamp with every value, as Kafka Streams' timestamped stores do:
        the built store's ``get_with_timestamp`` reads it, plain reads leave it out."""
        return self._stamped_as(TimestampedKeyValueStoreBuilder[K, V])

    def build(self) -> KeyValueStore[K, V]:
        inner: KeyValueBytesStore = (
            RocksDBKeyValueStore(self.name) if self.persistent else InMemoryKeyValueStore(self.name)
        )
        if self.logging_enabled:
            changelogging = (
                TimestampedChangeLoggingKeyValueStore
                if self.timestamped
                else ChangeLoggingKeyValueStore
            )
            inner = changelogging(inner)
        if self.caching_enabled:
            inner = CachingKeyValueStore(inner, self.cache_max_entries)
        metered = MeteredKeyValueStore(inner)
        facade = TimestampedKeyValueStore if self.timestamped else KeyValueStore
        return facade(metered, self.key_serde, self.value_serde, metered.metrics)


@dataclass(frozen=True)
class TimestampedKeyValueStoreBuilder(KeyValueStoreBuilder[K, V]):
    """Builds ``TimestampedKeyValueStore``s."""

    def build(self) -> TimestampedKeyValueStore[K, V]:
        return cast("TimestampedKeyValueStore[K, V]", super().build())


@dataclass(frozen=True)
class _SegmentedBuilder(_Builder[K, V]):
    retention: int = 86_400_000
    segment_interval: int | None = None

    def _stack(self, schema: KeySchema, cache: bool) -> MeteredSegmentedStore:
        raw: SegmentedBytesStore = SegmentedStore(
            self.name, self._backend(), schema, self.retention, self.segment_interval
        )
        if self.logging_enabled:
            changelogging = (
                TimestampedChangeLoggingSegmentedStore
                if self.timestamped
                else ChangeLoggingSegmentedStore
            )
            raw = changelogging(raw)
        if cache:
            raw = CachingSegmentedStore(raw, self.cache_max_entries)
        return MeteredSegmentedStore(raw)


@dataclass(frozen=True)
class WindowStoreBuilder(_SegmentedBuilder[K, V]):
    window_size: int = 60_000
    retain_duplicates: bool = False

    # A serde changes what the built store reads and writes, so the builder comes back
    # typed by it: with_key_serde(Utf8()) makes a WindowStoreBuilder[str, V].
    def with_key_serde(self, serde: Serde[K2]) -> WindowStoreBuilder[K2, V]:
        return cast("WindowStoreBuilder[K2, V]", self._with_serdes(key_serde=serde))

    def with_value_serde(self, serde: Serde[V2]) -> WindowStoreBuilder[K, V2]:
        return cast("WindowStoreBuilder[K, V2]", self._with_serdes(value_serde=serde))

    def with_timestamps(self) -> TimestampedWindowStoreBuilder[K, V]:
        """Keep a timestamp with every value (see ``KeyValueStoreBuilder.with_timestamps``)."""
        return self._stamped_as(TimestampedWindowStoreBuilder[K, V])

    def build(self) -> WindowStore[K, V]:
        metered = self._stack(
            WindowKeySchema(), self.caching_enabled and not self.retain_duplicates
        )
        api = SegmentedWindowStore(
            metered, self.retention, self.window_size, self.retain_duplicates
        )
        facade = TimestampedWindowStore if self.timestamped else WindowStore
        return facade(api, self.key_serde, self.value_serde, metered.metrics)


@dataclass(frozen=True)
class TimestampedWindowStoreBuilder(WindowStoreBuilder[K, V]):
    """Builds ``TimestampedWindowStore``s."""

    def build(self) -> TimestampedWindowStore[K, V]:
        return cast("TimestampedWindowStore[K, V]", super().build())


@dataclass(frozen=True)
class SessionStoreBuilder(_SegmentedBuilder[K, V]):
    # A serde changes what the built store reads and writes, so the builder comes back
    # typed by it: with_key_serde(Utf8()) makes a SessionStoreBuilder[str, V].
    def with_key_serde(self, serde: Serde[K2]) -> SessionStoreBuilder[K2, V]:
        return cast("SessionStoreBuilder[K2, V]", self._with_serdes(key_serde=serde))

    def with_value_serde(self, serde: Serde[V2]) -> SessionStoreBuilder[K, V2]:
        return cast("SessionStoreBuilder[K, V2]", self._with_serdes(value_serde=serde))

    def build(self) -> SessionStore[K, V]:
        metered = self._stack(SessionKeySchema(), self.caching_enabled)
        api = SegmentedSessionStore(metered, self.retention)
        return SessionStore(api, self.key_serde, self.value_serde, metered.metrics)


class Stores:
    """Factories for store builders.

    >>> builder = Stores.key_value_store("counts", persistent=False).with_caching_enabled()
    >>> (builder.name, builder.logging_enabled, builder.caching_enabled)
    ('counts', True, True)
    """

    @staticmethod
    def key_value_store(name: str, persistent: bool = True) -> KeyValueStoreBuilder[bytes, bytes]:
        return KeyValueStoreBuilder(name, persistent=persistent)

    @staticmethod
    def versioned_key_value_store(
        name: str, history_retention: int, persistent: bool = True
    ) -> VersionedKeyValueStoreBuilder[bytes, bytes]:
        """Each key's values with their validity intervals, kept ``history_retention`` ms
        (Kafka Streams' ``persistentVersionedKeyValueStore``; see ``_versioned``)."""
        return VersionedKeyValueStoreBuilder(name, history_retention, persistent=persistent)

    @staticmethod
    def window_store(
        name: str,
        retention: int,
        window_size: int,
        retain_duplicates: bool = False,
        persistent: bool = True,
        segment_interval: int | None = None,
    ) -> WindowStoreBuilder[bytes, bytes]:
        """``retention`` and ``window_size`` in milliseconds; retention >= window size."""
        if window_size <= 0 or retention < window_size:
            raise StoreConfigError(
                f"need 0 < window size <= retention, got {window_size} and {retention}"
            )
        return WindowStoreBuilder(
            name,
            persistent=persistent,
            retention=retention,
            segment_interval=segment_interval,
            window_size=window_size,
            retain_duplicates=retain_duplicates,
        )

    @staticmethod
    def session_store(
        name: str, retention: int, persistent: bool = True, segment_interval: int | None = None
    ) -> SessionStoreBuilder[bytes, bytes]:
        if retention <= 0:
            raise StoreConfigError(f"retention must be positive, got {retention}")
        return SessionStoreBuilder(
            name, persistent=persistent, retention=retention, segment_interval=segment_interval
        )
