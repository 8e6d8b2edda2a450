"""Versioned key-value stores as processors and tables use them: changelogged, typed,
and built by a builder like the other stores.

The stack is ``VersionedKeyValueStore(ChangeLoggingVersionedStore(VersionedBytesStore))``,
as Kafka Streams stacks ``MeteredVersionedKeyValueStore`` over
``ChangeLoggingVersionedKeyValueBytesStore`` over ``RocksDBVersionedStore``. A
versioned store has no write cache (Kafka Streams offers none for it): every put
reaches the store, its changelog, and the table's readers.

The changelog record of a put carries the key and the value's bytes (none for a
delete) and, as its timestamp, the version's ``valid_from``, so a restore puts the same
versions back in the same order (``restore_batch`` takes ``(key, value, timestamp)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, NamedTuple, TypeVar

from ._errors import SerializationError
from ._protocols import Serde, StateStoreContext
from ._typed import BytesSerde
from ._versioned import (
    NO_END,
    PUT_RETURN_CODE_NOT_PUT,
    PUT_RETURN_CODE_VALID_TO_UNDEFINED,
    InMemoryVersionedStore,
    RawVersion,
    RocksDBVersionedStore,
    VersionedBytesStore,
)

K = TypeVar("K")
V = TypeVar("V")

CHANGELOG_ADDITIONAL_RETENTION_MS = 86_400_000
"""Kafka Streams' ``windowstore.changelog.additional.retention.ms`` default: a day."""

__all__ = [
    "PUT_RETURN_CODE_NOT_PUT",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "ChangeLoggingVersionedStore",
    "VersionedKeyValueStore",
    "VersionedKeyValueStoreBuilder",
    "VersionedRecord",
]


class VersionedRecord(NamedTuple, Generic[V]):
    """A value with the interval it was valid in (Kafka Streams' ``VersionedRecord``):
    from ``timestamp`` until ``valid_to``, ``None`` while it is the latest."""

    value: V
    timestamp: int
    valid_to: int | None = None


class ChangeLoggingVersionedStore:
    """Writes each put and delete to the store, then to its changelog, with the
    version's timestamp as the changelog record's (Kafka Streams logs every put,
    including one the store dropped as too old: a restore drops it again)."""

    def __init__(self, wrapped: VersionedBytesStore) -> None:
        self.wrapped = wrapped

    @property
    def name(self) -> str:
        return self.wrapped.name

    @property
    def persistent(self) -> bool:
        return self.wrapped.persistent

    @property
    def history_retention(self) -> int:
        return self.wrapped.history_retention

    def init(self, context: StateStoreContext) -> None:
        self.wrapped.init(context)
        self._context = context

    def flush(self) -> None:
        self.wrapped.flush()

    def close(self) -> None:
        self.wrapped.close()

    @property
    def supports_checkpoint(self) -> bool:
        return self.wrapped.supports_checkpoint

    def checkpoint(self, dest: Path) -> None:
        self.wrapped.checkpoint(dest)

    restores_with_timestamps = True

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        self.wrapped.restore_batch(records)

    def get(self, key: bytes) -> RawVersion | None:
        return self.wrapped.get(key)

    def get_as_of(self, key: bytes, as_of: int) -> RawVersion | None:
        return self.wrapped.get_as_of(key, as_of)

    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        code = self.wrapped.put(key, value, timestamp)
        self._context.log_change(self.wrapped.name, key, value, timestamp)
        return code

    def delete(self, key: bytes, timestamp: int) -> RawVersion | None:
        existing = self.wrapped.delete(key, timestamp)
        self._context.log_change(self.wrapped.name, key, None, timestamp)
        return existing


class VersionedKeyValueStore(Generic[K, V]):
    """Objects in, bytes to the versioned stack, :class:`VersionedRecord` out.

    ``get(key)`` is the latest value's record; ``get(key, as_of_timestamp)`` the record
    valid then. ``put`` returns ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` for a new latest
    version, ``PUT_RETURN_CODE_NOT_PUT`` for one dropped as too old, else the new
    version's ``valid_to``; a ``None`` value is a delete.
    """

    versioned = True

    def __init__(self, inner: Any, key_serde: Serde[K], value_serde: Serde[V]) -> None:
        self.inner = inner
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.topic = f"{inner.name}-changelog"

    @property
    def name(self) -> str:
        return self.inner.name  # type: ignore[no-any-return]

    @property
    def persistent(self) -> bool:
        return self.inner.persistent  # type: ignore[no-any-return]

    @property
    def history_retention(self) -> int:
        return self.inner.history_retention  # type: ignore[no-any-return]

    def init(self, context: StateStoreContext) -> None:
        self.topic = f"{context.application_id}-{self.inner.name}-changelog"
        self.inner.init(context)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

    @property
    def supports_checkpoint(self) -> bool:
        return self.inner.supports_checkpoint  # type: ignore[no-any-return]

    def checkpoint(self, dest: Path) -> None:
        self.inner.checkpoint(dest)

    restores_with_timestamps = True

    def restore_batch(self, records: Iterable[tuple[bytes, bytes | None, int]]) -> None:
        self.inner.restore_batch(records)

    def get(self, key: K, as_of_timestamp: int | None = None) -> VersionedRecord[V] | None:
        kb = self._k(key)
        raw = (
            self.inner.get(kb)
            if as_of_timestamp is None
            else self.inner.get_as_of(kb, as_of_timestamp)
        )
        return None if raw is None else self._record(raw)

    def put(self, key: K, value: V | None, timestamp: int) -> int:
        return self.inner.put(self._k(key), self._v(value), timestamp)  # type: ignore[no-any-return]

    def delete(self, key: K, timestamp: int) -> VersionedRecord[V] | None:
        raw = self.inner.delete(self._k(key), timestamp)
        return None if raw is None else self._record(raw)

    def _record(self, raw: RawVersion) -> VersionedRecord[V]:
        assert raw.value is not None
        value = self.value_serde.deserialize(self.topic, raw.value)
        return VersionedRecord(
            value, raw.valid_from, None if raw.valid_to == NO_END else raw.valid_to
        )

    def _k(self, key: K) -> bytes:
        try:
            data = self.key_serde.serialize(self.topic, key)
        except Exception as error:
            raise SerializationError(
                f"key serde failed for store {self.name!r}: {error}"
            ) from error
        if data is None:
            raise SerializationError(f"key {key!r} serialized to None in store {self.name!r}")
        return data

    def _v(self, value: V | None) -> bytes | None:
        if value is None:
            return None
        try:
            return self.value_serde.serialize(self.topic, value)
        except Exception as error:
            raise SerializationError(
                f"value serde failed for store {self.name!r}: {error}"
            ) from error


@dataclass(frozen=True)
class VersionedKeyValueStoreBuilder(Generic[K, V]):
    """Builds versioned stores (``Stores.versioned_key_value_store``): RocksDB unless
    ``persistent`` is off, changelogged unless logging is disabled, never cached."""

    name: str
    history_retention: int
    persistent: bool = True
    logging_enabled: bool = True
    extra_logging_config: dict[str, str] = field(default_factory=dict)
    key_serde: Serde[Any] = field(default_factory=BytesSerde)
    value_serde: Serde[Any] = field(default_factory=BytesSerde)

    @property
    def logging_config(self) -> dict[str, str]:
        """The changelog topic's settings: compacted (the runtime's default for
        changelogs), and, as Kafka Streams sets it for a versioned store, no compaction
        of a record younger than the history retention plus a day, so a restore finds
        every version the store may still answer with."""
        if not self.logging_enabled:
            return {}
        lag = str(self.history_retention + CHANGELOG_ADDITIONAL_RETENTION_MS)
        return {"min.compaction.lag.ms": lag, **self.extra_logging_config}

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a store needs a name")
        if self.history_retention < 0:
            raise ValueError(f"history retention must be >= 0, got {self.history_retention}")

    def with_key_serde(self, serde: Serde[Any]) -> VersionedKeyValueStoreBuilder[Any, V]:
        return dataclasses.replace(self, key_serde=serde)

    def with_value_serde(self, serde: Serde[Any]) -> VersionedKeyValueStoreBuilder[K, Any]:
        return dataclasses.replace(self, value_serde=serde)

    def with_logging_enabled(
        self, config: dict[str, str] | None = None
    ) -> VersionedKeyValueStoreBuilder[K, V]:
        return dataclasses.replace(
            self, logging_enabled=True, extra_logging_config=dict(config or {})
        )

    def with_logging_disabled(self) -> VersionedKeyValueStoreBuilder[K, V]:
        return dataclasses.replace(self, logging_enabled=False, extra_logging_config={})

    def with_caching_enabled(self, max_entries: int = 0) -> VersionedKeyValueStoreBuilder[K, V]:
        """Kept for the builders' common shape: a versioned store has no cache."""
        return self

    def with_caching_disabled(self) -> VersionedKeyValueStoreBuilder[K, V]:
        return self

    def build(self) -> VersionedKeyValueStore[K, V]:
        store: VersionedBytesStore = (
            RocksDBVersionedStore(self.name, self.history_retention)
            if self.persistent
            else InMemoryVersionedStore(self.name, self.history_retention)
        )
        inner: Any = ChangeLoggingVersionedStore(store) if self.logging_enabled else store
        return VersionedKeyValueStore(inner, self.key_serde, self.value_serde)
