"""Materialized: how the store behind a table or an aggregation is made.

Defaults follow Kafka Streams: a RocksDB store, changelogged to
``<application_id>-<store>-changelog``, with a write cache for aggregations and
tables so that repeated updates of a key between commits reach downstream once.
A store name left out is generated from the operator, which keeps it stable while the
program does not change; name it to query it and to keep it across program changes.
A key or value with no serde (given here or carried by the stream) is stored with the
self-describing ``Serdes.auto()``.

A ``history_retention`` makes the store versioned (Kafka Streams'
``Stores.persistentVersionedKeyValueStore(name, historyRetention)``): it keeps each
key's values with their validity intervals for that long, and has no write cache. A
table read from a topic (``builder.table``) or a stream (``to_table``) may be kept in
one; other operators refuse it.

>>> m = materialized("counts", store="memory").with_caching_disabled()
>>> (m.name, m.persistent, m.caching, m.logging)
('counts', False, False, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from headrace.state import DEFAULT_MAX_ENTRIES, Stores

from ._errors import TopologyBuildError
from ._serde_roles import for_internal
from ._windows import to_ms

StoreKind = Literal["rocksdb", "memory"]


@dataclass(frozen=True)
class Materialized:
    name: str | None = None
    persistent: bool = True
    key_serde: Any = None
    value_serde: Any = None
    caching: bool = True
    cache_max_entries: int = DEFAULT_MAX_ENTRIES
    logging: bool = True
    logging_config: Mapping[str, str] = field(default_factory=dict)
    retention_ms: int | None = None
    history_retention_ms: int | None = None

    @classmethod
    def as_(cls, name: str) -> Materialized:
        return cls(name)

    def with_key_serde(self, serde: Any) -> Materialized:
        return dataclasses.replace(self, key_serde=serde)

    def with_value_serde(self, serde: Any) -> Materialized:
        return dataclasses.replace(self, value_serde=serde)

    def with_caching_enabled(self, max_entries: int = DEFAULT_MAX_ENTRIES) -> Materialized:
        return dataclasses.replace(self, caching=True, cache_max_entries=max_entries)

    def with_caching_disabled(self) -> Materialized:
        return dataclasses.replace(self, caching=False)

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> Materialized:
        return dataclasses.replace(self, logging=True, logging_config=dict(config or {}))

    def with_logging_disabled(self) -> Materialized:
        return dataclasses.replace(self, logging=False, logging_config={})

    def with_retention(self, retention: int | timedelta) -> Materialized:
        return dataclasses.replace(self, retention_ms=to_ms(retention, "retention"))

    def with_history_retention(self, history_retention: int | timedelta) -> Materialized:
        """Keep the store versioned, with ``history_retention`` of history per key."""
        ms = to_ms(history_retention, "history retention")
        return dataclasses.replace(self, history_retention_ms=ms)

    def in_memory(self) -> Materialized:
        return dataclasses.replace(self, persistent=False)

    # -- used by the operators ----------------------------------------------------------

    def resolve(self, generated_name: str, key_serde: Any, value_serde: Any) -> Materialized:
        """A copy with the name and the serdes the operator falls back to filled in."""
        return dataclasses.replace(
            self,
            name=self.name or generated_name,
            key_serde=self.key_serde if self.key_serde is not None else key_serde,
            value_serde=self.value_serde if self.value_serde is not None else value_serde,
        )

    @property
    def store_name(self) -> str:
        if self.name is None:
            raise TopologyBuildError("the store has no name yet: call resolve() first")
        return self.name

    def _finish(self, builder: Any) -> Any:
        # A side with no serde is stored with the auto serde, as the operators that
        # write the bytes underneath bind it (``_binding``): both must agree.
        builder = builder.with_key_serde(for_internal(self.key_serde))
        builder = builder.with_value_serde(for_internal(self.value_serde))
        builder = (
            builder.with_logging_enabled(self.logging_config)
            if self.logging
            else builder.with_logging_disabled()
        )
        if self.caching:
            builder = builder.with_caching_enabled(self.cache_max_entries)
        return builder

    def key_value_store(self, timestamped: bool = False) -> Any:
        """``timestamped``: each value keeps its timestamp, as an aggregation's must."""
        self._refuse_versioned("a key-value store")
        builder = Stores.key_value_store(self.store_name, persistent=self.persistent)
        return self._finish(builder.with_timestamps() if timestamped else builder)

    def window_store(
        self, window_size: int, default_retention: int, timestamped: bool = False
    ) -> Any:
        self._refuse_versioned("a window store")
        retention = self._retention(default_retention, window_size)
        builder = Stores.window_store(
            self.store_name, retention, window_size, persistent=self.persistent
        )
        return self._finish(builder.with_timestamps() if timestamped else builder)

    def session_store(self, default_retention: int, minimum: int) -> Any:
        self._refuse_versioned("a session store")
        retention = self._retention(default_retention, minimum)
        return self._finish(
            Stores.session_store(self.store_name, retention, persistent=self.persistent)
        )

    def versioned_store(self) -> Any:
        """The versioned store a table keeps its rows' history in (no cache)."""
        assert self.history_retention_ms is not None
        builder = Stores.versioned_key_value_store(
            self.store_name, self.history_retention_ms, persistent=self.persistent
        )
        builder = builder.with_key_serde(for_internal(self.key_serde))
        builder = builder.with_value_serde(for_internal(self.value_serde))
        if self.logging:
            return builder.with_logging_enabled(dict(self.logging_config))
        return builder.with_logging_disabled()

    def _refuse_versioned(self, kind: str) -> None:
        if self.history_retention_ms is not None:
            raise TopologyBuildError(
                f"store {self.name!r} has a history retention, but this operator keeps "
                f"{kind}: a versioned store holds a table read from a topic "
                "(StreamsBuilder.table) or a stream (KStream.to_table)"
            )

    def _retention(self, default: int, minimum: int) -> int:
        if self.retention_ms is None:
            return default
        if self.retention_ms < minimum:
            raise TopologyBuildError(
                f"retention {self.retention_ms} ms of store {self.name!r} is shorter than "
                f"its windows need ({minimum} ms: window size plus grace)"
            )
        return self.retention_ms


def materialized(
    name: str | None = None,
    store: StoreKind = "rocksdb",
    *,
    persistent: bool | None = None,
    key_serde: Any = None,
    value_serde: Any = None,
    caching: bool = True,
    logging: bool = True,
    retention: int | timedelta | None = None,
    history_retention: int | timedelta | None = None,
) -> Materialized:
    """A :class:`Materialized` in one call; ``persistent`` overrides ``store`` when given;
    ``history_retention`` makes the store versioned."""
    if store not in ("rocksdb", "memory"):
        raise TopologyBuildError(f"store must be 'rocksdb' or 'memory', got {store!r}")
    return Materialized(
        name=name,
        persistent=(store == "rocksdb") if persistent is None else persistent,
        key_serde=key_serde,
        value_serde=value_serde,
        caching=caching,
        logging=logging,
        retention_ms=None if retention is None else to_ms(retention, "retention"),
        history_retention_ms=(
            None if history_retention is None else to_ms(history_retention, "history retention")
        ),
    )
